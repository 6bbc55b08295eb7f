import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  ingestWithSummary,
  killChildren,
  readWarehouse,
  runCli,
  scratchWarehouses,
  startRewritingProxy,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * A stream's `schemaContract` (docs/configuration.md, "Fields the model does not map"): `evolve` (the
 * default) keeps fields the model does not map in `_extra`; `freeze` rejects the records that carry any,
 * exit 3, the reason naming the field; `discard` loads them with `_extra` NULL and still names the paths in
 * `_schema_changes`. Set per stream and for documents in the config, for one run with `--schema-contract`,
 * and followed by `rebuild`.
 */

const FIXTURE = path.join(import.meta.dirname, '..', 'fixtures', 'documents', 'order-2024.json');

async function fixtureOrder(number: string): Promise<Record<string, unknown>> {
  return { ...(JSON.parse(await readFile(FIXTURE, 'utf8')) as Record<string, unknown>), number };
}

/** An order with unknown fields at its root and on its first line, then a plain one. */
async function writeOrders(file: string): Promise<void> {
  const odd = await fixtureOrder('C-1');
  const lines = odd.lines as Record<string, unknown>[];
  lines[0]!.zz_engraving = 'For Ada';
  odd.zz_gift_wrap = true;
  await writeFile(file, `${JSON.stringify(odd)}\n${JSON.stringify(await fixtureOrder('C-2'))}\n`);
}

const ORDERS = 'SELECT number, _extra::VARCHAR AS extra FROM orders ORDER BY number';
const LINE_EXTRA = "SELECT _extra::VARCHAR AS extra FROM order_lines WHERE order_number = 'C-1' AND id = 11";
const CHANGES =
  'SELECT "table", field_path, count::INTEGER AS count FROM _schema_changes ORDER BY "table", field_path';
const REJECTED =
  "SELECT key, reason, level, field_path FROM _rejected_records WHERE stage = 'normalize' ORDER BY key";

describe('schemaContract: evolve, freeze, discard', () => {
  const scratch = scratchWarehouses();
  let sandbox: Sandbox | undefined;
  after(async () => {
    killChildren();
    await sandbox?.close();
    await scratch.removeAll();
  });

  it('evolve is the default: both orders load, the unknown values in `_extra`', async () => {
    const { dir, warehouse } = await scratch.create();
    const file = path.join(dir, 'orders.ndjson');
    await writeOrders(file);
    const { result } = await ingestWithSummary([file], warehouse);
    assertExit(result, 0);
    assert.deepEqual(await readWarehouse(warehouse, ORDERS), [
      { number: 'C-1', extra: '{"zz_gift_wrap":true}' },
      { number: 'C-2', extra: null },
    ]);
    assert.deepEqual(await readWarehouse(warehouse, LINE_EXTRA), [{ extra: '{"zz_engraving":"For Ada"}' }]);
  });

  it('freeze (--schema-contract) rejects the order that carries unknown fields, exit 3, naming the field', async () => {
    const { dir, warehouse } = await scratch.create();
    const file = path.join(dir, 'orders.ndjson');
    await writeOrders(file);
    const { result, summary } = await ingestWithSummary<{ rejections: number; newFields: unknown[] }>(
      [file],
      warehouse,
      ['--schema-contract', 'freeze'],
    );
    assertExit(result, 3);
    assert.equal(summary.rejections, 1);
    assert.deepEqual(summary.newFields, [], 'nothing loaded carried a new field');
    assert.deepEqual(await readWarehouse(warehouse, ORDERS), [{ number: 'C-2', extra: null }]);
    const [rejected, ...more] = await readWarehouse<Record<string, string>>(warehouse, REJECTED);
    assert.deepEqual(more, []);
    assert.equal(rejected!.key, 'C-1');
    assert.equal(rejected!.level, 'record');
    assert.match(rejected!.field_path!, /^(zz_gift_wrap|lines\[0\]\.zz_engraving)$/);
    assert.ok(
      rejected!.reason!.includes(`${rejected!.field_path}: unknown field (schema contract freeze)`),
      rejected!.reason,
    );
    assert.deepEqual(await readWarehouse(warehouse, CHANGES), []);
  });

  it('discard (streams.documents in the config) loads them with `_extra` NULL; `_schema_changes` names them', async () => {
    const { dir, warehouse } = await scratch.create();
    const file = path.join(dir, 'orders.ndjson');
    await writeOrders(file);
    const config = await writeConfig(dir, {
      warehouse,
      streams: { documents: { schemaContract: 'freeze' } },
      stores: [
        {
          name: 'main',
          baseUrl: 'http://127.0.0.1:9/api/',
          streams: { documents: { schemaContract: 'discard' } },
        },
      ],
    });
    const { result, summary } = await ingestWithSummary<{ newFields: { table: string; fields: string[] }[] }>(
      [file],
      warehouse,
      ['--config', config],
    );
    assertExit(result, 0);
    assert.deepEqual(await readWarehouse(warehouse, ORDERS), [
      { number: 'C-1', extra: null },
      { number: 'C-2', extra: null },
    ]);
    assert.deepEqual(await readWarehouse(warehouse, LINE_EXTRA), [{ extra: null }]);
    assert.deepEqual(await readWarehouse(warehouse, CHANGES), [
      { table: 'order_lines', field_path: 'zz_engraving', count: 1 },
      { table: 'orders', field_path: 'zz_gift_wrap', count: 1 },
    ]);
    assert.deepEqual(
      summary.newFields.map((n) => [n.table, n.fields]),
      [
        ['order_lines', ['zz_engraving']],
        ['orders', ['zz_gift_wrap']],
      ],
    );

    // rebuild follows the config: under evolve now, the values come back from the raw landing into `_extra`,
    // and `_schema_changes` is re-derived (the same rows, not counted twice).
    await writeConfig(dir, { warehouse, stores: [{ name: 'main', baseUrl: 'http://127.0.0.1:9/api/' }] });
    assertExit(await runCli(['rebuild', '--config', config]), 0);
    assert.deepEqual(await readWarehouse(warehouse, ORDERS), [
      { number: 'C-1', extra: '{"zz_gift_wrap":true}' },
      { number: 'C-2', extra: null },
    ]);
    assert.deepEqual(await readWarehouse(warehouse, CHANGES), [
      { table: 'order_lines', field_path: 'zz_engraving', count: 1 },
      { table: 'orders', field_path: 'zz_gift_wrap', count: 1 },
    ]);

    // And under freeze, a rebuild rejects that order as an ingest would have.
    await writeConfig(dir, {
      warehouse,
      streams: { documents: { schemaContract: 'freeze' } },
      stores: [{ name: 'main', baseUrl: 'http://127.0.0.1:9/api/' }],
    });
    assertExit(await runCli(['rebuild', '--config', config]), 3);
    assert.deepEqual(await readWarehouse(warehouse, ORDERS), [{ number: 'C-2', extra: null }]);
    assert.deepEqual(await readWarehouse(warehouse, CHANGES), []);
  });

  it('a sync stream under freeze rejects the records a proxy added a field to, exit 3', async () => {
    sandbox = await testSandbox({ scale: 10 });
    const proxy = await startRewritingProxy(sandbox, (page, url) =>
      url.includes('/locations/')
        ? { ...page, results: page.results.map((r) => ({ ...r, zz_proxy: 1 })) }
        : page,
    );
    try {
      const { dir, warehouse } = await scratch.create();
      const config = await writeConfig(dir, {
        warehouse,
        streams: { locations: { schemaContract: 'freeze' } },
        stores: [{ name: 'main', baseUrl: proxy.baseUrl }],
      });
      const result = await runCli([
        'sync',
        '--config',
        config,
        '--streams',
        'locations,metadata_definitions',
      ]);
      assertExit(result, 3);
      const rejected = await readWarehouse<{ n: number; paths: string }>(
        warehouse,
        `SELECT count(*)::INTEGER AS n, string_agg(DISTINCT field_path, ',') AS paths FROM _rejected_records
         WHERE stream = 'locations' AND reason LIKE '%unknown field (schema contract freeze)%'`,
      );
      assert.ok(rejected[0]!.n > 0);
      assert.equal(rejected[0]!.paths, 'zz_proxy');
      assert.deepEqual(await readWarehouse(warehouse, 'SELECT count(*)::INTEGER AS n FROM locations'), [
        { n: 0 },
      ]);
      // The other stream evolves as before, and the flag makes this one evolve for a run.
      assert.ok(
        (
          await readWarehouse<{ n: number }>(
            warehouse,
            'SELECT count(*)::INTEGER AS n FROM metadata_definitions',
          )
        )[0]!.n > 0,
      );
      const evolve = await runCli([
        'sync',
        '--config',
        config,
        '--streams',
        'locations',
        '--schema-contract',
        'evolve',
      ]);
      assertExit(evolve, 0);
      const kept = await readWarehouse<{ n: number; with_extra: number }>(
        warehouse,
        `SELECT count(*)::INTEGER AS n, count(*) FILTER (_extra->>'$.zz_proxy' = '1')::INTEGER AS with_extra FROM locations`,
      );
      assert.ok(kept[0]!.n > 0);
      assert.equal(kept[0]!.with_extra, kept[0]!.n);
    } finally {
      await proxy.close();
    }
  });

  it('a contract that is not one of the three is a usage error naming the setting', async () => {
    const { dir, warehouse } = await scratch.create();
    const flag = await runCli(['ingest', dir, '--warehouse', warehouse, '--schema-contract', 'strict']);
    assertExit(flag, 2);
    assert.match(flag.stderr, /schema-contract/);
    const config = await writeConfig(dir, {
      warehouse,
      stores: [
        {
          name: 'main',
          baseUrl: 'http://127.0.0.1:9/api/',
          streams: { products: { schemaContract: 'strict' } },
        },
      ],
    });
    assertCleanError(
      await runCli(['status', '--config', config]),
      2,
      /stores\[0\]\.streams\.products\.schemaContract: .*"evolve"\|"freeze"\|"discard"/,
    );
  });
});
