import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { type EntityKind, emptyStreamState, type PageCommit } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { count, FIXTURES, snapshot, tableRows, tempWarehouse } from './helpers.js';

/** `store-sync rebuild` re-derives every table from the raw landing alone, exactly as it was. */

describe('rebuild', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let original: Record<string, string[]>;
  let rejections: unknown[];

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    const docs = ['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) => path.join(FIXTURES, f));
    const bad = path.join(dir, 'bad.ndjson');
    await writeFile(
      bad,
      '{"number":"B-1","lines":[{"id":1,"price_incl_tax":"1.2345"}],"date_placed":"2024-01-01T00:00:00Z"}\nnot json\n',
    );
    await ingestPaths(warehouse, [...docs, bad], { store: 'shop', runId: 'ingest', logger: silentLogger });
    const records = JSON.parse(await readFile(path.join(FIXTURES, 'pages', 'records.json'), 'utf8'));
    const page = (
      stream: string,
      entity: EntityKind,
      recs: unknown[],
      extra: Partial<PageCommit> = {},
    ): PageCommit => ({
      store: 'shop',
      stream,
      entity,
      runId: `sync-${stream}`,
      records: recs as Record<string, unknown>[],
      rejections: [],
      state: emptyStreamState(),
      ...extra,
    });
    for (const stream of ['subscriptions', 'locations', 'metadata_definitions']) {
      const entity =
        stream === 'metadata_definitions' ? 'metadata_definition' : (stream.slice(0, -1) as EntityKind);
      await warehouse.commitPage(page(stream, entity, records[stream]));
    }
    const scan = async (ids: number[]) => {
      const passStartedAt = new Date().toISOString();
      await new Promise((resolve) => setTimeout(resolve, 5));
      const products = ids.map((id) => ({ ...records.products[0], id }));
      await warehouse.commitPage(
        page('products', 'product', products, { completedFullScan: { passStartedAt } }),
      );
      await new Promise((resolve) => setTimeout(resolve, 5));
    };
    await scan([301, 302]);
    await scan([301]);
    await warehouse.commitPage(
      page('fulfillment_orders', 'fulfillment_order', [], {
        rejections: [
          { stream: 'fulfillment_orders', key: '5', reason: 'id: expected an integer id', raw: { id: 'x' } },
        ],
      }),
    );
    original = await snapshot(warehouse.connection, []);
    rejections = await tableRows(warehouse.connection, '_rejected_records', { exclude: [] });
    assert.equal(rejections.length, 3, 'one normalize, one parse and one extract rejection');
    assert.equal(await count(warehouse.connection, 'products', '_deleted_at IS NOT NULL'), 1);
  });
  after(() => cleanup());

  it('reproduces every table, _synced_at, _run_id and _deleted_at included', async () => {
    const summary = await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.ok(summary.blocks >= 6);
    assert.deepEqual(await snapshot(warehouse.connection, []), original);
  });

  it('reproduces the rejections, keeping those from API validation', async () => {
    assert.deepEqual(await tableRows(warehouse.connection, '_rejected_records', { exclude: [] }), rejections);
  });

  it('stopped by its signal, rolls back: the tables and rejections are as they were', async () => {
    // Rows lost from a table, which a rebuild that went through would restore.
    await warehouse.connection.run('DELETE FROM customers');
    const before = await snapshot(warehouse.connection, []);
    assert.equal(before.customers?.length, 0);
    const stop = new AbortController();
    // Stopped once the data tables are dropped and recreated inside its transaction.
    const logger = createLogger({
      format: 'json',
      write: (line) => {
        if ((JSON.parse(line) as { event: string }).event === 'rebuild_start') stop.abort();
      },
    });
    const summary = await rebuildWarehouse(warehouse, { logger, signal: stop.signal });
    assert.equal(summary.interrupted, true);
    assert.deepEqual(await snapshot(warehouse.connection, []), before);
    assert.deepEqual(await tableRows(warehouse.connection, '_rejected_records', { exclude: [] }), rejections);
  });

  it('restores rows lost from the tables, with no API and no input files', async () => {
    await warehouse.connection.run(
      "DELETE FROM order_lines WHERE order_number = 'G-2024'; DELETE FROM customers",
    );
    await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.deepEqual(await snapshot(warehouse.connection, []), original);
  });
});
