import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { tableDefinitions } from '../../src/model/index.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  type CliResult,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
} from './helpers.js';

/**
 * `store-sync demo` (what `npm start` runs) twice in a fresh folder: the second run replaces the first
 * cleanly, with the same tables and counts; the commands it prints for querying further work as printed.
 */

/** The per-table row summary the demo prints, as `table rows` lines. */
function tableSummary(stdout: string): string[] {
  const lines = stdout.split('\n');
  const start = lines.findIndex((line) => /^table\s+rows$/.test(line));
  assert.ok(start >= 0, `no table summary in:\n${stdout}`);
  const end = lines.findIndex((line, i) => i > start + 1 && !/^\S+\s+\d+$/.test(line));
  return lines.slice(start + 2, end);
}

describe('store-sync demo', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const runs: CliResult[] = [];
  const warehouse = () => path.join(dir, 'data', 'demo', 'warehouse.duckdb');

  // The landing is held to the same records, not the same rows: _raw_landing has a row per commit, and a
  // sync's commits group its pages by timing (src/load/page-groups.ts: a group also closes when the
  // warehouse has been free for GROUP_LINGER_MS), so a loaded machine gives another number of them (a CI
  // run gave 6 against 7); _raw_landing_parts cuts the compressed bytes into 1 KB parts, whose number follows
  // the compressed size, which the sandbox's clock-stamped documents change from run to run.
  const landingTables = new Set(['_raw_landing', '_raw_landing_parts']);
  const countedTables = tableDefinitions.filter((t) => !landingTables.has(t.name));

  async function allCounts(): Promise<Record<string, unknown>> {
    const sql =
      `SELECT ${countedTables.map((t) => `(SELECT count(*) FROM "${t.name}") AS "${t.name}"`).join(', ')}, ` +
      '(SELECT sum(records) FROM _raw_landing) AS landed_records';
    const [counts] = await readWarehouse(warehouse(), sql);
    return counts!;
  }

  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await cleanup?.();
  });

  it('runs in a fresh folder: sync, ingest, export, a summary and analyst answers', async () => {
    const result = await runCli(['demo'], { cwd: dir, withToken: false, timeoutMs: 120_000 });
    assertExit(result, 0);
    runs.push(result);
    assert.match(
      result.stdout,
      /store-sync demo: a seeded sandbox store synced into data\/demo\/warehouse\.duckdb/,
    );
    assert.match(result.stdout, /ingest: \d+ captured API documents/);
    // The orders come through the receiver: delivered, spooled, drained, every one loaded.
    const receive = /receive: (\d+) orders .* drained: (\d+) loaded, 0 rejected/.exec(result.stdout);
    assert.ok(receive, result.stdout);
    assert.ok(Number(receive[1]) > 0);
    assert.equal(receive[2], receive[1]);
    for (const title of [
      'Revenue by month and currency',
      'Subscriptions by status',
      'MRR by currency now',
      'Top products by units ordered',
      'Fulfillment backlog by location',
    ])
      assert.match(result.stdout, new RegExp(`^${title}`, 'm'));
    // The order book beyond the captured orders, as `status` prints it, from the order_coverage view.
    const coverage =
      /^orders: ([\d,]+) captured, ([\d,]+) referenced but not captured → see order_coverage$/m.exec(
        result.stdout,
      );
    assert.ok(coverage, result.stdout);
    const [counts] = await readWarehouse<{ captured: number; missing: number }>(
      warehouse(),
      'SELECT (SELECT count(*) FROM orders)::INTEGER AS captured, (SELECT count(*) FROM order_coverage)::INTEGER AS missing',
    );
    assert.deepEqual(
      [coverage[1], coverage[2]].map((n) => Number(n!.replaceAll(',', ''))),
      [counts!.captured, counts!.missing],
    );
    assert.match(result.stdout, /^Query further:\n {2}npx store-sync query "/m);
    assert.match(result.stdout, /duckdb data\/demo\/warehouse\.duckdb/);
    assert.match(result.stdout, /python -c "import duckdb/);
    const summary = tableSummary(result.stdout);
    assert.ok(summary.some((line) => /^orders\s+[1-9]\d*$/.test(line)));
    assert.ok(summary.some((line) => /^subscriptions\s+[1-9]\d*$/.test(line)));
    assert.deepEqual((await readdir(path.join(dir, 'data', 'demo'))).sort(), [
      'inbox',
      'parquet',
      'parquet.versions',
      'report.html',
      'spool',
      'warehouse.duckdb',
    ]);
    // The report's path is printed, and the file is the report of this warehouse (test/cli/report.test.ts
    // opens one in a browser).
    assert.match(result.stdout, /^ {2}report: data\/demo\/report\.html \(open it in a browser/m);
    const report = await readFile(path.join(dir, 'data', 'demo', 'report.html'), 'utf8');
    assert.match(report, /^<!doctype html>/);
    assert.match(report, /data-store="demo" data-stream="subscriptions"/);
  });

  it('a second run replaces the data cleanly: same tables, same counts, same inbox', async () => {
    const firstCounts = await allCounts();
    const firstInbox = (await readdir(path.join(dir, 'data', 'demo', 'inbox'))).sort();
    const result = await runCli(['demo'], { cwd: dir, withToken: false, timeoutMs: 120_000 });
    assertExit(result, 0);
    assert.deepEqual(tableSummary(result.stdout), tableSummary(runs[0]!.stdout));
    assert.deepEqual(await allCounts(), firstCounts);
    assert.equal(
      firstCounts._sync_runs,
      3,
      'one sync, one drain of the webhook spool and one ingest: the first run left nothing behind',
    );
    assert.deepEqual((await readdir(path.join(dir, 'data', 'demo', 'inbox'))).sort(), firstInbox);
  });

  it('the printed query command works as printed', async () => {
    const printed = /npx store-sync query "([^"]+)" --warehouse (\S+)/.exec(runs[0]!.stdout);
    assert.ok(printed, 'a query command is printed');
    const result = await runCli(['query', printed[1]!, '--warehouse', printed[2]!], {
      cwd: dir,
      withToken: false,
    });
    assertExit(result, 0);
    assert.match(result.stdout, /^status\s+count_star\(\)\n/);
    assert.match(result.stdout, /^active\s+\d+$/m);
  });

  it('refuses to replace a folder holding files it did not write', async () => {
    const mine = path.join(dir, 'mine');
    await mkdir(mine);
    await writeFile(path.join(mine, 'thesis.tex'), 'precious');
    const result = await runCli(['demo', '--dir', mine], { cwd: dir, withToken: false });
    assertCleanError(result, 2, /the demo folder \S+mine holds files the demo did not write \(thesis\.tex\)/);
    assert.equal(await readFile(path.join(mine, 'thesis.tex'), 'utf8'), 'precious');
    assert.deepEqual(await readdir(mine), ['thesis.tex']);

    // A file where the folder should be is a usage error that says so, not a raw ENOTDIR.
    const file = path.join(mine, 'thesis.tex');
    const onFile = await runCli(['demo', '--dir', file], { cwd: dir, withToken: false });
    assertCleanError(
      onFile,
      2,
      /cannot use \S+thesis\.tex as the demo folder: it is a file, not a folder; pass --dir/,
    );
    assert.equal(await readFile(file, 'utf8'), 'precious');
  });

  it('printed no ANSI escapes or progress bars into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
