import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { ident } from '../src/model/sql.js';

/**
 * The shape every benchmark reports in. A ratio is always measured against a bound taken in the same
 * run on the same machine, never against a constant, because these machines are noisy.
 */
export interface BenchResult {
  /** e.g. "extract-rate-limited" */
  name: string;
  /** What was measured, in words: "wall time / (pages ÷ 4 rps)". */
  figure: string;
  /** The measured value and the bound, in the same unit (seconds, requests …). */
  measured: number;
  bound: number;
  /** measured / bound */
  ratio: number;
  /** Human-readable target, e.g. "≤ 1.10". */
  target: string;
  pass: boolean;
  /** Anything else worth printing: records/s, peak RSS, 429 count … */
  extra?: Record<string, string | number>;
}

/** A benchmark module's default export. `quick` runs a reduced size for smoke checks (BENCH_QUICK=1). */
export type Benchmark = (options: { quick: boolean; log: (line: string) => void }) => Promise<BenchResult[]>;

export function ratioResult(
  base: Omit<BenchResult, 'ratio' | 'pass'>,
  compare: 'max' | 'min' = 'max',
  targetRatio: number,
): BenchResult {
  const ratio = base.measured / base.bound;
  return { ...base, ratio, pass: compare === 'max' ? ratio <= targetRatio : ratio >= targetRatio };
}

/**
 * Lets a benchmark file run on its own (`node --import tsx bench/<name>.ts`, BENCH_QUICK=1 for reduced
 * sizes), printing its results as JSON; imported by bench/run.ts it does nothing.
 */
export async function runAloneIfMain(moduleUrl: string, bench: Benchmark): Promise<void> {
  const { pathToFileURL } = await import('node:url');
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  const quick = process.env.BENCH_QUICK === '1';
  console.log(JSON.stringify(await bench({ quick, log: (line) => console.error(line) }), null, 2));
}

/** A file of the repository, from a module of bench/ as a source (bench/) or compiled (dist/bench/). */
export function fromRepo(file: string): string {
  return fileURLToPath(
    new URL(`${import.meta.url.endsWith('.js') ? '../../' : '../'}${file}`, import.meta.url),
  );
}

/** The store-sync command as users run it: bin/store-sync.js, started through its `#!` line (NODE_FLAGS). */
export const CLI = fromRepo('bin/store-sync.js');

/** GNU time, which measures each process's CPU-seconds and peak RSS. */
const GNU_TIME = '/usr/bin/time';

/** Smallest, middle and largest of some values. */
export function quantiles(values: readonly number[]): { min: number; median: number; max: number } {
  if (values.length === 0) throw new Error('quantiles of no values');
  const sorted = [...values].sort((x, y) => x - y);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { min: sorted[0]!, median, max: sorted.at(-1)! };
}

export const median = (values: readonly number[]): number => quantiles(values).median;

/** BENCH_ROUNDS, or the default; a count ≥ 1. */
export function benchRounds(fallback: number): number {
  const rounds = Number(process.env.BENCH_ROUNDS ?? fallback);
  if (!Number.isSafeInteger(rounds) || rounds < 1)
    throw new Error(`BENCH_ROUNDS: expected a count ≥ 1, got ${process.env.BENCH_ROUNDS}`);
  return rounds;
}

export interface ProcessRun {
  /** Seconds from the spawn to the exit, as the bench process saw them. */
  wall: number;
  /** User + system CPU-seconds of the process and the children it waited for (GNU time). */
  cpu: number;
  /** Peak RSS of the largest process, in MB (GNU time's %M). */
  peakRssMb: number;
  /** Date.now() just before the spawn. */
  startedAt: number;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  /** The child's whole environment (default: this process's). */
  env?: NodeJS.ProcessEnv;
  cwd?: string;
}

/**
 * Runs `command args…` as a whole process under GNU time, to its end: its wall time, CPU-seconds and peak RSS.
 * A non-zero exit is an error naming the command, with the end of its output.
 */
export async function timeProcess(
  command: string,
  args: string[],
  options: RunOptions = {},
): Promise<ProcessRun> {
  if (!existsSync(GNU_TIME))
    throw new Error(`${GNU_TIME} (GNU time) is missing: it measures each command's CPU and peak RSS`);
  const usageDir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-time-'));
  const usageFile = path.join(usageDir, 'usage');
  try {
    const startedAt = Date.now();
    const started = performance.now();
    const child = spawn(GNU_TIME, ['-f', '%U %S %M', '-o', usageFile, command, ...args], {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: Buffer[] = [];
    const stderr: Buffer[] = [];
    child.stdout.on('data', (chunk: Buffer) => stdout.push(chunk));
    child.stderr.on('data', (chunk: Buffer) => stderr.push(chunk));
    const code = await new Promise<number | null>((resolve, reject) => {
      child.once('error', reject);
      child.once('close', resolve);
    });
    const wall = (performance.now() - started) / 1000;
    const run = { stdout: Buffer.concat(stdout).toString(), stderr: Buffer.concat(stderr).toString() };
    if (code !== 0)
      throw new Error(
        `${path.basename(command)} ${args.join(' ')} exited with ${code}:\n${run.stderr.slice(-2000)}${run.stdout.slice(-500)}`,
      );
    // GNU time writes its line last (after any "Command exited with non-zero status" line).
    const fields = (await readFile(usageFile, 'utf8')).trim().split('\n').at(-1)!.split(' ').map(Number);
    const [user, system, kb] = fields as [number, number, number];
    return { wall, cpu: user + system, peakRssMb: kb / 1024, startedAt, ...run };
  } finally {
    await rm(usageDir, { recursive: true, force: true });
  }
}

/** `store-sync args…` as users run it: bin/store-sync.js through its `#!` line, under GNU time. */
export function runCli(args: string[], options: RunOptions = {}): Promise<ProcessRun> {
  return timeProcess(CLI, args, options);
}

/**
 * Rows of each of `tables` in a DuckDB file, read back once no command holds it: what the benchmarks check
 * their contenders loaded before they compare their times.
 */
export async function tableRows(file: string, tables: readonly string[]): Promise<Record<string, number>> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  const connection = await instance.connect();
  try {
    const counts = tables.map(
      (table) => `SELECT '${table}' AS name, count(*)::BIGINT AS n FROM ${ident(table)}`,
    );
    const reader = await connection.runAndReadAll(counts.join(' UNION ALL '));
    return Object.fromEntries(reader.getRows().map(([name, n]) => [String(name), Number(n)]));
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

/** The first of `tables` whose rows differ between two counts, in words; null when every one matches. */
export function rowsDiffer(
  expected: Record<string, number>,
  found: Record<string, number>,
  tables: readonly string[],
): string | null {
  const table = tables.find((t) => expected[t] !== found[t]);
  return table === undefined ? null : `${table}: ${found[table]} rows where ${expected[table]} were expected`;
}
