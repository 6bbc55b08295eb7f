import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { emptyStreamState } from '../../src/contracts.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { ingestDocuments, productRecord, tempWarehouse } from './helpers.js';

/**
 * `<table>_history` as loads write it (src/load/history.ts): versions from full scans of locations (created,
 * deleted, reappeared, changed, and none for an unchanged record), and from ingested subscription event
 * documents, dated by the event's own timestamp.
 */

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('observed-version history', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  /** The warehouse's temp folder, where the ingested documents are written too. */
  let docs: string;
  const passes: string[] = [];

  const versions = async (table: string, columns: string) => {
    const reader = await warehouse.connection.runAndReadAll(
      `SELECT ${columns} FROM ${table}_history ORDER BY id, _version`,
    );
    return reader.getRowsJS();
  };

  async function fullScan(records: Record<string, unknown>[], rejectedIds: number[] = []): Promise<string> {
    await pause();
    const startedAt = new Date().toISOString();
    const runId = `pass-${passes.length + 1}`;
    passes.push(startedAt);
    await pause();
    await warehouse.commitPage({
      store: 'shop',
      stream: 'locations',
      entity: 'location',
      runId,
      records,
      rejections: rejectedIds.map((id) => ({
        stream: 'locations',
        key: String(id),
        reason: 'refused by the test',
        raw: { id },
      })),
      state: { ...emptyStreamState(), lastFullScanAt: startedAt },
      completedFullScan: { passStartedAt: startedAt },
    });
    return runId;
  }

  before(async () => {
    ({ warehouse, dir: docs, cleanup } = await tempWarehouse());
  });
  after(async () => {
    await cleanup();
  });

  it('full scans: created, deleted at the scan start, reappeared, changed, and nothing for the unchanged', async () => {
    const leeds = { id: 1, name: 'Leeds' };
    const berlin = { id: 2, name: 'Berlin' };
    await fullScan([leeds, berlin]);
    await fullScan([leeds]);
    await fullScan([leeds, berlin]);
    await fullScan([leeds, { ...berlin, name: 'Berlin Mitte' }]);
    await fullScan([leeds, { ...berlin, name: 'Berlin Mitte' }]);
    const rows = await versions(
      'locations',
      "id, name, _change, _observed_run_id, strftime(_valid_from, '%Y-%m-%dT%H:%M:%S.%g') AS from_ms, _valid_to IS NULL AS current",
    );
    const changes = rows.map(([id, name, change, run, , current]) => [id, name, change, run, current]);
    assert.deepEqual(changes, [
      [1n, 'Leeds', 'created', 'pass-1', true],
      [2n, 'Berlin', 'created', 'pass-1', false],
      [2n, 'Berlin', 'deleted', 'pass-2', false],
      [2n, 'Berlin', 'reappeared', 'pass-3', false],
      [2n, 'Berlin Mitte', 'changed', 'pass-4', true],
    ]);
    // The deletion is dated by the scan that no longer returned it: its start.
    assert.equal(`${rows[2]![4]}Z`, passes[1]);
    // Each closed version ends where the next begins.
    const chain = await warehouse.connection.runAndReadAll(
      'SELECT count(*) FROM locations_history h JOIN locations_history n ON n.id = h.id AND n._valid_from = h._valid_to',
    );
    assert.equal(chain.getRowsJS()[0]![0], 3n);
  });

  it('a deleted record the next scan rejects (so counts as seen) reappears, as its row is live again', async () => {
    const leeds = { id: 1, name: 'Leeds' };
    await fullScan([leeds]);
    await fullScan([leeds], [2]);
    const live = await warehouse.connection.runAndReadAll(
      'SELECT _deleted_at IS NULL FROM locations WHERE id = 2',
    );
    assert.deepEqual(live.getRowsJS(), [[true]]);
    const rows = await versions('locations', '_version, _change, _observed_run_id, _valid_to IS NULL');
    assert.deepEqual(rows.slice(-2), [
      [5n, 'deleted', 'pass-6', false],
      [6n, 'reappeared', 'pass-7', true],
    ]);
  });

  it('a version time the API gives: an older document that loses to the stored row adds no version', async () => {
    const fo = (event: string, status: string, updated: string) => ({
      event_version: 1,
      event_id: event,
      event_type: 'fulfillment_order.updated',
      timestamp: '2026-04-10T00:00:00Z',
      data: { id: 5, status, updated_at: updated },
    });
    await ingestDocuments(warehouse, docs, 'fo1.ndjson', [fo('f1', 'open', '2026-04-02T00:00:00Z')]);
    await ingestDocuments(warehouse, docs, 'fo2.ndjson', [fo('f2', 'closed', '2026-04-01T00:00:00Z')]);
    await ingestDocuments(warehouse, docs, 'fo3.ndjson', [fo('f3', 'closed', '2026-04-03T00:00:00Z')]);
    const rows = await versions(
      'fulfillment_orders',
      "_version, status, _change, strftime(_valid_from, '%Y-%m-%d'), strftime(_valid_to, '%Y-%m-%d')",
    );
    // Dated by updated_at (the API's time), not by the envelope's timestamp.
    assert.deepEqual(rows, [
      [1n, 'open', 'created', '2026-04-02', '2026-04-03'],
      [2n, 'closed', 'changed', '2026-04-03', null],
    ]);
  });

  it('ingested event documents are dated by their timestamp; a redelivery adds nothing; versions never overlap', async () => {
    const subscription = (status: string) => ({ id: 77, status, currency: 'EUR', total: '9.990' });
    const event = (id: string, timestamp: string, status: string) => ({
      event_version: 1,
      event_id: id,
      event_type: 'subscription.updated',
      timestamp,
      data: subscription(status),
    });
    await ingestDocuments(warehouse, docs, 'a.ndjson', [event('e1', '2026-03-01T10:00:00Z', 'active')]);
    await ingestDocuments(warehouse, docs, 'b.ndjson', [event('e2', '2026-03-05T08:30:00Z', 'canceled')]);
    // The same content again, by another event: only bookkeeping columns differ.
    await ingestDocuments(warehouse, docs, 'c.ndjson', [event('e3', '2026-03-06T00:00:00Z', 'canceled')]);
    // An older event arriving last still wins (the table has no version: the last received wins), and its
    // version starts where the current one did rather than before it.
    await ingestDocuments(warehouse, docs, 'd.ndjson', [event('e4', '2026-02-01T00:00:00Z', 'active')]);
    const rows = await versions(
      'subscriptions',
      "id, _version, status, _change, strftime(_valid_from, '%Y-%m-%dT%H:%M:%S') AS f, strftime(_valid_to, '%Y-%m-%dT%H:%M:%S') AS t, _event_id",
    );
    assert.deepEqual(rows, [
      [77n, 1n, 'active', 'created', '2026-03-01T10:00:00', '2026-03-05T08:30:00', 'e1'],
      [77n, 2n, 'canceled', 'changed', '2026-03-05T08:30:00', '2026-03-05T08:30:00', 'e2'],
      [77n, 3n, 'active', 'changed', '2026-03-05T08:30:00', null, 'e4'],
    ]);
  });
});

describe('history versions written before _content_hash', () => {
  it('get it on open from their own columns; an unchanged record then adds no version', async () => {
    const { warehouse: first, dir, file, cleanup } = await tempWarehouse();
    try {
      const event = (id: string) => ({
        event_version: 1,
        event_id: id,
        event_type: 'subscription.updated',
        timestamp: '2026-03-01T10:00:00Z',
        data: { id: 5, status: 'active', currency: 'EUR', total: '9.990' },
      });
      await ingestDocuments(first, dir, 'a.ndjson', [event('e1')]);
      const hashes = async (w: Warehouse) =>
        (await w.connection.runAndReadAll('SELECT _content_hash FROM subscriptions_history')).getRows();
      const written = await hashes(first);
      assert.equal(written.length, 1);
      assert.match(String(written[0]![0]), /^[0-9a-f]{32}$/);
      await first.close();
      // An older warehouse: no such column, and a schema older than the code's (so the next open migrates it).
      const instance = await DuckDBInstance.create(file);
      const connection = await instance.connect();
      await connection.run(
        'ALTER TABLE subscriptions_history DROP COLUMN _content_hash; DELETE FROM _schema',
      );
      connection.closeSync();
      instance.closeSync();
      const again = await openWarehouse(file);
      try {
        assert.deepEqual(await hashes(again), written);
        // The same content by another event: bookkeeping only, so no version.
        await ingestDocuments(again, dir, 'b.ndjson', [event('e2')]);
        assert.equal((await hashes(again)).length, 1);
      } finally {
        await again.close();
      }
    } finally {
      await cleanup();
    }
  });
});

describe('history of the rows a product owns, through full scans', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  let passes = 0;

  async function fullScan(records: Record<string, unknown>[], rejectedIds: number[] = []) {
    passes++;
    await pause();
    const startedAt = new Date().toISOString();
    await pause();
    await warehouse.commitPage({
      store: 'shop',
      stream: 'products',
      entity: 'product',
      runId: `pass-${passes}`,
      records,
      rejections: rejectedIds.map((id) => ({
        stream: 'products',
        key: String(id),
        reason: 'ranking: expected number, received string',
        raw: { id },
      })),
      state: emptyStreamState(),
      completedFullScan: { passStartedAt: startedAt },
    });
  }

  const current = async (table: string, key: string) => {
    const reader = await warehouse.connection.runAndReadAll(
      `SELECT ${key}, _version, _change FROM ${table}_history WHERE _valid_to IS NULL ORDER BY ALL`,
    );
    return reader.getRowsJS();
  };

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
  });
  after(async () => {
    await cleanup();
  });

  it('a product deleted, then rejected by a scan (seen), reappears with its variants, prices and stock', async () => {
    await fullScan([productRecord(1), productRecord(2)]);
    await fullScan([productRecord(1)]);
    assert.deepEqual(await current('products', 'id'), [
      [1n, 1n, 'created'],
      [2n, 2n, 'deleted'],
    ]);
    assert.deepEqual(await current('variants', 'id'), [
      [10n, 1n, 'created'],
      [20n, 2n, 'deleted'],
    ]);
    // Product 2 is received again, but refused: it counts as seen, so its rows are live again.
    await fullScan([productRecord(1)], [2]);
    const live = await warehouse.connection.runAndReadAll(
      'SELECT (SELECT _deleted_at IS NULL FROM products WHERE id = 2), (SELECT _deleted_at IS NULL FROM variants WHERE id = 20)',
    );
    assert.deepEqual(live.getRowsJS(), [[true, true]]);
    assert.deepEqual(await current('products', 'id'), [
      [1n, 1n, 'created'],
      [2n, 3n, 'reappeared'],
    ]);
    // Their current versions say so too: the owned rows are versioned with their product.
    assert.deepEqual(await current('variants', 'id'), [
      [10n, 1n, 'created'],
      [20n, 3n, 'reappeared'],
    ]);
    assert.deepEqual(await current('variant_stockrecords', 'id'), [
      [100n, 1n, 'created'],
      [200n, 3n, 'reappeared'],
    ]);
  });
});
