import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Heartbeat, type HeartbeatClock, type Pulse } from '../../src/cli/heartbeat.js';
import { createLogger } from '../../src/log.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  type HostileServer,
  page,
  product,
  send,
  sendJson,
  startHostileServer,
} from '../chaos/support/hostile-server.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * The heartbeat (issue 30, point 2): every heartbeatSeconds one line per active stream with its counters and
 * rate, in JSON logs too; and a `stalled` warning naming the request the run waits for when nothing moved for
 * stallSeconds. First on a clock of the test's own, then through the CLI against a server that accepts the
 * second page's request and never answers it.
 */

/** A clock the test moves by hand; `every` records the tick it would call, and whether it was stopped. */
function virtualClock(): HeartbeatClock & { advance(ms: number): void; stopped: boolean } {
  let now = 1_000_000;
  let tick: (() => void) | null = null;
  let period = 0;
  let since = 0;
  const clock = {
    stopped: false,
    now: () => now,
    every(ms: number, fn: () => void) {
      tick = fn;
      period = ms;
      since = now;
      return () => {
        clock.stopped = true;
        tick = null;
      };
    },
    advance(ms: number) {
      const end = now + ms;
      while (tick && since + period <= end) {
        since += period;
        now = since;
        tick();
      }
      now = end;
    },
  };
  return clock;
}

describe('heartbeat on a virtual clock', () => {
  it('beats every interval with the counters and the rate over the last interval, and warns once per stall threshold', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ format: 'json', write: (line) => lines.push(JSON.parse(line)) });
    const clock = virtualClock();
    const heartbeat = new Heartbeat({
      logger,
      prefix: 'stream',
      intervalMs: 30_000,
      stallMs: 300_000,
      clock,
    });
    heartbeat.start();
    const counters = { pages: 0, requests: 0 };
    const pulse = (): Pulse => ({
      fields: { pages: counters.pages, requests: counters.requests },
      progress: counters.pages,
      rated: { name: 'requests', value: counters.requests },
      waitingFor: 'GET /api/subscriptions/?page=7',
    });
    heartbeat.watch({ store: 'demo', stream: 'subscriptions' }, pulse);

    counters.pages = 10;
    counters.requests = 60;
    clock.advance(30_000);
    const beats = () => lines.filter((l) => l.event === 'stream.heartbeat');
    assert.equal(beats().length, 1);
    assert.deepEqual(
      { ...beats()[0], time: undefined },
      {
        time: undefined,
        level: 'info',
        event: 'stream.heartbeat',
        store: 'demo',
        stream: 'subscriptions',
        pages: 10,
        requests: 60,
        requestsPerSecond: 2,
      },
    );
    // The rate is over the last interval only: 30 more requests in 30 s is 1 per second.
    counters.requests = 90;
    clock.advance(30_000);
    assert.equal(beats().length, 2);
    assert.equal(beats()[1]!.requestsPerSecond, 1);

    // From here no page moves: the last change (pages 0 -> 10) was seen by the first tick (t = 1 s), so the
    // warning comes at the tick 300 s after it, and once more 300 s later, not at every tick in between.
    clock.advance(240_000);
    assert.equal(lines.filter((l) => l.event === 'stream.stalled').length, 0);
    clock.advance(1_000);
    const stalls = () => lines.filter((l) => l.event === 'stream.stalled');
    assert.equal(stalls().length, 1);
    assert.equal(stalls()[0]!.level, 'warn');
    assert.equal(stalls()[0]!.stalledSeconds, 300);
    assert.equal(stalls()[0]!.waitingFor, 'GET /api/subscriptions/?page=7');
    assert.equal(
      stalls()[0]!.message,
      'no progress for 300 s: waiting for GET /api/subscriptions/?page=7 (store demo)',
    );
    clock.advance(299_000);
    assert.equal(stalls().length, 1);
    clock.advance(1_000);
    assert.equal(stalls().length, 2);
    assert.equal(stalls()[1]!.stalledSeconds, 600);

    // A page ends the stall: no further warning until a new one has lasted the threshold.
    counters.pages = 11;
    clock.advance(1_000);
    clock.advance(299_000);
    assert.equal(stalls().length, 2);

    heartbeat.stop();
    assert.equal(clock.stopped, true, 'stop clears the timer');
    const before = lines.length;
    clock.advance(600_000);
    assert.equal(lines.length, before, 'nothing is logged after stop');
  });

  it('ends a watch when its work ends, and survives a reading that throws', () => {
    const lines: Record<string, unknown>[] = [];
    const logger = createLogger({ format: 'json', write: (line) => lines.push(JSON.parse(line)) });
    const clock = virtualClock();
    const heartbeat = new Heartbeat({ logger, prefix: 'stream', intervalMs: 1_000, stallMs: 60_000, clock });
    heartbeat.start();
    const unwatch = heartbeat.watch({ stream: 'a' }, () => ({ fields: {}, progress: 0, waitingFor: null }));
    let broken = false;
    heartbeat.watch({ stream: 'b' }, () => {
      if (broken) throw new Error('reading failed');
      return { fields: {}, progress: 0, waitingFor: null };
    });
    clock.advance(1_000);
    assert.deepEqual(
      lines.map((l) => l.stream),
      ['a', 'b'],
    );
    unwatch();
    broken = true;
    clock.advance(1_000);
    assert.deepEqual(
      lines.map((l) => l.stream),
      ['a', 'b'],
    );
    heartbeat.stop();
  });
});

describe('sync: heartbeat lines and a stalled warning through the CLI', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let server: HostileServer;
  let baseUrl: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    server = await startHostileServer((_req, res, url, origin) => {
      if (url.pathname !== '/api/products/') return send(res, 404, 'application/json', '{"error":"no"}');
      // The second page is accepted and never answered (close destroys its socket): a stalled API, not a slow one.
      if (url.searchParams.get('cursor') === '2') return;
      sendJson(res, page([product(1), product(2)], `${origin}/api/products/?cursor=2`));
    });
    baseUrl = `${server.origin}/api/`;
  });

  after(async () => {
    killChildren();
    await server?.close();
    await cleanup?.();
  });

  it('logs stream.heartbeat with the counters every second and stream.stalled naming the request', async () => {
    const config = await writeConfig(dir, {
      warehouse: path.join(dir, 'w.duckdb'),
      // The request must outlive the stall threshold: no timeout cuts it first.
      timeoutSeconds: 600,
      stallSeconds: 2,
      stores: [{ name: 'stalled-store', baseUrl }],
    });
    const run = startCli([
      'sync',
      '--config',
      config,
      '--streams',
      'products',
      '--heartbeat-seconds',
      '1',
      '--log-format',
      'json',
    ]);
    await waitForStderr(run, /"event":"stream\.stalled"/, 60_000);
    // Stopped on purpose: the run ends at its page boundary, interrupted (exit code of an interrupt).
    run.child.kill('SIGTERM');
    const result = await run.done;
    assert.notEqual(result.code, 0, 'an interrupted run does not exit 0');
    const lines = jsonLines(result.stderr);
    const beats = lines.filter((l) => l.event === 'stream.heartbeat');
    assert.ok(beats.length >= 1, `a heartbeat before the stall warning:\n${result.stderr}`);
    for (const beat of beats) {
      assert.equal(beat.level, 'info');
      assert.equal(beat.store, 'stalled-store');
      assert.equal(beat.stream, 'products');
      assert.match(String(beat.runId), /^\d{8}T\d{6}Z-/, 'the run it belongs to');
      for (const field of ['pages', 'records', 'requests', 'retries', 'rateLimited', 'requestsPerSecond'])
        assert.equal(typeof beat[field], 'number', `heartbeat field ${field}: ${JSON.stringify(beat)}`);
    }
    // Page 1 committed and page 2 asked for, whatever the beat saw before.
    const last = beats.at(-1)!;
    assert.equal(last.pages, 1);
    assert.equal(last.records, 2);
    assert.equal(last.requests, 2);
    assert.equal(last.retries, 0);
    assert.equal(last.rateLimited, 0);
    const stall = lines.find((l) => l.event === 'stream.stalled')!;
    assert.equal(stall.level, 'warn');
    assert.equal(stall.store, 'stalled-store');
    assert.equal(stall.stream, 'products');
    assert.equal(stall.waitingFor, 'GET /api/products/?cursor=2');
    assert.ok(
      Number(stall.stalledSeconds) >= 2,
      `stalled for at least the threshold: ${stall.stalledSeconds}`,
    );
    assert.match(
      String(stall.message),
      /^no progress for \d+ s: waiting for GET \/api\/products\/\?cursor=2 \(store stalled-store\)$/,
    );
  });

  it('ingest: heartbeat lines and a stalled warning while stdin stays open with nothing on it', async () => {
    const run = startCli(
      [
        'ingest',
        '-',
        '--warehouse',
        path.join(dir, 'stdin.duckdb'),
        '--heartbeat-seconds',
        '1',
        '--stall-seconds',
        '2',
        '--log-format',
        'json',
      ],
      { holdStdin: true, input: '' },
    );
    await waitForStderr(run, /"event":"ingest\.stalled"/, 60_000);
    // The producer finishes: the ingest ends normally, having read nothing.
    run.child.stdin!.end();
    const result = await run.done;
    assertExit(result, 0);
    const lines = jsonLines(result.stderr);
    const beat = lines.find((l) => l.event === 'ingest.heartbeat');
    assert.ok(beat, `an ingest heartbeat:\n${result.stderr}`);
    assert.equal(beat.level, 'info');
    assert.equal(beat.files, '0/1');
    assert.equal(beat.documents, 0);
    assert.equal(beat.bytesRead, 0);
    assert.equal(beat.bytesTotal, undefined, 'stdin has no size known in advance');
    assert.equal(beat.documentsPerSecond, 0);
    const stall = lines.find((l) => l.event === 'ingest.stalled')!;
    assert.equal(stall.level, 'warn');
    assert.equal(stall.waitingFor, 'the next batch of documents from stdin');
    assert.match(
      String(stall.message),
      /^no progress for \d+ s: waiting for the next batch of documents from stdin/,
    );
  });

  it('refuses a heartbeat interval that is not a positive number, naming the flag', async () => {
    const result = await runCli([
      'sync',
      '--warehouse',
      path.join(dir, 'x.duckdb'),
      '--base-url',
      baseUrl,
      '--token-env',
      'STORE_SYNC_CLI_TEST_TOKEN',
      '--heartbeat-seconds',
      '0',
    ]);
    assertExit(result, 2);
    assert.match(result.stderr, /--heartbeat-seconds must be a number of seconds above 0 \(got 0\)/);
  });

  it('ingest, rebuild and schedule refuse a bad flag before they record a run', async () => {
    const document = path.join(import.meta.dirname, '..', 'fixtures', 'published', 'event-order.json');
    // Never opened: a refused ingest creates no warehouse and records no run.
    const untouched = path.join(dir, 'refused-ingest.duckdb');
    const ingest = await runCli(['ingest', document, '--warehouse', untouched, '--heartbeat-seconds', '0']);
    assertExit(ingest, 2);
    assert.match(ingest.stderr, /--heartbeat-seconds must be a number of seconds above 0 \(got 0\)/);
    assert.equal(existsSync(untouched), false, 'no warehouse was created');

    const warehouse = path.join(dir, 'refused-rebuild.duckdb');
    assertExit(await runCli(['ingest', document, '--warehouse', warehouse]), 0);
    const rebuild = await runCli(['rebuild', '--warehouse', warehouse, '--stall-seconds', '-1']);
    assertExit(rebuild, 2);
    assert.match(rebuild.stderr, /--stall-seconds must be a number of seconds above 0 \(got -1\)/);
    // Only the ingest's run, finished: a rebuild run left without an outcome would read as interrupted.
    assert.deepEqual(await readWarehouse(warehouse, 'SELECT command, outcome FROM _sync_runs'), [
      { command: 'ingest', outcome: 'succeeded' },
    ]);

    const schedule = await runCli([
      'schedule',
      '--cron',
      '* * * * * *',
      '--warehouse',
      path.join(dir, 'refused-schedule.duckdb'),
      '--base-url',
      baseUrl,
      '--token-env',
      'STORE_SYNC_CLI_TEST_TOKEN',
      '--heartbeat-seconds',
      '0',
    ]);
    assertExit(schedule, 2);
    assert.match(schedule.stderr, /--heartbeat-seconds must be a number of seconds above 0 \(got 0\)/);
  });

  after(() => assertNoSecretsOrEscapes());
});

describe('schedule: heartbeat lines at the interval the config sets', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    // One product a page and 250 ms a request: a run lasts a few seconds, several heartbeats at 0.5 s.
    sandbox = await testSandbox({ scale: 10, pageSize: 1, latencyMs: 250 });
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('logs stream.heartbeat for the running store, with its run id', async () => {
    const config = await writeConfig(dir, {
      warehouse: path.join(dir, 'scheduled.duckdb'),
      heartbeatSeconds: 0.5,
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
    const run = startCli(
      [
        'schedule',
        '--cron',
        '* * * * * *',
        '--config',
        config,
        '--streams',
        'products',
        '--log-format',
        'json',
      ],
      { timeoutMs: 120_000 },
    );
    // Two beats, the second after a page: a fast first page can come before the first beat.
    await waitForStderr(
      run,
      /"event":"stream\.heartbeat"[\s\S]*"event":"stream\.heartbeat"[^\n]*"pages":[1-9]/,
      90_000,
    );
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    const beats = events.filter((e) => e.event === 'stream.heartbeat');
    const runs = new Set(events.filter((e) => e.event === 'schedule.run').map((e) => e.runId));
    assert.ok(beats.length >= 2, `heartbeats every 0.5 s:\n${result.stderr}`);
    for (const beat of beats) {
      assert.equal(beat.store, 'shop');
      assert.equal(beat.stream, 'products');
      assert.ok(runs.has(beat.runId), `the heartbeat's run ${String(beat.runId)} is one the schedule ran`);
    }
  });

  after(() => assertNoSecretsOrEscapes());
});
