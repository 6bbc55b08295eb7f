import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { DuckDBInstance } from '@duckdb/node-api';
import { TABLES } from '../../bench/ingest.js';
import { writeOrderFiles } from '../../bench/warehouse-data.js';
import { BIN, REPO_ROOT } from '../cli/helpers.js';

const run = promisify(execFile);

/** Per table: its rows and sums of columns every loader fills, so that a value loaded wrong shows. */
const CHECKS: Record<(typeof TABLES)[number], string> = {
  orders:
    "count(*), sum(total_incl_tax), sum(report_total_cost), count(DISTINCT billing_line1), sum(len(tags)), min(created_at)::VARCHAR, count(*) FILTER (api_version = '2023-02-10')",
  order_lines:
    'count(*), sum(price_excl_tax), sum(quantity), sum(product_id), count(DISTINCT sku), max(updated_at)::VARCHAR',
  order_line_tax_lines: 'count(*), sum(amount), sum(rate), sum(report_amount), sum(line_id)',
  order_tax_lines: 'count(*), sum(amount), sum(id)',
  order_shipping_tax_lines: 'count(*), sum(amount), count(DISTINCT currency)',
  order_transactions: 'count(*), sum(amount), count(DISTINCT bankcard_last_four), min(date_created)::VARCHAR',
  fulfillments:
    'count(*), sum(id), count(DISTINCT tracking_code), max(created_at)::VARCHAR, max(date_created)::VARCHAR',
  fulfillment_line_items: 'count(*), sum(fulfilled_quantity), sum(order_line_id), sum(price_incl_tax)',
  fulfillment_line_item_tax_lines: 'count(*), sum(amount), sum(line_item_id)',
  customers: 'count(*), sum(id), count(DISTINCT email), count(*) FILTER (accepts_marketing)',
};

async function checks(database: string): Promise<Record<string, string>> {
  const instance = await DuckDBInstance.create(database, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  const found: Record<string, string> = {};
  for (const [table, sql] of Object.entries(CHECKS)) {
    const reader = await connection.runAndReadAll(`SELECT ${sql} FROM ${table}`);
    found[table] = reader.getRows()[0]!.map(String).join(' | ');
  }
  connection.closeSync();
  instance.closeSync();
  return found;
}

/**
 * The ingest benchmark's peers (bench/peers/) load what `store-sync ingest` loads: the same rows with the same
 * values in the ten tables, or their times would not compare like with like.
 */
describe('bench: the ingest peers load what store-sync loads', () => {
  let dir: string;
  let file: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-peers-'));
    file = (await writeOrderFiles(path.join(dir, 'docs'), 300, 1, 42)).paths[0]!;
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('DuckDB alone and the Node script match the command, table by table', async () => {
    const cli = path.join(dir, 'cli.duckdb');
    await run(process.execPath, [BIN, 'ingest', file, '--warehouse', cli]);
    const expected = await checks(cli);
    assert.match(expected.orders!, /^300 \| /);
    assert.match(expected.order_lines!, /^[1-9]\d* \| /);
    for (const peer of ['duckdb-alone', 'node-appender']) {
      const database = path.join(dir, `${peer}.duckdb`);
      const { stdout } = await run(process.execPath, [
        path.join(REPO_ROOT, 'dist/bench/peers', `${peer}.js`),
        file,
        database,
      ]);
      const rows = (JSON.parse(stdout) as { rows: Record<string, number> }).rows;
      assert.deepEqual(Object.keys(rows).sort(), [...TABLES].sort(), peer);
      assert.deepEqual(await checks(database), expected, peer);
    }
  });
});
