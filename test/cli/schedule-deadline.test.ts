import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  startCli,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * The run bound under `schedule` (docs/reliability.md, "Hardening"): a run still going after maxRunMinutes is
 * stopped the way SIGTERM stops one (at a page boundary, recorded as interrupted), the schedule goes on, and
 * the next run resumes the pass where the stopped one left it, until one completes.
 */

describe('store-sync schedule with maxRunMinutes', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    // One product a page and 250 ms a request: the 8 products take at least 2 s, more than the 1.8 s a run may
    // take.
    sandbox = await testSandbox({ scale: 10, pageSize: 1, latencyMs: 250 });
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('stops a run at its bound, records it interrupted, and the next run resumes and completes', async () => {
    const warehouse = path.join(dir, 'bounded.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      maxRunMinutes: 0.03,
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
      { timeoutMs: 150_000 },
    );
    await waitForStderr(run, /"event":"schedule\.run"[^\n]*"outcome":"succeeded"/, 120_000);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    const runs = events.filter((e) => e.event === 'schedule.run');
    const first = runs[0]!;
    assert.equal(first.outcome, 'interrupted', JSON.stringify(runs));
    assert.equal(first.stoppedBy, 'maxRunMinutes');
    const stopping = events.find((e) => e.event === 'schedule.run_stopping');
    assert.match(String(stopping?.message), /went on past maxRunMinutes \(0\.03 min\)/);
    // The schedule went on: a later run resumed the pass and one completed it.
    const resumedAt = events.findIndex((e) => e.event === 'stream.resume' && e.stream === 'products');
    assert.ok(resumedAt > events.indexOf(first), 'a later run resumed the stopped pass');
    // A tick a second: another run may have begun before the SIGTERM, which then interrupts it.
    const completed = runs.findIndex((r) => r.outcome === 'succeeded');
    assert.ok(completed > 0, JSON.stringify(runs));
    for (const later of runs.slice(completed + 1)) assert.notEqual(later.outcome, 'failed');
    assert.equal(events.at(-1)!.event, 'schedule.stop');

    const recorded = await readWarehouse<{ outcome: string; counts: string }>(
      warehouse,
      'SELECT outcome, counts::VARCHAR AS counts FROM _sync_runs ORDER BY started_at',
    );
    assert.equal(recorded[0]!.outcome, 'interrupted');
    const stopped = JSON.parse(recorded[0]!.counts).products;
    assert.equal(stopped.status, 'interrupted');
    assert.match(stopped.message, /maxRunMinutes/);
    const done = recorded.find((r) => r.outcome === 'succeeded')!;
    assert.equal(JSON.parse(done.counts).products.resumed, true);
    // Every product once, loaded across the runs.
    const [{ n, keys }] = (await readWarehouse<{ n: bigint; keys: bigint }>(
      warehouse,
      'SELECT count(*) AS n, count(DISTINCT id) AS keys FROM products WHERE _deleted_at IS NULL',
    )) as [{ n: bigint; keys: bigint }];
    assert.equal(Number(n), sandbox.store.counts.products);
    assert.equal(Number(keys), Number(n));
  });

  it('never leaks the token', () => {
    assertNoSecretsOrEscapes();
  });
});
