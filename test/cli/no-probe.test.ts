import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DEMO_SEED } from '../../pipelines/demo.js';
import { STREAMS } from '../../src/extract/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { busiestSecond, busiestSecondBound, withSchedulingDelay } from '../extract/pacing-bounds.js';
import {
  assertExit,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  startArrivalsProxy,
  TOKEN,
  tempDir,
  writeConfig,
} from './helpers.js';

/**
 * `sync` spends no request on checking access before it reads (issue 30 point 6): every request of a run is
 * a page it reads, and a stream whose token lacks the scope learns it from its own first list request, is
 * skipped with the scopes to grant while the others sync, and the run exits 3 (docs/streams.md, "Scopes").
 * `doctor` keeps its explicit probe (test/cli/ops.test.ts).
 */

const LIMITED_ENV = 'STORE_SYNC_CLI_TEST_NO_PROBE_LIMITED';
const LIMITED_TOKEN = 'cli-test-no-probe-limited-9Jw3';
const GRANTED = ['catalogue:read', 'locations:read'];

/** Each stream's list route as the sandbox counts it (`GET /products/`). */
const LIST_ROUTE = Object.fromEntries(
  Object.values(STREAMS).map((s) => [s.name, `${s.operation.method} ${s.operation.path}`]),
);

interface RunRow {
  outcome: string;
  requests: number;
  counts: string;
}

/** The per-stream rows of the summary table sync prints on stdout. */
function summaryRows(
  stdout: string,
): Map<string, { status: string; pages: number; requests: number; note: string }> {
  const rows = new Map<string, { status: string; pages: number; requests: number; note: string }>();
  for (const line of stdout.split('\n')) {
    const match = /^shop\s+(\S+)\s+(ok|failed|skipped)\s+(\d+)\s+\d+\s+\d+\s+(\d+)\s*(.*)$/.exec(line);
    if (match)
      rows.set(match[1]!, {
        status: match[2]!,
        pages: Number(match[3]),
        requests: Number(match[4]),
        note: match[5]!,
      });
  }
  return rows;
}

describe('sync spends no probe request', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let config: string;

  before(async () => {
    // The demo's store (pipelines/demo.ts): the same seed and size, unpaced.
    sandbox = await startSandbox({
      seed: DEMO_SEED,
      scale: 'small',
      rateLimit: 0,
      tokens: [TOKEN, `${LIMITED_TOKEN}:${GRANTED.join(',')}`],
    });
    ({ dir, cleanup } = await tempDir());
    config = await writeConfig(dir, {
      warehouse: 'full.duckdb',
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
    await writeConfig(
      dir,
      {
        warehouse: 'limited.duckdb',
        stores: [{ name: 'shop', baseUrl: sandbox.baseUrl, tokenEnv: LIMITED_ENV }],
      },
      'limited.json',
    );
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it("the demo store's sync makes one request per page it reads, none before", async () => {
    sandbox.resetStats();
    const result = await runCli(['sync', '--config', config]);
    assertExit(result, 0);
    const stats = sandbox.stats();
    const rows = summaryRows(result.stdout);
    assert.deepEqual([...rows.keys()].sort(), Object.keys(STREAMS).sort(), result.stdout);
    const pages = [...rows.values()].reduce((n, r) => n + r.pages, 0);
    // A probe would have added one request per stream, all to the first page of its list.
    assert.equal(stats.requests, pages, JSON.stringify(stats.byRoute));
    assert.deepEqual(stats.byStatus, { '200': pages });
    for (const [stream, row] of rows) {
      assert.equal(row.requests, row.pages, `${stream}: every request it made read a page`);
      assert.equal(stats.byRoute[LIST_ROUTE[stream]!], row.pages, `${stream}: its list, page by page`);
    }
    const [run] = await readWarehouse<RunRow>(
      path.join(dir, 'full.duckdb'),
      'SELECT outcome, requests::INTEGER AS requests, counts::VARCHAR AS counts FROM _sync_runs',
    );
    assert.equal(run?.outcome, 'succeeded');
    assert.equal(run?.requests, stats.requests, 'the run records the requests the store answered');
  });

  it('a token missing scopes: those streams are skipped after one request each, the others sync, exit 3', async () => {
    sandbox.resetStats();
    const result = await runCli(
      ['sync', '--config', path.join(dir, 'limited.json'), '--log-format', 'json'],
      { env: { [LIMITED_ENV]: LIMITED_TOKEN } },
    );
    assertExit(result, 3);
    const rows = summaryRows(result.stdout);
    const stats = sandbox.stats();
    const denied = Object.values(STREAMS).filter((s) => !s.scopes.some((scope) => GRANTED.includes(scope)));
    assert.deepEqual(denied.map((s) => s.name).sort(), [
      'fulfillment_orders',
      'metadata_definitions',
      'subscriptions',
    ]);
    for (const stream of denied) {
      const row = rows.get(stream.name);
      assert.ok(row, `${stream.name} has a row:\n${result.stdout}`);
      assert.equal(row.status, 'skipped');
      assert.equal(row.pages, 0);
      // Its first list request was the one that told: it is counted, and nothing else was sent for it.
      assert.equal(row.requests, 1);
      assert.equal(stats.byRoute[LIST_ROUTE[stream.name]!], 1, stream.name);
      assert.ok(
        row.note.includes(
          `stream ${stream.name} skipped: the token lacks its scope; grant ${stream.scopes.join(' or ')}`,
        ),
        row.note,
      );
    }
    assert.equal(stats.byStatus['403'], denied.length, JSON.stringify(stats.byStatus));
    for (const name of ['products', 'locations']) {
      const row = rows.get(name);
      assert.equal(row?.status, 'ok', `${name}:\n${result.stdout}`);
      assert.ok(row.pages > 0, name);
    }
    assert.match(result.stdout, /^shop: partial in /m);
    const lines = jsonLines(result.stderr);
    const skipped = lines.filter((l) => l.event === 'stream.skipped').map((l) => l.stream);
    assert.deepEqual(skipped.sort(), denied.map((s) => s.name).sort());
    for (const line of lines.filter((l) => l.event === 'stream.skipped'))
      assert.equal(line.level, 'warn', JSON.stringify(line));
    // A missing scope is a warning, not an error: no stream failed.
    assert.deepEqual(
      lines.filter((l) => l.level === 'error'),
      [],
      'no error lines',
    );
    const [run] = await readWarehouse<RunRow>(
      path.join(dir, 'limited.duckdb'),
      'SELECT outcome, requests::INTEGER AS requests, counts::VARCHAR AS counts FROM _sync_runs',
    );
    assert.equal(run?.outcome, 'partial');
    const counts = JSON.parse(run!.counts) as Record<string, { status: string; message?: string }>;
    for (const stream of denied) {
      assert.equal(counts[stream.name]?.status, 'skipped');
      assert.match(counts[stream.name]?.message ?? '', /the token lacks its scope/);
    }
    const synced = await readWarehouse<{ n: number }>(
      path.join(dir, 'limited.duckdb'),
      'SELECT count(*)::INTEGER AS n FROM products',
    );
    assert.ok((synced[0]?.n ?? 0) > 0, 'products were stored');
  });

  it('a paced sync: a sandbox at the same rate answers no 429, and no second holds more than rate + burst', async () => {
    const RATE = 10;
    // The sandbox's limit is the platform's token bucket (RATE requests, refilled at RATE a second).
    const limited = await startSandbox({ seed: DEMO_SEED, scale: 'small', rateLimit: RATE, tokens: [TOKEN] });
    const proxy = await startArrivalsProxy(limited);
    try {
      const paced = await writeConfig(
        dir,
        { warehouse: 'paced.duckdb', rateLimit: RATE, stores: [{ name: 'shop', baseUrl: proxy.baseUrl }] },
        'paced.json',
      );
      const { result, lateMs } = await withSchedulingDelay(() => runCli(['sync', '--config', paced]));
      assertExit(result, 0);
      const stats = limited.stats();
      assert.equal(stats.byStatus['429'], undefined, JSON.stringify(stats.byStatus));
      assert.equal(proxy.arrivals.length, stats.requests);
      const busiest = busiestSecond(proxy.arrivals);
      const bound = busiestSecondBound(RATE, lateMs);
      const gaps = proxy.arrivals.slice(1).map((t, i) => Math.round(t - proxy.arrivals[i]!));
      assert.ok(
        busiest <= bound,
        `${busiest} requests in one second, more than ${bound} (scheduling delay up to ${lateMs.toFixed(0)} ms; gaps in ms: ${gaps.join(' ')})`,
      );
    } finally {
      await proxy.close();
      await limited.close();
    }
  });
});
