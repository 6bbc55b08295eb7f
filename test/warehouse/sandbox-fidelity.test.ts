import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type DemoResult, runDemo } from '../../pipelines/demo.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { dataTables } from '../../src/model/index.js';
import { tempDir } from './helpers.js';

/**
 * The model maps everything the embedded sandbox sends: every stream synced from it, and every document its
 * write operations answer (orders of both versions, fulfillments, fulfillment orders moved and closed, carts,
 * tickets), delivered as webhooks and ingested as files by the demo. So no row keeps a field in `_extra`, no
 * path reaches `_schema_changes` and nothing is rejected. A field the sandbox sends that the model misses
 * fails here, naming the table and the field.
 */

describe('sandbox fidelity: the model maps every field the sandbox sends', () => {
  let demo: DemoResult;
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  before(async () => {
    const temp = await tempDir('store-sync-fidelity-');
    cleanup = temp.cleanup;
    demo = await runDemo({ dir: temp.dir, logger: silentLogger });
    warehouse = await openWarehouse(demo.warehouse);
  });
  after(async () => {
    await warehouse?.close();
    await cleanup();
  });

  it('synced and ingested something of every kind', () => {
    assert.ok(demo.documents > 0 && demo.webhooks.loaded > 0);
    const rows = new Map(demo.tables.map((t) => [t.table, t.rows]));
    for (const table of [
      'orders',
      'order_lines',
      'fulfillment_orders',
      'products',
      'variants',
      'subscriptions',
    ])
      assert.ok((rows.get(table) ?? 0) > 0, `${table} has rows`);
  });

  it('no row of any table keeps a field in _extra', async () => {
    const found: string[] = [];
    for (const def of dataTables()) {
      const { rows } = await warehouse.selectJson(
        `SELECT _extra, count(*) AS n FROM "${def.name}" WHERE _extra IS NOT NULL GROUP BY ALL ORDER BY n DESC LIMIT 3`,
      );
      for (const [extra, n] of rows) found.push(`${def.name}: ${n} rows with ${extra}`);
    }
    assert.deepEqual(found, []);
  });

  it('no new field path and no rejection', async () => {
    const changes = await warehouse.selectJson(
      'SELECT "table", field_path, example FROM _schema_changes ORDER BY ALL',
    );
    assert.deepEqual(changes.rows, []);
    const rejected = await warehouse.selectJson('SELECT stream, level, reason FROM _rejected_records');
    assert.deepEqual(rejected.rows, []);
  });
});
