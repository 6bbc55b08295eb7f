import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { runSync, type SyncResult } from '../../pipelines/sync.js';
import { parseConfig } from '../../src/config.js';
import { openWarehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { gatherReport, renderReport } from '../../src/report/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';

/**
 * The report's data from real warehouses: a sync that met 429s records how many (`_sync_runs.rate_limited`),
 * which the report charts; a warehouse recorded before that column is read read-only with the number "not
 * recorded"; an empty warehouse gives an empty report, not an error.
 */

const TOKEN = 'report-data-test-token-5Kp';

describe('the report from a real warehouse', () => {
  let dir: string;
  let sandbox: Sandbox;
  let sync: SyncResult;
  const file = () => path.join(dir, 'warehouse.duckdb');
  const options = (now = Date.now()) => ({
    warehousePath: file(),
    expected: [],
    freshnessHours: 36,
    spools: [],
    now,
  });

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-report-'));
    // A store that allows a request every 2 s, read by a sync that does not pace itself: its second request,
    // sent at once, meets a 429 however slow the machine.
    sandbox = await startSandbox({ seed: 7, scale: 40, rateLimit: 0.5, tokens: [TOKEN] });
    const config = parseConfig(
      {
        warehouse: file(),
        rateLimit: 0,
        stores: [{ name: 'shop', baseUrl: sandbox.baseUrl, tokenEnv: 'STORE_SYNC_REPORT_TEST_TOKEN' }],
      },
      'the test',
      dir,
    );
    const warehouse = await openWarehouse(file(), { logger: silentLogger });
    try {
      sync = await runSync({
        config,
        store: config.stores[0]!,
        streams: ['locations', 'metadata_definitions'],
        mode: 'incremental',
        logger: silentLogger,
        token: TOKEN,
        warehouse,
      });
    } finally {
      await warehouse.close();
    }
  });

  after(async () => {
    await sandbox?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it("records a sync's 429s in _sync_runs.rate_limited, and the report shows that number", async () => {
    assert.ok(sync.rateLimited > 0, `the sandbox answered 429 (${sync.rateLimited} times)`);
    const warehouse = await openWarehouse(file(), { readOnly: true });
    try {
      const { rows } = await warehouse.selectJson('SELECT rate_limited::INTEGER FROM _sync_runs');
      assert.deepEqual(rows, [[sync.rateLimited]]);
      const data = await gatherReport(warehouse, options());
      assert.equal(data.runs.length, 1);
      assert.equal(data.runs[0]!.rateLimited, sync.rateLimited);
      assert.equal(data.runs[0]!.requests, sync.requests);
      assert.equal(
        data.runs[0]!.records,
        sync.streams.reduce((n, s) => n + s.records, 0),
      );
      const chart = /<figure class="chart" id="chart-429">([\s\S]*?)<\/figure>/.exec(renderReport(data))![1]!;
      assert.match(chart, new RegExp(`data-value="${sync.rateLimited}"`));
    } finally {
      await warehouse.close();
    }
  });

  it('reads a warehouse recorded before rate_limited existed, read-only, with the number not recorded', async () => {
    const older = path.join(dir, 'older.duckdb');
    const { DuckDBInstance } = await import('@duckdb/node-api');
    // A copy of the warehouse as an older store-sync left it: the same, less the column.
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    await connection.run(
      `ATTACH '${file()}' AS w (READ_ONLY); ATTACH '${older}' AS o; COPY FROM DATABASE w TO o`,
    );
    await connection.run('ALTER TABLE o._sync_runs DROP COLUMN rate_limited');
    connection.closeSync();
    instance.closeSync();
    const warehouse = await openWarehouse(older, { readOnly: true });
    try {
      const data = await gatherReport(warehouse, { ...options(), warehousePath: older });
      assert.equal(data.runs.length, 1);
      assert.equal(data.runs[0]!.rateLimited, null);
      assert.equal(data.runs[0]!.requests, sync.requests);
      assert.match(renderReport(data), /class="bar missing"[^>]*><title>[^<]*: not recorded<\/title>/);
    } finally {
      await warehouse.close();
    }
  });

  it('gives an empty report for an empty warehouse, listing the streams the config expects as never synced', async () => {
    const empty = path.join(dir, 'empty.duckdb');
    await (await openWarehouse(empty, { logger: silentLogger })).close();
    const warehouse = await openWarehouse(empty, { readOnly: true });
    try {
      const data = await gatherReport(warehouse, {
        ...options(),
        warehousePath: empty,
        expected: [{ store: 'shop', stream: 'orders' }],
      });
      assert.deepEqual(
        data.streams.map((s) => [s.store, s.stream, s.lastSuccessAt, s.stale]),
        [['shop', 'orders', null, true]],
      );
      assert.deepEqual([data.runs, data.schemaChanges, data.rejections], [[], [], []]);
      assert.ok(data.tables.length > 40);
      // Only the schema's own bookkeeping has a row: the migration's fingerprint.
      assert.deepEqual(
        data.tables.filter((t) => t.rows > 0).map((t) => t.table),
        ['_schema'],
      );
      const html = renderReport(data);
      assert.match(html, /No runs recorded yet\./);
      assert.match(html, /<td data-field="fresh" class="stale">STALE<\/td>/);
    } finally {
      await warehouse.close();
    }
  });
});
