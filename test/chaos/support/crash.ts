import assert from 'node:assert/strict';
import path from 'node:path';
import { assertSameTables, compareWarehouses } from './compare.js';
import {
  type RunningCli,
  seededRandom,
  sleep,
  startCli,
  startSandboxProcess,
  waitFor,
  writeConfig,
} from './processes.js';

/**
 * Scenario 2, crash loop: one backfill, SIGKILLed at random moments and restarted each time until it has been
 * killed `kills` times, then left to finish. Its warehouse must equal that of the same backfill run once
 * without interruption, row for row (docs/operations.md, "What a run promises": atomic progress). Kills land
 * everywhere: during start-up, the schema check and WAL replay (a fifth of them, early), and mid-extraction
 * between or during commits.
 */

export interface CrashOptions {
  scale: string;
  pageSize: number;
  kills: number;
  from: string;
  to: string;
  dir: string;
  seed: number;
}

export interface CrashOutcome {
  kills: number;
  earlyKills: number;
  uninterruptedMs: number;
  totalMs: number;
}

const OK_CODES = new Set([0, 3]);

/** The moment a run is past start-up and extracting (its first stream log line). */
const extracting = (run: RunningCli) => /stream\.(start|resume)/.test(run.stderrSoFar());

export async function crashLoop(options: CrashOptions): Promise<CrashOutcome> {
  const random = seededRandom(options.seed);
  const sandbox = await startSandboxProcess([
    ...['--scale', options.scale, '--page-size', String(options.pageSize), '--rate-limit', '0'],
  ]);
  let current: RunningCli | null = null;
  try {
    const uninterrupted = path.join(options.dir, 'uninterrupted.duckdb');
    const killed = path.join(options.dir, 'killed.duckdb');
    const args = async (warehouse: string) => [
      ...['backfill', '--config', await writeConfig(options.dir, { baseUrl: sandbox.baseUrl, warehouse })],
      ...['--from', options.from, '--to', options.to, '--log-format', 'json'],
    ];

    const started = Date.now();
    const uninterruptedRun = startCli(await args(uninterrupted));
    current = uninterruptedRun;
    await Promise.race([
      uninterruptedRun.done,
      waitFor(() => extracting(uninterruptedRun), 60_000, 'the backfill to start'),
    ]);
    const extractionStarted = Date.now();
    const reference = await uninterruptedRun.done;
    const uninterruptedMs = Date.now() - started;
    // The extraction alone, without start-up: kills are timed from the start of extraction, so start-up
    // (process, loader, DuckDB) must not count, or a quick extraction could finish between kills.
    const extractionMs = Date.now() - extractionStarted;
    assert.ok(
      OK_CODES.has(reference.code ?? -1),
      `uninterrupted backfill exited ${reference.code}: ${reference.stderr.slice(-1500)}`,
    );

    // A kill after start-up waits at most this long: the kills together let about half of the work through
    // (restarts re-read the page in flight, and machines slow down), so the backfill cannot finish before it
    // has been killed often enough, and the last run finishes the rest.
    const window = (1.3 * extractionMs) / options.kills;
    const killedArgs = await args(killed);
    let kills = 0;
    let earlyKills = 0;
    for (;;) {
      const run = startCli(killedArgs);
      current = run;
      if (kills >= options.kills) {
        const last = await run.done;
        assert.ok(
          OK_CODES.has(last.code ?? -1),
          `final resumed backfill exited ${last.code}: ${last.stderr.slice(-1500)}`,
        );
        break;
      }
      // Every fifth kill lands during start-up (opening the file, replaying the WAL, checking the schema).
      const early = kills % 5 === 4;
      const exited = run.done.then(() => true);
      if (early) {
        await Promise.race([exited, sleep(50 + random() * 1500)]);
      } else {
        await Promise.race([exited, waitFor(() => extracting(run), 60_000, 'the backfill to start')]);
        await Promise.race([exited, sleep(random() * window)]);
      }
      if (run.child.exitCode !== null) {
        const result = await run.done;
        assert.fail(
          `the backfill finished (exit ${result.code}) after only ${kills} kills; make it larger. ${result.stderr.slice(-500)}`,
        );
      }
      run.child.kill('SIGKILL');
      const result = await run.done;
      assert.equal(result.signal, 'SIGKILL', 'the run was killed, not ended by itself');
      kills++;
      if (early) earlyKills++;
    }
    assertSameTables(await compareWarehouses(killed, uninterrupted), `after ${kills} kills`);
    return { kills, earlyKills, uninterruptedMs, totalMs: Date.now() - started };
  } finally {
    // A failed assertion must not leave a backfill running behind the test.
    if (current && current.child.exitCode === null && current.child.signalCode === null) {
      current.child.kill('SIGKILL');
      await current.done;
    }
    await sandbox.stop();
  }
}
