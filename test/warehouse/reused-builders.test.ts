import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KIND, loadRecord } from '../../src/load/documents.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { orderDoc, tempDir } from './helpers.js';

/**
 * A batch built on the loader's thread (a sync's group of pages) shares its normalizer's buffers, which the
 * next batch reuses. The merge keeps only the winning rows of a unit table (TableRows.keepUnits), moving
 * them down: the rows past them must not keep their flags of present values for the next batch, whose rows
 * that lack those values would otherwise read the old ones back.
 */
describe('a batch built after one whose rows were filtered', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  before(async () => {
    const made = await tempDir();
    cleanup = made.cleanup;
    warehouse = await openWarehouse(path.join(made.dir, 'w.duckdb'));
  });
  after(async () => {
    await warehouse.close();
    await cleanup();
  });

  async function commit(orders: { n: number; user: Record<string, unknown>; updatedAt: string }[]) {
    const batch = warehouse.newBatch({ store: 'shop', runId: 'r', syncedAtMs: Date.now() });
    for (const { n, user, updatedAt } of orders) {
      const record = { ...orderDoc(n, updatedAt), user };
      const text = JSON.stringify(record);
      loadRecord(batch, batch.land('orders', 'order', KIND.record, null, text), text, record);
    }
    await warehouse.commit(batch);
  }

  it('stores NULL where the new rows lack a value, not the filtered rows’ values', async () => {
    const full = { first_name: 'Ada', accepts_marketing: true, language: 'en' };
    // Customer 1 twice: the merge keeps the later sighting only, moving it down one row.
    await commit([
      { n: 1, user: { id: 1, email: 'a@x', ...full }, updatedAt: '2024-05-01T00:00:00Z' },
      { n: 2, user: { id: 1, email: 'b@x', ...full }, updatedAt: '2024-05-02T00:00:00Z' },
    ]);
    await commit([
      { n: 3, user: { id: 2, email: 'c@x' }, updatedAt: '2024-05-03T00:00:00Z' },
      { n: 4, user: { id: 3, email: 'd@x' }, updatedAt: '2024-05-03T00:00:00Z' },
    ]);
    const reader = await warehouse.connection.runAndReadAll(
      'SELECT id::INTEGER, first_name, accepts_marketing, language FROM customers ORDER BY id',
    );
    assert.deepEqual(reader.getRowsJS(), [
      [1, 'Ada', true, 'en'],
      [2, null, null, null],
      [3, null, null, null],
    ]);
  });
});
