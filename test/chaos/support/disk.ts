import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { assertWarehouseIsTruth } from './compare.js';
import { jobFlags, runCli, sleep, startCli, startSandboxProcess } from './processes.js';

/**
 * Scenario 6, disk trouble: the warehouse stops accepting writes in the middle of a sync. The sync runs
 * under a file-size limit (RLIMIT_FSIZE, set with util-linux `prlimit`): once the warehouse or its WAL
 * would grow past it, every write fails with EFBIG, as on a full disk, whatever the user's privileges.
 * The run must end with an error, the last committed state must stay readable, and the next run (without
 * the limit) must resume and finish with exactly the truth.
 */

export const hasPrlimit = (): boolean => spawnSync('prlimit', ['--version']).status === 0;

export interface DiskOptions {
  scale: string;
  pageSize: number;
  dir: string;
}

export interface DiskOutcome {
  limitBytes: number;
  committedSubscriptions: number;
  error: string;
}

const sizeOf = (file: string) => (existsSync(file) ? statSync(file).size : 0);

/**
 * A file-size limit that falls in the middle of a sync. A calibration run into a scratch warehouse is
 * watched for the largest size its WAL reaches: during a first sync each page's rows go to the WAL as they
 * commit (the main file stays small until the checkpoint at the end), so half of that peak is reached
 * about halfway through the run, long after the schema is in place.
 */
async function midRunLimit(baseUrl: string, dir: string): Promise<number> {
  const file = path.join(dir, 'calibrate.duckdb');
  const run = startCli(['sync', ...jobFlags(baseUrl, file)], { timeoutMs: 5 * 60_000 });
  let peak = 0;
  while (run.child.exitCode === null && run.child.signalCode === null) {
    peak = Math.max(peak, sizeOf(`${file}.wal`));
    await sleep(10);
  }
  const result = await run.done;
  assert.ok(
    result.code === 0 || result.code === 3,
    `calibration sync exited ${result.code}: ${result.stderr.slice(-800)}`,
  );
  assert.ok(peak > 0, 'the calibration run wrote a WAL');
  return Math.round(peak / 2);
}

export async function diskTrouble(options: DiskOptions): Promise<DiskOutcome> {
  const sandbox = await startSandboxProcess([
    ...['--scale', options.scale, '--page-size', String(options.pageSize), '--rate-limit', '0'],
  ]);
  try {
    const warehouse = path.join(options.dir, 'disk.duckdb');
    const sync = ['sync', ...jobFlags(sandbox.baseUrl, warehouse)];
    const limitBytes = await midRunLimit(sandbox.baseUrl, options.dir);

    const starved = await runCli(sync, {
      prefix: ['prlimit', `--fsize=${limitBytes}`, '--'],
      timeoutMs: 5 * 60_000,
    });
    assert.equal(starved.timedOut, false, 'the sync hung when the disk refused writes');
    assert.equal(starved.signal, null, `the sync died of ${starved.signal}`);
    assert.equal(starved.code, 1, `the run fails: exit ${starved.code}\n${starved.stderr.slice(-1500)}`);
    const error = starved.stderr.split('\n').find((l) => l.startsWith('error:')) ?? '';
    assert.match(
      error,
      /warehouse|write|File too large|disk/i,
      `a clear error names the problem: ${starved.stderr.slice(-1500)}`,
    );

    const read = await runCli(
      ['query', '--warehouse', warehouse, '--format', 'json', 'SELECT count(*) AS n FROM subscriptions'],
      { timeoutMs: 60_000 },
    );
    assert.equal(read.code, 0, `the last committed state is readable: ${read.stderr}`);
    const committed = Number((JSON.parse(read.stdout) as { n: number | string }[])[0]?.n);
    assert.ok(committed > 0, 'pages committed before the failure are there');

    const resumed = await runCli(sync, { timeoutMs: 5 * 60_000 });
    assert.ok(
      resumed.code === 0 || resumed.code === 3,
      `the next run finishes: exit ${resumed.code}\n${resumed.stderr.slice(-1500)}`,
    );
    assert.match(resumed.stdout, /resumed/, `the next run resumed an interrupted stream:\n${resumed.stdout}`);
    await assertWarehouseIsTruth(warehouse, sandbox.origin, options.dir, 'after the disk recovered');
    return { limitBytes, committedSubscriptions: committed, error };
  } finally {
    await sandbox.stop();
  }
}

/**
 * The disk refuses writes from the start: the schema itself cannot be written. The run must fail with an
 * error that says so (the write that failed), not with a follow-up error that hides it.
 */
export async function diskFullAtStart(options: { dir: string; limitBytes: number }): Promise<string> {
  const sandbox = await startSandboxProcess(['--scale', '50', '--rate-limit', '0']);
  try {
    const warehouse = path.join(options.dir, 'full-disk.duckdb');
    const result = await runCli(['sync', ...jobFlags(sandbox.baseUrl, warehouse)], {
      prefix: ['prlimit', `--fsize=${options.limitBytes}`, '--'],
      timeoutMs: 2 * 60_000,
    });
    assert.equal(result.timedOut, false, 'the sync hung');
    assert.equal(result.code, 1, `exit ${result.code}\n${result.stderr.slice(-1000)}`);
    const error = result.stderr.split('\n').find((l) => l.startsWith('error:')) ?? '';
    assert.match(
      error,
      /could not write|File too large|no space|disk/i,
      `the error names the failed write: ${error}`,
    );
    return error;
  } finally {
    await sandbox.stop();
  }
}
