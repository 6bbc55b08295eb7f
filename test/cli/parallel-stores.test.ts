import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  startGatedProxy,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * `sync --parallel N`: three stores of the sandbox (different seeds, so different data), each synced by a
 * child process into its own warehouse file (warehouseLayout "per-store"); a store whose server is gone fails
 * alone, and the command's exit code is the worst store's.
 */

/** A loopback port nothing listens on: one a server had, closed again. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * The stores' starts and ends in the order their lines reached the parent's stderr (`<store> | sync.start`,
 * `<store> | sync.done`): the parent relays a child's lines before it starts the next child.
 */
function startsAndEnds(stderr: string): { store: string; event: 'start' | 'done' }[] {
  return [...stderr.matchAll(/^(\S+) \| sync\.(start|done) /gm)].map((m) => ({
    store: m[1]!,
    event: m[2] as 'start' | 'done',
  }));
}

/** The most stores between their sync.start and sync.done at one time, by the order of those lines. */
function mostAtOnce(events: { store: string; event: 'start' | 'done' }[]): number {
  const running = new Set<string>();
  let most = 0;
  for (const { store, event } of events) {
    if (event === 'start') running.add(store);
    else running.delete(store);
    most = Math.max(most, running.size);
  }
  return most;
}

/** The rows of the per-store table `sync --parallel` prints: store → exit code and result. */
function storeRows(stdout: string): Map<string, { exit: string; result: string }> {
  const rows = new Map<string, { exit: string; result: string }>();
  for (const line of stdout.split('\n').slice(2)) {
    const match = /^\s*(\S+)\s+(\d+|null)\s+(succeeded|failed|partial|usage error|not started)\s/.exec(line);
    if (match) rows.set(match[1]!, { exit: match[2]!, result: match[3]! });
  }
  return rows;
}

describe('store-sync sync --parallel: one child process and one warehouse file per store', () => {
  const sandboxes: Sandbox[] = [];
  let dir: string;
  let cleanup: () => Promise<void>;
  const names = ['north', 'south', 'west'];
  const storeFile = (name: string) => path.join(dir, 'data', 'warehouses', `${name}.duckdb`);

  before(async () => {
    // Different seeds and sizes: each store's counts are its own, so a file holding another store's data shows.
    // Some latency on every request, as a remote API has: a store's sync takes a while. Which stores ran side
    // by side is shown by gates, not by timing (the --parallel 2 test): on a loaded machine a child that
    // started late found the other already done.
    for (const [i, seed] of [11, 22, 33].entries())
      sandboxes.push(await testSandbox({ seed, scale: 30 + 10 * i, pageSize: 25, latencyMs: 20 }));
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    for (const sandbox of sandboxes) await sandbox.close();
    await cleanup?.();
  });

  it('syncs three stores at once, each into warehouses/<store>.duckdb with its own data', async () => {
    const config = await writeConfig(dir, {
      warehouse: 'data/warehouse.duckdb',
      warehouseLayout: 'per-store',
      maxRetries: 0,
      stores: names.map((name, i) => ({ name, baseUrl: sandboxes[i]!.baseUrl })),
    });
    const result = await runCli(['sync', '--parallel', '3', '--config', config], { timeoutMs: 240_000 });
    assertExit(result, 0);
    const rows = storeRows(result.stdout);
    assert.deepEqual(
      names.map((n) => [n, rows.get(n)]),
      names.map((n) => [n, { exit: '0', result: 'succeeded' }]),
    );
    // Every child's log lines reach the parent's stderr under its store's name.
    for (const name of names) assert.match(result.stderr, new RegExp(`^${name} \\| sync\\.start `, 'm'));
    // At the same time: every store started before any finished.
    const events = startsAndEnds(result.stderr);
    const firstDone = events.findIndex((e) => e.event === 'done');
    assert.ok(firstDone > 0, result.stderr);
    assert.deepEqual(
      events
        .slice(0, firstDone)
        .map((e) => e.store)
        .sort(),
      [...names].sort(),
      `every store's sync.start precedes the first sync.done: ${JSON.stringify(events)}`,
    );
    for (const [i, name] of names.entries()) {
      const counts = await readWarehouse<{ _store: string; n: bigint | number }>(
        storeFile(name),
        'SELECT _store, count(*) AS n FROM subscriptions GROUP BY ALL',
      );
      assert.deepEqual(
        counts.map((c) => [c._store, Number(c.n)]),
        [[name, sandboxes[i]!.store.counts.subscriptions]],
      );
    }
    assert.equal(new Set(sandboxes.map((s) => s.store.counts.subscriptions)).size, 3);

    // A command on one warehouse file needs its store named: the layout's base path is no store's file.
    for (const args of [['status'], ['query', 'SELECT 1'], ['export'], ['rebuild']]) {
      const refused = await runCli([...args, '--config', config]);
      assertExit(refused, 2);
      assert.match(
        refused.stderr,
        new RegExp(
          `^error: ${args[0]}: with warehouseLayout "per-store" each store has its own warehouse file; name one with --store \\(${names.join(', ')}\\)$`,
          'm',
        ),
      );
    }
    const one = await runCli([
      'query',
      'SELECT count(*)::INTEGER AS n FROM subscriptions',
      '--config',
      config,
      '--store',
      names[1]!,
      '--format',
      'json',
    ]);
    assertExit(one, 0);
    assert.deepEqual(JSON.parse(one.stdout), [{ n: sandboxes[1]!.store.counts.subscriptions }]);
  });

  it('--parallel 2 over three stores runs two at a time, never three', async () => {
    // Every store's requests wait at a gate until two stores are waiting there, so the first two are
    // running side by side whatever the machine's load (a child that starts late cannot find the other
    // already done); the third must not have asked anything by then.
    const gates = await Promise.all(sandboxes.map((sandbox) => startGatedProxy(sandbox)));
    try {
      for (const gate of gates) gate.shut();
      const config = await writeConfig(
        dir,
        {
          warehouse: 'pairs/warehouse.duckdb',
          warehouseLayout: 'per-store',
          maxRetries: 0,
          stores: names.map((name, i) => ({ name, baseUrl: gates[i]!.baseUrl })),
        },
        'pairs.json',
      );
      const run = startCli(['sync', '--parallel', '2', '--config', config], { timeoutMs: 240_000 });
      const deadline = Date.now() + 120_000;
      const held = () => gates.filter((gate) => gate.waiting() > 0).length;
      while (held() < 2 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 50));
      assert.equal(held(), 2, `two stores wait at their gates at once: ${run.stderr()}`);
      for (const gate of gates) gate.open();
      const result = await run.done;
      assertExit(result, 0);
      const events = startsAndEnds(result.stderr);
      assert.deepEqual(
        names.map((name) => events.filter((e) => e.store === name).map((e) => e.event)),
        names.map(() => ['start', 'done']),
        JSON.stringify(events),
      );
      assert.equal(mostAtOnce(events), 2, `two stores at once, never three: ${JSON.stringify(events)}`);
    } finally {
      for (const gate of gates) await gate.close();
    }
  });

  it("one store's closed port fails that store alone; the others sync and the exit code is the worst", async () => {
    const port = await closedPort();
    const config = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        warehouseLayout: 'per-store',
        maxRetries: 0,
        stores: [
          { name: names[0]!, baseUrl: sandboxes[0]!.baseUrl },
          { name: 'gone', baseUrl: `http://127.0.0.1:${port}/api/` },
          { name: names[2]!, baseUrl: sandboxes[2]!.baseUrl },
        ],
      },
      'with-gone.json',
    );
    const result = await runCli(['sync', '--parallel', '3', '--config', config], { timeoutMs: 240_000 });
    assertExit(result, 1);
    const rows = storeRows(result.stdout);
    assert.deepEqual(rows.get(names[0]!), { exit: '0', result: 'succeeded' });
    assert.deepEqual(rows.get(names[2]!), { exit: '0', result: 'succeeded' });
    assert.deepEqual(rows.get('gone'), { exit: '1', result: 'failed' });
    assert.match(result.stderr, /^gone \| .*(ECONNREFUSED|connect|refused)/im);
    const runs = await readWarehouse<{ outcome: string }>(
      storeFile('gone'),
      'SELECT outcome FROM _sync_runs ORDER BY started_at DESC LIMIT 1',
    );
    assert.deepEqual(runs, [{ outcome: 'failed' }]);
  });

  it('schedule --parallel 2 runs each store in its own child at a tick, and stops cleanly on SIGTERM', async () => {
    const config = await writeConfig(
      dir,
      {
        warehouse: 'scheduled/warehouse.duckdb',
        warehouseLayout: 'per-store',
        maxRetries: 0,
        stores: names.slice(0, 2).map((name, i) => ({ name, baseUrl: sandboxes[i]!.baseUrl })),
      },
      'scheduled.json',
    );
    const run = startCli(
      ['schedule', '--cron', '* * * * * *', '--parallel', '2', '--config', config, '--log-format', 'json'],
      { timeoutMs: 200_000 },
    );
    // Both stores' runs of one tick are logged once both children have ended.
    await waitForStderr(run, new RegExp(`"event":"schedule\\.run"[^\\n]*"store":"${names[1]}"`), 180_000);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    const runs = events.filter((e) => e.event === 'schedule.run');
    for (const name of names.slice(0, 2))
      assert.ok(
        runs.some((r) => r.store === name && r.exitCode === 0 && r.outcome === 'succeeded'),
        JSON.stringify(runs),
      );
    // The children's own lines are JSON too: every stderr line parses (jsonLines would have thrown).
    assert.ok(events.some((e) => e.event === 'sync.start' && e.store === names[0]));
    for (const [i, name] of names.slice(0, 2).entries()) {
      const counts = await readWarehouse<{ n: number }>(
        path.join(dir, 'scheduled', 'warehouses', `${name}.duckdb`),
        'SELECT count(*)::INTEGER AS n FROM subscriptions',
      );
      assert.deepEqual(counts, [{ n: sandboxes[i]!.store.counts.subscriptions }]);
    }
  });

  it('refuses --parallel 2 when every store is in one warehouse file (one file, one writer)', async () => {
    const config = await writeConfig(
      dir,
      {
        warehouse: 'single/warehouse.duckdb',
        stores: names.map((name, i) => ({ name, baseUrl: sandboxes[i]!.baseUrl })),
      },
      'single.json',
    );
    const result = await runCli(['sync', '--parallel', '2', '--config', config]);
    assertCleanError(
      result,
      2,
      /--parallel 2: every store is in the one warehouse .*"warehouseLayout": "per-store"/,
    );
  });
});
