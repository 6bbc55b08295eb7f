import assert from 'node:assert/strict';
import { copyFile, mkdir, readdir, readFile, realpath, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  queryJson,
  REPO_ROOT,
  readWarehouse,
  runCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * The commands that work on the warehouse: ingest (folder twice, stdin), status (table, JSON that matches
 * the warehouse, the freshness bound), query (three formats, SQL errors), export (read back with
 * hyparquet) and rebuild. One sync of a small sandbox store feeds them all.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents');

interface StatusJson {
  freshnessHours: number;
  streams: {
    store: string;
    stream: string;
    lastSuccessAt: string | null;
    rows: number | null;
    watermark: string | null;
    cursorInProgress: string | null;
    rejectionsSinceLastSuccess: number;
    stale: boolean;
  }[];
}

interface IngestJson {
  files: { path: string; status: string; documents: number }[];
  documents: number;
  rejections: number;
}

async function parquetRows(dir: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.name.endsWith('.parquet')) continue;
    const file = path.join(entry.parentPath, entry.name);
    rows.push(...(await parquetReadObjects({ file: await asyncBufferFromFile(file) })));
  }
  return rows;
}

describe('store-sync ingest, status, query, export, rebuild', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let config: string;
  const job = () => ['--config', config];
  const read = <T = Record<string, unknown>>(sql: string) =>
    readWarehouse<T>(path.join(dir, 'warehouse.duckdb'), sql);

  before(async () => {
    sandbox = await testSandbox({ scale: 30 });
    ({ dir, cleanup } = await tempDir());
    config = await writeConfig(dir, {
      warehouse: 'warehouse.duckdb',
      parquetDir: 'parquet',
      exportAfterSync: true,
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
    assertExit(await runCli(['sync', ...job()]), 0);
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('ingests a folder, and a second run loads nothing', async () => {
    const inbox = path.join(dir, 'inbox');
    await mkdir(inbox);
    for (const name of ['order-2023.json', 'order-2024.json', 'others.ndjson'])
      await copyFile(path.join(FIXTURES, name), path.join(inbox, name));
    const first = await runCli(['ingest', '--json', inbox, ...job()]);
    assertExit(first, 0);
    const loaded = JSON.parse(first.stdout) as IngestJson;
    assert.equal(loaded.files.length, 3);
    assert.ok(loaded.files.every((f) => f.status === 'loaded' && f.documents > 0));
    assert.equal(loaded.documents, 2 + 6, 'two orders and six other documents');
    const orders = await read('SELECT number, api_version FROM orders ORDER BY api_version');
    assert.equal(orders.length, 2);

    const second = await runCli(['ingest', '--json', inbox, ...job()]);
    assertExit(second, 0);
    const again = JSON.parse(second.stdout) as IngestJson;
    assert.equal(again.documents, 0);
    assert.ok(again.files.every((f) => f.status === 'unchanged'));
    assert.deepEqual(
      await queryJson(job(), 'SELECT number, api_version FROM orders ORDER BY api_version'),
      orders,
    );
  });

  it('warns when the inputs hold no document file, and exits 0', async () => {
    const empty = path.join(dir, 'empty-inbox');
    await mkdir(empty);
    await writeFile(path.join(empty, 'notes.txt'), 'not a document');
    const result = await runCli(['ingest', '--json', empty, ...job()]);
    assertExit(result, 0);
    assert.equal((JSON.parse(result.stdout) as IngestJson).files.length, 0);
    assert.match(
      result.stderr,
      /WARN ingest\.no_files inputs=\S+empty-inbox expected=files named \*\.json, \*\.ndjson, \*\.jsonl or their \.gz forms/,
    );
  });

  it('reads stdin at its place among the inputs, even after an option whose value names an input', async () => {
    // A folder named like the store: `--store shop - shop` must read stdin first, then the folder.
    const folder = path.join(dir, 'shop');
    await mkdir(folder);
    await copyFile(path.join(FIXTURES, 'order-2023.json'), path.join(folder, 'order.json'));
    const document = await readFile(path.join(FIXTURES, 'order-2024.json'));
    const result = await runCli(['ingest', '--json', '--store', 'shop', '-', 'shop', '-', ...job()], {
      input: document,
      cwd: dir,
    });
    assertExit(result, 0);
    const summary = JSON.parse(result.stdout) as IngestJson;
    // stdin named twice is read once, at its first place.
    assert.deepEqual(
      summary.files.map((f) => [f.path, f.documents]),
      [
        ['-', 1],
        [path.join(await realpath(folder), 'order.json'), 1],
      ],
    );
  });

  it('ingests stdin (-)', async () => {
    const document = await readFile(path.join(FIXTURES, 'order-2024.json'));
    const result = await runCli(['ingest', '--json', '-', ...job()], { input: document });
    assertExit(result, 0);
    const summary = JSON.parse(result.stdout) as IngestJson;
    assert.equal(summary.documents, 1);
    assert.equal(summary.rejections, 0);
    const [{ n }] = (await queryJson<{ n: number }>(job(), 'SELECT count(*) AS n FROM orders')) as [
      { n: number },
    ];
    assert.equal(n, 2, 'the same order again replaces itself');
  });

  it('status --json matches the warehouse', async () => {
    const result = await runCli(['status', '--json', ...job()]);
    assertExit(result, 0);
    const status = JSON.parse(result.stdout) as StatusJson;
    assert.equal(status.freshnessHours, 36);
    // Compared with what `store-sync query` says, as an operator would check it.
    const expected = await queryJson<{
      stream: string;
      n: number;
      watermark: string | null;
      last: string | null;
    }>(
      job(),
      `WITH counts AS (
         SELECT 'fulfillment_orders' AS stream, count(*) AS n FROM fulfillment_orders WHERE _store = 'shop'
         UNION ALL SELECT 'locations', count(*) FROM locations WHERE _store = 'shop' AND _deleted_at IS NULL
         UNION ALL SELECT 'metadata_definitions', count(*) FROM metadata_definitions WHERE _store = 'shop' AND _deleted_at IS NULL
         UNION ALL SELECT 'products', count(*) FROM products WHERE _store = 'shop' AND _deleted_at IS NULL
         UNION ALL SELECT 'subscriptions', count(*) FROM subscriptions WHERE _store = 'shop'
         UNION ALL SELECT 'documents', sum(documents)::BIGINT FROM _ingested_files WHERE _store = 'shop')
       SELECT c.stream, c.n, CAST(s.watermark AS VARCHAR) AS watermark,
              strftime(s.last_success_at, '%Y-%m-%dT%H:%M:%S.%g') AS last
       FROM counts c LEFT JOIN _sync_state s ON s._store = 'shop' AND s.stream = c.stream ORDER BY c.stream`,
    );
    assert.deepEqual(
      status.streams.map((s) => s.stream),
      ['documents', 'fulfillment_orders', 'locations', 'metadata_definitions', 'products', 'subscriptions'],
    );
    assert.equal(expected.find((e) => e.stream === 'subscriptions')?.n, sandbox.store.counts.subscriptions);
    for (const row of status.streams) {
      const saved = expected.find((e) => e.stream === row.stream)!;
      assert.equal(row.store, 'shop');
      assert.equal(row.rows, saved.n, row.stream);
      assert.equal(row.stale, false);
      assert.equal(row.cursorInProgress, null);
      assert.equal(row.rejectionsSinceLastSuccess, 0);
      if (row.stream === 'documents') continue;
      assert.equal(row.watermark, saved.watermark, row.stream);
      // The same instant, whatever precision each side prints.
      assert.equal(Date.parse(row.lastSuccessAt!), Date.parse(`${saved.last}Z`), row.stream);
    }
  });

  it('status prints a table, and flags stale streams with exit 3 under --freshness-hours', async () => {
    const fresh = await runCli(['status', ...job()]);
    assertExit(fresh, 0);
    // The table, then a blank line and what follows it (the order coverage).
    const tableOf = (stdout: string) => stdout.split('\n\n')[0]!.trimEnd().split('\n');
    const [header, rule, ...lines] = tableOf(fresh.stdout);
    assert.match(fresh.stdout, /^orders: \d+ captured, .* → see order_coverage$/m);
    assert.match(
      header!,
      /^store\s+stream\s+last success\s+age\s+rows\s+watermark\s+cursor in progress\s+rejections\s+fresh\s+last run$/,
    );
    assert.match(rule!, /^-+(\s+-+)+$/);
    assert.equal(lines.length, 6);
    // The last run of each stream completed it (for documents: the last ingest).
    for (const line of lines)
      assert.match(
        line,
        /^shop\s+documents\s/.test(line) ? / -\s+ok, \d+ min ago$/ : / ok\s+ok, \d+ min ago$/,
        line,
      );

    // Ingested documents come when someone ingests them: no freshness bound applies to them.
    const stale = await runCli(['status', '--freshness-hours', '0.0001', ...job()]);
    assertExit(stale, 3);
    const staleLines = tableOf(stale.stdout).slice(2);
    assert.equal(staleLines.length, 6);
    for (const line of staleLines)
      assert.match(line, /^shop\s+documents\s/.test(line) ? / -\s+ok, / : / STALE\s+ok, /, line);
    const json = await runCli(['status', '--json', '--freshness-hours', '0.0001', ...job()]);
    assertExit(json, 3);
    for (const s of (JSON.parse(json.stdout) as StatusJson).streams)
      assert.equal(s.stale, s.stream !== 'documents', s.stream);
  });

  it('status lists the streams the config enables that never succeeded, and refuses a store the config does not have', async () => {
    // The same warehouse, with a second store that never synced and a stream of the first turned off.
    const wider = await writeConfig(
      dir,
      {
        warehouse: 'warehouse.duckdb',
        stores: [
          { name: 'shop', baseUrl: sandbox.baseUrl, streams: { locations: { enabled: false } } },
          { name: 'unreached', baseUrl: sandbox.baseUrl, streams: { products: { enabled: false } } },
        ],
      },
      'wider.json',
    );
    const result = await runCli(['status', '--json', '--config', wider]);
    assertExit(result, 3);
    const rows = (JSON.parse(result.stdout) as StatusJson).streams;
    const never = rows.filter((r) => r.store === 'unreached');
    assert.deepEqual(
      never.map((r) => r.stream),
      ['fulfillment_orders', 'locations', 'metadata_definitions', 'subscriptions'],
      'every enabled stream of the store, and only those',
    );
    for (const row of never) {
      assert.equal(row.lastSuccessAt, null);
      assert.equal(row.stale, true);
      assert.equal(row.rows, 0);
    }
    // What the warehouse holds of the first store is still listed, turned off or not.
    assert.equal(rows.filter((r) => r.store === 'shop').length, 6);
    assert.ok(rows.filter((r) => r.store === 'shop').every((r) => !r.stale));

    const table = await runCli(['status', '--config', wider, '--store', 'unreached']);
    assertExit(table, 3);
    const lines = table.stdout.trimEnd().split('\n').slice(2);
    assert.equal(lines.length, 4);
    for (const line of lines) assert.match(line, /^unreached\s+\S+\s+never\s+0\s+.*STALE$/);

    const unknown = await runCli(['status', '--config', wider, '--store', 'nope']);
    assertCleanError(unknown, 2, /^error: unknown store "nope": the config has "shop", "unreached"\.$/m);
  });

  it('query answers as an aligned table, CSV and JSON with the same values', async () => {
    const sql = 'SELECT id, status, total, currency FROM subscriptions ORDER BY id LIMIT 4';
    const json = await queryJson<{ id: number; status: string; total: string; currency: string }>(job(), sql);
    assert.equal(json.length, 4);
    assert.equal(typeof json[0]!.id, 'number');
    assert.match(json[0]!.total, /^\d+\.\d{3}$/, 'decimals print exactly, as text');

    const csv = await runCli(['query', sql, '--format', 'csv', ...job()]);
    assertExit(csv, 0);
    assert.deepEqual(csv.stdout.trimEnd().split('\n'), [
      'id,status,total,currency',
      ...json.map((r) => `${r.id},${r.status},${r.total},${r.currency}`),
    ]);

    const table = await runCli(['query', sql, ...job()]);
    assertExit(table, 0);
    const lines = table.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^\s*id\s+status\s+total\s+currency$/);
    assert.equal(lines.length, 2 + json.length);
    json.forEach((row, i) => {
      assert.deepEqual(lines[i + 2]!.trim().split(/\s+/), [
        String(row.id),
        row.status,
        row.total,
        row.currency,
      ]);
    });
    // Columns line up: every line is as wide as the header's rule.
    const widths = new Set(lines.slice(1).map((l) => l.length));
    assert.ok(widths.size <= 2, 'aligned columns');

    // Integers in lists (products.interval_counts, BIGINT[]) are numbers too, as scalars are; they printed as
    // strings. Past 2^53 they stay strings, in lists as alone.
    const [lists] = await queryJson<Record<string, unknown>>(
      job(),
      'SELECT [1, 2, 3]::BIGINT[] AS small, [9007199254740993]::BIGINT[] AS big, 9007199254740993::BIGINT AS alone',
    );
    assert.deepEqual(lists, { small: [1, 2, 3], big: ['9007199254740993'], alone: '9007199254740993' });

    // JSON columns (metadata) are JSON in the output, not strings of JSON, and a big number in one stays exact.
    const raw = await runCli([
      'query',
      `SELECT '{"note": "a \\"b\\"", "id": 123456789012345678901}'::JSON AS metadata, NULL::JSON AS none, '{}'::JSON AS empty`,
      '--format',
      'json',
      ...job(),
    ]);
    assertExit(raw, 0);
    assert.equal(
      raw.stdout.trimEnd(),
      '[{"metadata":{"note": "a \\"b\\"", "id": 123456789012345678901},"none":null,"empty":{}}]',
    );
    assert.deepEqual(JSON.parse(raw.stdout), [
      { metadata: { note: 'a "b"', id: 1.2345678901234568e20 }, none: null, empty: {} },
    ]);

    // Times print in UTC wherever the computer is: in New York they printed at -05, and a month bucket of
    // 23:30 UTC on 31 January as December.
    const late = "TIMESTAMPTZ '2024-01-31 23:30:00+00'";
    const inNewYork = await runCli(
      [
        'query',
        `SELECT ${late} AS at, date_trunc('month', ${late}) AS month, [${late}] AS list`,
        '--format',
        'csv',
        ...job(),
      ],
      { env: { TZ: 'America/New_York' } },
    );
    assertExit(inNewYork, 0);
    assert.deepEqual(inNewYork.stdout.trimEnd().split('\n'), [
      'at,month,list',
      '2024-01-31 23:30:00+00,2024-01-01 00:00:00+00,"[""2024-01-31 23:30:00+00""]"',
    ]);
  });

  it("a SQL error prints DuckDB's message and exits 1 without a stack trace; writes are refused", async () => {
    const error = await runCli(['query', 'SELECT no_such_column FROM subscriptions', ...job()]);
    assertCleanError(error, 1, /Binder Error: Referenced column "no_such_column" not found/);
    assert.equal(error.stdout, '');
    const syntax = await runCli(['query', 'SELEC 1', ...job()]);
    assertCleanError(syntax, 1, /^error: query failed: Parser Error: syntax error at or near "SELEC"/m);
    const several = await runCli(['query', 'SELECT 1; SELECT 2', ...job()]);
    assertCleanError(several, 1, /one SQL statement at a time, and this holds 2/);
    assert.equal(several.stdout, '');
    const empty = await runCli(['query', ' ; ', ...job()]);
    assertCleanError(empty, 2, /^error: no SQL given/m);
    const write = await runCli(['query', 'DROP TABLE subscriptions', ...job()]);
    assertCleanError(write, 1, /read-only/);
    const [{ n }] = (await read<{ n: number }>('SELECT count(*) AS n FROM subscriptions')) as [{ n: number }];
    assert.equal(n, sandbox.store.counts.subscriptions);
  });

  it('export writes Parquet that another reader reads back (sync did too, with exportAfterSync)', async () => {
    const out = path.join(dir, 'parquet');
    const afterSync = await parquetRows(await realpath(path.join(out, 'subscriptions')));
    assert.equal(afterSync.length, sandbox.store.counts.subscriptions);
    const result = await runCli(['export', ...job()]);
    assertExit(result, 0);
    assert.match(result.stdout, new RegExp(`exported \\d+ tables to ${out} in`));
    const subscriptions = await parquetRows(await realpath(path.join(out, 'subscriptions')));
    assert.equal(subscriptions.length, sandbox.store.counts.subscriptions);
    const ids = subscriptions.map((r) => Number(r.id)).sort((a, b) => a - b);
    const expected = await read<{ id: number }>('SELECT id FROM subscriptions ORDER BY id');
    assert.deepEqual(
      ids,
      expected.map((r) => r.id),
    );
    const orders = await parquetRows(await realpath(path.join(out, 'orders')));
    assert.deepEqual(orders.map((o) => o.number).sort(), ['G-2023', 'G-2024'].sort());
    assert.match(result.stdout, /^orders\s+2\s+by month\s+/m);
  });

  it('every SQL example in docs/querying.md runs on a synced warehouse and its Parquet export', async () => {
    const doc = await readFile(path.join(REPO_ROOT, 'docs', 'querying.md'), 'utf8');
    const blocks = [...doc.matchAll(/```sql\n([\s\S]*?)```/g)].map((m) => m[1]!);
    assert.ok(blocks.length >= 7, `found ${blocks.length} SQL examples`);
    const parquet = path.join(dir, 'parquet');
    for (const block of blocks) {
      for (const statement of block
        .split(/;\s*\n/)
        .map((s) => s.trim())
        .filter(Boolean)) {
        const sql = statement.replaceAll('data/parquet', parquet);
        await assert.doesNotReject(read(sql), `docs/querying.md: ${statement}`);
      }
    }
  });

  it('rebuild re-derives the same tables without the API', async () => {
    const sql =
      'SELECT (SELECT count(*) FROM subscriptions) AS s, (SELECT count(*) FROM subscription_lines) AS l, ' +
      '(SELECT count(*) FROM orders) AS o, (SELECT count(*) FROM order_lines) AS ol, (SELECT count(*) FROM products) AS p';
    const before = await read(sql);
    sandbox.resetStats();
    const result = await runCli(['rebuild', ...job()]);
    assertExit(result, 0);
    assert.match(result.stdout, /^rebuilt \d+ tables from \d+ landed records: \d+ rows, 0 rejections$/m);
    assert.equal(sandbox.stats().requests, 0, 'no API request');
    assert.deepEqual(await read(sql), before);
    // With worker threads (by default they only start for a large landing) the result is the same.
    assertExit(await runCli(['rebuild', '--workers', '2', ...job()]), 0);
    assert.deepEqual(await read(sql), before);
  });

  it('a value that does not fit exactly is rejected with its reason, the document loads without it, and ingest exits 3', async () => {
    const order = JSON.parse(await readFile(path.join(FIXTURES, 'order-2024.json'), 'utf8')) as Record<
      string,
      unknown
    >;
    const result = await runCli(['ingest', '--json', '-', ...job()], {
      input: JSON.stringify({ ...order, number: 'BAD-1', total_incl_tax: '12.34567' }),
    });
    assertExit(result, 3);
    assert.equal((JSON.parse(result.stdout) as IngestJson).rejections, 1);
    const rejected = await read<{
      stream: string;
      key: string;
      reason: string;
      level: string;
      field_path: string;
    }>('SELECT stream, key, reason, level, field_path FROM _rejected_records');
    assert.equal(rejected.length, 1);
    assert.deepEqual(
      [rejected[0]!.stream, rejected[0]!.key, rejected[0]!.level, rejected[0]!.field_path],
      ['documents', 'BAD-1', 'field', 'total_incl_tax'],
    );
    assert.match(
      rejected[0]!.reason,
      /^orders: total_incl_tax: got "12\.34567", expected decimal text that fits DECIMAL/,
    );
    assert.deepEqual(await read("SELECT total_incl_tax, _extra FROM orders WHERE number = 'BAD-1'"), [
      { total_incl_tax: null, _extra: '{"total_incl_tax":"12.34567"}' },
    ]);
  });

  it('status counts the rejections of the last run', async () => {
    const result = await runCli(['status', '--json', ...job()]);
    const documents = (JSON.parse(result.stdout) as StatusJson).streams.find((s) => s.stream === 'documents');
    assert.equal(documents?.rejectionsSinceLastSuccess, 1);
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
