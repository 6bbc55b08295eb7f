import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { type Benchmark, runAloneIfMain } from './lib.js';
import { writeOrderFiles } from './warehouse-data.js';
import { commandNodeFlags } from './warehouse-lib.js';

/**
 * Start-up of `store-sync query "SELECT 1"` as a user runs it (bin/store-sync.js with the Node flags of its
 * `#!` line, a whole process), against the least any program can do to answer it: `node -e` opening the
 * same warehouse with @duckdb/node-api (DuckDBInstance.create read-only, connect, run SELECT 1). Both run in
 * interleaved rounds, the order alternating, so that the machine's load weighs on both alike; the ratio is
 * taken per round and its median is held to the target.
 */

/** From this module as a source (bench/) or compiled (dist/bench/). */
const fromRepo = (file: string): string =>
  fileURLToPath(new URL(`${import.meta.url.endsWith('.js') ? '../../' : '../'}${file}`, import.meta.url));

const REPO = fromRepo('.');
const BIN = fromRepo('bin/store-sync.js');
const TARGET = 1.3;
const run = promisify(execFile);

/** Wall time of one whole process, in seconds; it must succeed. */
async function timed(args: string[]): Promise<number> {
  const started = performance.now();
  await run(process.execPath, args, { cwd: REPO, maxBuffer: 1 << 20, env: process.env });
  return (performance.now() - started) / 1000;
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
};

const bench: Benchmark = async ({ quick, log }) => {
  const rounds = Number(process.env.BENCH_ROUNDS ?? (quick ? 5 : 9));
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-query-'));
  try {
    // A real warehouse with every table, as a query meets it: a small ingest through the command.
    const docs = path.join(dir, 'docs');
    const warehouse = path.join(dir, 'warehouse.duckdb');
    await writeOrderFiles(docs, 1000, 1);
    await run(process.execPath, [BIN, 'ingest', docs, '--warehouse', warehouse], { cwd: dir });
    const command = [...commandNodeFlags(), BIN, 'query', 'SELECT 1', '--warehouse', warehouse];
    const bare = [
      '--input-type=module',
      '-e',
      `import { DuckDBInstance } from '@duckdb/node-api';
       const instance = await DuckDBInstance.create(${JSON.stringify(warehouse)}, { access_mode: 'READ_ONLY' });
       const connection = await instance.connect();
       await connection.run('SELECT 1');`,
    ];
    // One of each first, unmeasured: the files they read are then in the page cache for both.
    await timed(command);
    await timed(bare);
    const ratios: number[] = [];
    const commandTimes: number[] = [];
    const bareTimes: number[] = [];
    for (let round = 0; round < rounds; round++) {
      let c: number;
      let b: number;
      if (round % 2 === 0) {
        c = await timed(command);
        b = await timed(bare);
      } else {
        b = await timed(bare);
        c = await timed(command);
      }
      commandTimes.push(c);
      bareTimes.push(b);
      ratios.push(c / b);
      log(
        `  round ${round + 1}: query ${c.toFixed(3)} s, node -e ${b.toFixed(3)} s, ratio ${(c / b).toFixed(2)}`,
      );
    }
    const ratio = median(ratios);
    return [
      {
        name: 'query-startup',
        figure: 'store-sync query "SELECT 1" / node -e opening DuckDB (median of interleaved rounds)',
        measured: median(commandTimes),
        bound: median(bareTimes),
        ratio,
        target: `≤ ${TARGET}`,
        pass: ratio <= TARGET,
        extra: {
          rounds,
          ratioMin: Number(Math.min(...ratios).toFixed(2)),
          ratioMedian: Number(ratio.toFixed(2)),
          ratioMax: Number(Math.max(...ratios).toFixed(2)),
          load: os.loadavg()[0]!.toFixed(2),
        },
      },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
