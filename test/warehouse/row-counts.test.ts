import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Warehouse } from '../../src/load/index.js';
import { count, ingestDocuments, orderDoc, storedRows, tempWarehouse } from './helpers.js';

/**
 * The rows a load reports (the ingest and sync summaries, rows/s) are the rows it stored, inserted or
 * replacing stored ones: a customer repeated in a batch's orders is one row, and a document older than the
 * stored one stores none.
 */

describe('row counts: rows stored, not rows read', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  after(async () => cleanup());

  it('a fresh load reports what count(*) finds: 40 orders of 7 customers are 7 customer rows', async () => {
    const docs = Array.from({ length: 40 }, (_, n) => orderDoc(n));
    const summary = await ingestDocuments(warehouse, dir, 'fresh.ndjson', docs);
    assert.equal(await count(warehouse.connection, 'customers'), 7);
    assert.equal(await count(warehouse.connection, 'orders'), 40);
    const stored = await storedRows(warehouse.connection);
    assert.equal(summary.rows, stored);
    // Each order's own rows (order, two lines, their tax lines) are more than 7 customers, so a count of one
    // customer per order would be 33 rows too many.
    assert.ok(stored > 40 * 3, `stored ${stored}`);
  });

  it('documents older than the stored ones store nothing, and report no rows', async () => {
    const before = await storedRows(warehouse.connection);
    const older = Array.from({ length: 5 }, (_, n) => orderDoc(n, '2024-04-01T10:00:00Z'));
    const summary = await ingestDocuments(warehouse, dir, 'older.ndjson', older);
    assert.equal(summary.records, 5);
    assert.equal(await storedRows(warehouse.connection), before);
    assert.equal(summary.rows, 0);
  });
});
