import assert from 'node:assert/strict';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  scratchWarehouses,
  startRewritingProxy,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Issue 26, "done when": an order with fields the model does not map at three levels (the order, a line, that
 * line's tax line) goes through `store-sync ingest` with every unknown value kept in `_extra` of the table of
 * its level, the summary names the new fields, a `WARN schema.new_fields` line says so, and `status` prints
 * `orders: 2 new fields: … → see _schema_changes`. A sync through a proxy that adds a field says it the same
 * way in its summary.
 */

const FIXTURE = path.join(import.meta.dirname, '..', 'fixtures', 'documents', 'order-2024.json');

interface NewFields {
  store: string;
  table: string;
  fields: string[];
  firstSeenAt: string;
}

/** The 2024 fixture order, with fields no column maps at the order, its first line and that line's tax line. */
async function orderWithUnknownFields(number: string): Promise<Record<string, unknown>> {
  const order = JSON.parse(await readFile(FIXTURE, 'utf8')) as Record<string, unknown>;
  const lines = order.lines as Record<string, unknown>[];
  const taxLines = lines[0]!.tax_lines as Record<string, unknown>[];
  taxLines[0]!.zz_jurisdiction = 'DE-BE';
  lines[0]!.zz_engraving = 'For Ada';
  return { ...order, number, zz_gift_wrap: { paper: 'red', ribbon: true }, zz_channel_score: 7 };
}

const EXTRA_SQL = {
  orders: 'SELECT number, _extra::VARCHAR AS extra FROM orders ORDER BY number',
  lines: 'SELECT id::INTEGER AS id, _extra::VARCHAR AS extra FROM order_lines ORDER BY id',
  taxLines:
    'SELECT line_id::INTEGER AS line_id, _extra::VARCHAR AS extra FROM order_line_tax_lines ORDER BY line_id',
};

const parse = (text: string | null) => (text === null ? null : JSON.parse(text));

/**
 * `store-sync ingest FILE --warehouse W` run from the scratch folder, where no sync.config.json is: a one-off
 * job of store `default`.
 */
async function ingest<Summary>(dir: string, file: string, warehouse: string, extra: string[] = []) {
  const result = await runCli(['ingest', '--json', file, '--warehouse', warehouse, ...extra], { cwd: dir });
  return { result, summary: JSON.parse(result.stdout) as Summary };
}

describe('store-sync ingest and sync: fields the model does not map are kept and named', () => {
  const scratch = scratchWarehouses();
  let sandbox: Sandbox | undefined;
  after(async () => {
    killChildren();
    await sandbox?.close();
    await scratch.removeAll();
  });

  let dir: string;
  let warehouse: string;
  /** What the first ingest's summary named. */
  let firstRun: NewFields[] = [];
  before(async () => {
    ({ dir, warehouse } = await scratch.create());
  });

  it('ingest keeps every unknown value in `_extra` of its level, and the summary and log name the paths', async () => {
    const file = path.join(dir, 'order.json');
    await writeFile(file, JSON.stringify(await orderWithUnknownFields('U-1')));
    const { result, summary } = await ingest<{ rejections: number; newFields: NewFields[] }>(
      dir,
      file,
      warehouse,
      ['--log-format', 'json'],
    );
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);

    const orders = await readWarehouse<{ number: string; extra: string | null }>(warehouse, EXTRA_SQL.orders);
    assert.deepEqual(
      orders.map((o) => [o.number, parse(o.extra)]),
      [['U-1', { zz_gift_wrap: { paper: 'red', ribbon: true }, zz_channel_score: 7 }]],
    );
    const lines = await readWarehouse<{ id: number; extra: string | null }>(warehouse, EXTRA_SQL.lines);
    assert.deepEqual(
      lines.map((l) => [l.id, parse(l.extra)]),
      [
        [11, { zz_engraving: 'For Ada' }],
        [12, null],
      ],
    );
    const taxLines = await readWarehouse<{ line_id: number; extra: string | null }>(
      warehouse,
      EXTRA_SQL.taxLines,
    );
    assert.deepEqual(
      taxLines.map((t) => [t.line_id, parse(t.extra)]),
      [
        [11, { zz_jurisdiction: 'DE-BE' }],
        [12, null],
      ],
    );

    assert.deepEqual(
      summary.newFields.map(({ firstSeenAt: _, ...entry }) => entry),
      [
        { store: 'default', table: 'order_line_tax_lines', fields: ['zz_jurisdiction'] },
        { store: 'default', table: 'order_lines', fields: ['zz_engraving'] },
        { store: 'default', table: 'orders', fields: ['zz_channel_score', 'zz_gift_wrap'] },
      ],
    );
    for (const entry of summary.newFields) assert.ok(!Number.isNaN(Date.parse(entry.firstSeenAt)));
    firstRun = summary.newFields;
    const warnings = jsonLines(result.stderr).filter((line) => line.event === 'schema.new_fields');
    assert.deepEqual(
      warnings.map((w) => [w.level, w.message]),
      [
        ['warn', 'order_line_tax_lines: 1 new field: `zz_jurisdiction` → see _schema_changes'],
        ['warn', 'order_lines: 1 new field: `zz_engraving` → see _schema_changes'],
        ['warn', 'orders: 2 new fields: `zz_channel_score`, `zz_gift_wrap` → see _schema_changes'],
      ],
    );

    const changes = await readWarehouse(
      warehouse,
      'SELECT "table", field_path, example, count::INTEGER AS count FROM _schema_changes ORDER BY "table", field_path',
    );
    assert.deepEqual(changes, [
      { table: 'order_line_tax_lines', field_path: 'zz_jurisdiction', example: '"DE-BE"', count: 1 },
      { table: 'order_lines', field_path: 'zz_engraving', example: '"For Ada"', count: 1 },
      { table: 'orders', field_path: 'zz_channel_score', example: '7', count: 1 },
      { table: 'orders', field_path: 'zz_gift_wrap', example: '{"paper":"red","ribbon":true}', count: 1 },
    ]);
  });

  it('a later run that meets the same fields names none as new; `status` still lists them', async () => {
    const file = path.join(dir, 'again.json');
    await writeFile(file, JSON.stringify(await orderWithUnknownFields('U-2')));
    const { result, summary } = await ingest<{ newFields: NewFields[] }>(dir, file, warehouse);
    assertExit(result, 0);
    assert.deepEqual(summary.newFields, []);
    assert.doesNotMatch(result.stderr, /schema\.new_fields/);
    assert.deepEqual(
      await readWarehouse(
        warehouse,
        `SELECT count::INTEGER AS count FROM _schema_changes WHERE field_path = 'zz_gift_wrap'`,
      ),
      [{ count: 2 }],
    );

    const status = await runCli(['status', '--warehouse', warehouse], { cwd: dir });
    assertExit(status, 0);
    assert.match(
      status.stdout,
      /\nnew fields, first seen in the last 7 days \(values in each row's _extra\):\ndefault:\n {2}order_line_tax_lines: 1 new field: `zz_jurisdiction` → see _schema_changes\n {2}order_lines: 1 new field: `zz_engraving` → see _schema_changes\n {2}orders: 2 new fields: `zz_channel_score`, `zz_gift_wrap` → see _schema_changes\n/,
    );

    const json = await runCli(['status', '--warehouse', warehouse, '--json'], { cwd: dir });
    assertExit(json, 0);
    const report = JSON.parse(json.stdout) as { streams: unknown[]; newFields: NewFields[] };
    assert.ok(report.streams.length > 0, 'the existing keys are still there');
    assert.deepEqual(
      report.newFields.map((n) => [n.store, n.table, n.fields]),
      [
        ['default', 'order_line_tax_lines', ['zz_jurisdiction']],
        ['default', 'order_lines', ['zz_engraving']],
        ['default', 'orders', ['zz_channel_score', 'zz_gift_wrap']],
      ],
    );
    // By first sighting: the second run's did not make them newer.
    assert.deepEqual(report.newFields, firstRun);
    // Another store's status names none of them.
    const other = await runCli(['status', '--warehouse', warehouse, '--json', '--store', 'other'], {
      cwd: dir,
    });
    assert.deepEqual((JSON.parse(other.stdout) as { newFields: NewFields[] }).newFields, []);
  });

  it('a spool drain names what its files saw first, once per table over all its files', async () => {
    const { dir: spoolRoot, warehouse: spoolWarehouse } = await scratch.create();
    const spool = path.join(spoolRoot, 'spool');
    await mkdir(spool);
    const first = { ...(await orderWithUnknownFields('S-1')), zz_only_first: 1 };
    const second = { ...(await orderWithUnknownFields('S-2')), zz_only_second: 2 };
    // Closed spool files (docs/receiver.md), drained oldest first, each file an ingest of its own.
    await writeFile(path.join(spool, 'events-20260101T000000000Z-1-a1.ndjson'), `${JSON.stringify(first)}\n`);
    await writeFile(
      path.join(spool, 'events-20260101T000001000Z-1-a2.ndjson'),
      `${JSON.stringify(second)}\n`,
    );
    const result = await runCli(['ingest', '--json', '--spool', spool, '--warehouse', spoolWarehouse], {
      cwd: spoolRoot,
    });
    assertExit(result, 0);
    const [drain] = (JSON.parse(result.stdout) as { spools: { documents: number; newFields: NewFields[] }[] })
      .spools;
    assert.equal(drain!.documents, 2);
    assert.deepEqual(
      drain!.newFields.map((n) => [n.table, n.fields]),
      [
        ['order_line_tax_lines', ['zz_jurisdiction']],
        ['order_lines', ['zz_engraving']],
        ['orders', ['zz_channel_score', 'zz_gift_wrap', 'zz_only_first', 'zz_only_second']],
      ],
    );
    // Each path is warned about once: the second file's log names only what the first had not.
    const warned = result.stderr.split('\n').filter((line) => line.includes('schema.new_fields'));
    assert.equal(warned.length, 4, warned.join('\n'));
    assert.ok(warned.some((line) => /orders: 1 new field: `zz_only_second`/.test(line)));
  });

  it('a sync through a proxy that adds a field keeps it and names it in its summary', async () => {
    sandbox = await testSandbox({ scale: 10 });
    const proxy = await startRewritingProxy(sandbox, (page, url) =>
      url.includes('/products/')
        ? { ...page, results: page.results.map((r) => ({ ...r, zz_proxy: { added: true } })) }
        : page,
    );
    try {
      const { dir: syncDir, warehouse: syncWarehouse } = await scratch.create();
      const config = await writeConfig(syncDir, {
        warehouse: syncWarehouse,
        stores: [{ name: 'main', baseUrl: proxy.baseUrl }],
      });
      const result = await runCli(['sync', '--config', config, '--streams', 'products']);
      assertExit(result, 0);
      assert.match(result.stdout, /\nmain: products: 1 new field: `zz_proxy` → see _schema_changes\n/);
      assert.match(
        result.stderr,
        /WARN schema\.new_fields: products: 1 new field: `zz_proxy` → see _schema_changes/,
      );
      const rows = await readWarehouse<{ n: number; with_extra: number }>(
        syncWarehouse,
        `SELECT count(*)::INTEGER AS n, count(*) FILTER (_extra->>'$.zz_proxy.added' = 'true')::INTEGER AS with_extra FROM products`,
      );
      assert.ok(rows[0]!.n > 0);
      assert.equal(rows[0]!.with_extra, rows[0]!.n, 'every product keeps the field in _extra');

      // The next sync meets it again: nothing new.
      const again = await runCli(['sync', '--config', config, '--streams', 'products']);
      assertExit(again, 0);
      assert.doesNotMatch(again.stdout, /new field/);
    } finally {
      await proxy.close();
    }
    assertNoSecretsOrEscapes();
  });
});
