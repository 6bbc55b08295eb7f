import assert from 'node:assert/strict';
import path from 'node:path';
import { exitCodeForError } from '../../../src/cli/exit-codes.js';
import { ERROR_CODES, StoreSyncError } from '../../../src/errors.js';
import { assertWarehouseIsTruth, queryFile } from './compare.js';
import { jobFlags, startCli, startSandboxProcess } from './processes.js';

/**
 * Scenario 5, two writers: two `store-sync sync` processes started at the same moment on one warehouse. One
 * runs; the other stops at once with the lock message and changes nothing (docs/warehouse.md, "Transactions
 * and one writer"); the warehouse is then exactly the truth, with one run recorded.
 */

export interface WritersOptions {
  scale: string;
  /** Sandbox latency, so the first sync is still writing when the second one starts. */
  latencyMs: number;
  dir: string;
}

/** The exit code the CLI's one mapping gives a lock conflict (src/cli/exit-codes.ts). */
export const LOCKED_EXIT = exitCodeForError(new StoreSyncError(ERROR_CODES.WAREHOUSE_LOCKED, 'locked'));

export async function twoWriters(options: WritersOptions): Promise<{ winnerMs: number; loserMs: number }> {
  const sandbox = await startSandboxProcess([
    ...['--scale', options.scale, '--rate-limit', '0', '--latency-ms', String(options.latencyMs)],
  ]);
  try {
    const warehouse = path.join(options.dir, 'shared.duckdb');
    const args = ['sync', ...jobFlags(sandbox.baseUrl, warehouse)];
    const [a, b] = [startCli(args, { timeoutMs: 5 * 60_000 }), startCli(args, { timeoutMs: 5 * 60_000 })];
    const results = await Promise.all([a.done, b.done]);
    for (const r of results) assert.equal(r.timedOut, false, 'a sync hung');
    const winners = results.filter((r) => r.code === 0 || r.code === 3);
    const losers = results.filter((r) => r.code === LOCKED_EXIT);
    assert.equal(
      winners.length,
      1,
      `exactly one sync runs: exits ${results.map((r) => r.code)}\n${results.map((r) => r.stderr.slice(-600)).join('\n---\n')}`,
    );
    assert.equal(losers.length, 1, `the other exits ${LOCKED_EXIT}: exits ${results.map((r) => r.code)}`);
    const [winner, loser] = [winners[0]!, losers[0]!];
    assert.match(
      loser.stderr,
      /another store-sync process \(pid [^)]+\) is writing to/,
      'the lock message names the other process',
    );
    assert.ok(loser.ms < winner.ms, 'the loser stopped at once, before the winner finished');
    assert.equal(loser.stdout, '', 'the loser printed no summary');

    await assertWarehouseIsTruth(warehouse, sandbox.origin, options.dir, 'two writers');
    const [runs] = await queryFile(warehouse, 'SELECT count(*) FROM w._sync_runs');
    assert.equal(Number(runs![0]), 1, 'only the winner recorded a run');
    return { winnerMs: winner.ms, loserMs: loser.ms };
  } finally {
    await sandbox.stop();
  }
}
