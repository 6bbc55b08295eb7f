import assert from 'node:assert/strict';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions } from '../../src/streams.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  queryJson,
  readWarehouse,
  runCli,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * `sync` and `backfill` end to end: a config with two stores sharing one warehouse, the one-off flags,
 * stream selection, full refresh, an incremental second run, a backfill that leaves the watermarks alone,
 * and JSON logs a shipper can read line by line.
 */

interface StateRow {
  _store: string;
  stream: string;
  watermark: string | null;
  last_full_scan_at: string | null;
  state: string;
  last_success_at: string | null;
}

const STATE_SQL =
  'SELECT _store, stream, CAST(watermark AS VARCHAR) AS watermark, CAST(last_full_scan_at AS VARCHAR) AS last_full_scan_at, ' +
  "json_extract_string(state, '$.watermark') AS state, CAST(last_success_at AS VARCHAR) AS last_success_at " +
  'FROM _sync_state ORDER BY _store, stream';

/** The per-stream rows of the summary table sync prints on stdout. */
function summary(stdout: string): Map<string, { status: string; records: number; requests: number }> {
  const rows = new Map<string, { status: string; records: number; requests: number }>();
  for (const line of stdout.split('\n').slice(2)) {
    const [store, stream, status, , records, , requests] = line.trim().split(/\s+/);
    if (!store || !stream || !/^(ok|failed|skipped)$/.test(status ?? '')) continue;
    rows.set(`${store}/${stream}`, { status: status!, records: Number(records), requests: Number(requests) });
  }
  return rows;
}

describe('store-sync sync and backfill', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouseArgs: string[];
  let warehouseFile: string;
  const read = <T = Record<string, unknown>>(sql: string, file = warehouseFile) =>
    readWarehouse<T>(file, sql);
  let firstEu: Record<string, number>;

  before(async () => {
    sandbox = await testSandbox({ scale: 40, pageSize: 5 });
    ({ dir, cleanup } = await tempDir());
    await mkdir(path.join(dir, 'data'));
    // A relative warehouse path resolves against the config's folder, wherever the command runs from.
    await writeConfig(dir, {
      $schema: './schemas/sync.config.schema.json',
      warehouse: 'data/warehouse.duckdb',
      stores: [
        { name: 'eu', baseUrl: sandbox.baseUrl },
        { name: 'us', baseUrl: sandbox.baseUrl },
      ],
    });
    warehouseFile = path.join(dir, 'data', 'warehouse.duckdb');
    warehouseArgs = ['--warehouse', warehouseFile];
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('syncs one store of a two-store config from ./sync.config.json (--store)', async () => {
    sandbox.resetStats();
    const result = await runCli(['sync', '--store', 'eu'], { cwd: dir });
    assertExit(result, 0);
    const rows = summary(result.stdout);
    assert.deepEqual(
      [...rows.keys()],
      ['eu/locations', 'eu/metadata_definitions', 'eu/products', 'eu/subscriptions', 'eu/fulfillment_orders'],
    );
    assert.ok([...rows.values()].every((r) => r.status === 'ok'));
    assert.equal(rows.get('eu/subscriptions')!.records, sandbox.store.counts.subscriptions);
    assert.match(result.stdout, /^eu: succeeded in [\d.]+ s, \d+ requests, 0 retries \(run \S+\)$/m);
    // Human log lines go to stderr, results to stdout.
    assert.match(result.stderr, /^sync\.start runId=\S+ store=eu mode=incremental/m);
    assert.doesNotMatch(result.stdout, /sync\.start/);
    firstEu = sandbox.stats().byRoute;
    const counts = await read<{ _store: string; n: number }>(
      'SELECT _store, count(*) AS n FROM subscriptions GROUP BY ALL',
    );
    assert.deepEqual(counts, [{ _store: 'eu', n: sandbox.store.counts.subscriptions }]);
    // Each stream's counts are its result's, not the request meter's heartbeat readings (`waiting`, a Set,
    // stored as {}; `responses`) nor 429s, which the run counts as a whole (`rate_limited`).
    const [run] = await read<{ counts: string }>(
      "SELECT counts::VARCHAR AS counts FROM _sync_runs WHERE _store = 'eu'",
    );
    const streams = Object.entries(JSON.parse(run!.counts) as Record<string, Record<string, unknown>>);
    assert.equal(streams.length, 5);
    for (const [stream, result] of streams)
      assert.deepEqual(
        Object.keys(result).sort(),
        [
          'cursorsDropped',
          'pages',
          'records',
          'rejections',
          'requests',
          'resumed',
          'retries',
          'status',
          'stream',
        ],
        stream,
      );
  });

  it('syncs the second store into the same warehouse, with JSON logs that parse line by line', async () => {
    const result = await runCli(
      ['sync', '--store', 'us', '--log-format', 'json', '--config', 'sync.config.json'],
      {
        cwd: dir,
      },
    );
    assertExit(result, 0);
    const lines = result.stderr.trimEnd().split('\n');
    assert.ok(lines.length >= 12, `expected a log line per event, got:\n${result.stderr}`);
    const events = lines.map((line) => {
      const parsed = JSON.parse(line) as Record<string, unknown>;
      assert.equal(typeof parsed.event, 'string', line);
      assert.equal(typeof parsed.time, 'string', line);
      assert.ok(['debug', 'info', 'warn', 'error'].includes(parsed.level as string), line);
      return parsed;
    });
    const runId = events.find((e) => e.event === 'sync.start')?.runId;
    assert.match(String(runId), /^\S+$/);
    for (const event of events.filter((e) => /^(sync|stream)\./.test(String(e.event)))) {
      assert.equal(event.runId, runId, JSON.stringify(event));
      assert.equal(event.store, 'us', JSON.stringify(event));
      if (String(event.event).startsWith('stream.')) assert.equal(typeof event.stream, 'string');
    }
    const done = events.filter((e) => e.event === 'stream.done');
    assert.equal(done.length, 5);
    for (const event of done) assert.equal(typeof event.records, 'number');
    assert.deepEqual(
      await read('SELECT _store, count(*) AS subscriptions FROM subscriptions GROUP BY ALL ORDER BY _store'),
      [
        { _store: 'eu', subscriptions: sandbox.store.counts.subscriptions },
        { _store: 'us', subscriptions: sandbox.store.counts.subscriptions },
      ],
    );
  });

  it('a second run is incremental: fewer list requests, no subscription re-read', async () => {
    sandbox.resetStats();
    const result = await runCli(['sync', '--store', 'eu', '--config', path.join(dir, 'sync.config.json')]);
    assertExit(result, 0);
    const rows = summary(result.stdout);
    assert.equal(rows.get('eu/subscriptions')!.records, 0, 'nothing changed, nothing re-read');
    const second = sandbox.stats().byRoute;
    const lists = (byRoute: Record<string, number>) =>
      Object.entries(byRoute)
        .filter(([route]) => route !== 'GET /fulfillment-orders/{id}/')
        .reduce((sum, [, n]) => sum + n, 0);
    // Open fulfillment orders are refreshed one by one on every run (bounded by maxRefreshPerRun), by design.
    assert.ok(
      lists(second) < lists(firstEu),
      `list requests: first ${lists(firstEu)}, second ${lists(second)}`,
    );
    // One empty page per nightly slice, whatever the store's size: a creation window, the failing re-read, and a
    // cancellation and a recovery window per day from the watermark (today) − lookbackDays (docs/streams.md).
    const days = defaultStreamOptions('subscriptions').lookbackDays + 1;
    assert.equal(second['GET /subscriptions/'], 2 + 2 * days);
  });

  it('runs a one-off job from flags, with --streams', async () => {
    const file = path.join(dir, 'one-off.duckdb');
    const result = await runCli(
      [
        'sync',
        '--base-url',
        sandbox.baseUrl,
        '--token-env',
        TOKEN_ENV,
        '--warehouse',
        file,
        '--streams',
        'locations,metadata_definitions',
      ],
      { cwd: dir },
    );
    assertExit(result, 0);
    assert.deepEqual(
      [...summary(result.stdout).keys()],
      ['default/locations', 'default/metadata_definitions'],
    );
    assert.deepEqual(
      await read(
        `SELECT (SELECT count(*) FROM locations WHERE _store = 'default') AS locations,
                (SELECT count(*) FROM metadata_definitions) AS metadata,
                (SELECT count(*) FROM subscriptions) AS subscriptions`,
        file,
      ),
      [
        {
          locations: sandbox.store.counts.locations,
          metadata: sandbox.store.counts.metadata,
          subscriptions: 0,
        },
      ],
    );
  });

  it('--full-refresh re-reads everything of the chosen stream', async () => {
    const result = await runCli(
      ['sync', '--store', 'eu', '--streams', 'subscriptions', '--full-refresh', ...warehouseArgs],
      { cwd: dir },
    );
    assertExit(result, 0);
    const rows = summary(result.stdout);
    assert.deepEqual([...rows.keys()], ['eu/subscriptions']);
    assert.equal(rows.get('eu/subscriptions')!.records, sandbox.store.counts.subscriptions);
    const runs = await read<{ mode: string; outcome: string }>(
      "SELECT mode, outcome FROM _sync_runs WHERE _store = 'eu' ORDER BY started_at DESC LIMIT 1",
    );
    assert.deepEqual(runs, [{ mode: 'full_refresh', outcome: 'succeeded' }]);
  });

  it('backfill --from --to loads the range and leaves the nightly watermarks and last successes alone', async () => {
    const before = await queryJson<StateRow>(warehouseArgs, STATE_SQL);
    assert.equal(before.length, 10, 'five streams for each of two stores');
    const result = await runCli(
      [
        'backfill',
        '--from',
        '2025-01-01',
        '--to',
        '2025-06-30',
        '--store',
        'eu',
        '--streams',
        'subscriptions',
      ],
      { cwd: dir },
    );
    assertExit(result, 0);
    assert.match(result.stderr, /mode=backfill .*from=2025-01-01 to=2025-06-30/);
    const [{ n }] = (await read<{ n: number }>(
      "SELECT count(*) AS n FROM subscriptions WHERE _store = 'eu' AND date_created >= '2025-01-01' AND date_created < '2025-07-01'",
    )) as [{ n: number }];
    assert.ok(n > 0, 'the seeded store has subscriptions in the range');
    assert.equal(summary(result.stdout).get('eu/subscriptions')!.records, n);
    const afterwards = await queryJson<StateRow>(warehouseArgs, STATE_SQL);
    assert.deepEqual(afterwards, before);
    const runs = await read(
      "SELECT mode, outcome FROM _sync_runs WHERE _store = 'eu' ORDER BY started_at DESC LIMIT 1",
    );
    assert.deepEqual(runs, [{ mode: 'backfill', outcome: 'succeeded' }]);
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
