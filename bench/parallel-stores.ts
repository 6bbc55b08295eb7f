import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_TOKEN, type SandboxProcess, spawnSandbox } from './extract-support.js';
import { type Benchmark, benchRounds, quantiles, ratioResult, runAloneIfMain, runCli } from './lib.js';

/**
 * Issue 28: three stores synced with `sync --parallel 3` (warehouseLayout "per-store", a child process and a
 * file per store) take at most 1.15× the time of the slowest store synced alone. Each store is a sandbox in
 * its own process limited to RATE requests a second, with the CLI paced at the same rate: each store is paced
 * by its own limit, so parallel runs must not serialise. The stores have different seeds (and so different
 * page counts). Each round (BENCH_ROUNDS, 3 by default) runs the three single-store syncs and the
 * `--parallel 3` sync, each into a fresh folder, in an order rotated from round to round; each round's ratio
 * is the together run over the slowest of that round's alone runs, and the result is their median.
 * Every run is `store-sync` as users run it, bin/store-sync.js through its `#!` line (bench/lib.ts runCli).
 */
const RATE = 4;
const PAGE_SIZE = 20;
const TARGET = 1.15;
const TOKEN_ENV = 'STORE_SYNC_BENCH_TOKEN';
const STORES = ['north', 'south', 'west'];

async function writeJob(dir: string, sandboxes: SandboxProcess[]): Promise<string> {
  const file = path.join(dir, 'sync.config.json');
  const config = {
    warehouse: 'data/warehouse.duckdb',
    warehouseLayout: 'per-store',
    rateLimit: RATE,
    stores: STORES.map((name, i) => ({ name, baseUrl: sandboxes[i]!.baseUrl, tokenEnv: TOKEN_ENV })),
  };
  await writeFile(file, JSON.stringify(config));
  return file;
}

async function timed(args: string[], cwd: string): Promise<number> {
  const run = await runCli(args, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, [TOKEN_ENV]: SANDBOX_TOKEN },
  });
  return run.wall;
}

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? '30' : 'small';
  const rounds = benchRounds(3);
  const sandboxes: SandboxProcess[] = [];
  const dirs: string[] = [];
  try {
    for (const seed of [7, 8, 9])
      sandboxes.push(
        await spawnSandbox([
          '--seed',
          String(seed),
          '--scale',
          scale,
          '--page-size',
          String(PAGE_SIZE),
          '--rate-limit',
          String(RATE),
          '--token',
          SANDBOX_TOKEN,
        ]),
      );
    const fresh = async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-parallel-'));
      dirs.push(dir);
      return writeJob(dir, sandboxes);
    };
    const runs = [...STORES.map((store) => ({ label: store, store })), { label: 'together', store: null }];
    const ratios: number[] = [];
    const together: number[] = [];
    const slowest: number[] = [];
    const aloneByStore = new Map<string, number[]>(STORES.map((store) => [store, []]));
    for (let round = 0; round < rounds; round++) {
      // Rotated each round, so that the --parallel run is not always first or last (the machine's mood).
      const turn = runs.map((_, i) => runs[(i + round) % runs.length]!);
      const seconds = new Map<string, number>();
      for (const { label, store } of turn) {
        const config = await fresh();
        const args = store
          ? ['sync', '--store', store, '--config', config]
          : ['sync', '--parallel', '3', '--config', config];
        seconds.set(label, await timed(args, path.dirname(config)));
      }
      const alone = STORES.map((store) => seconds.get(store)!);
      for (const [i, store] of STORES.entries()) aloneByStore.get(store)!.push(alone[i]!);
      const slow = Math.max(...alone);
      const all = seconds.get('together')!;
      together.push(all);
      slowest.push(slow);
      ratios.push(all / slow);
      log(
        `  round ${round + 1} (${turn.map((r) => r.label).join(', ')}): alone ${alone.map((t) => t.toFixed(2)).join('/')} s, --parallel 3 ${all.toFixed(2)} s, ratio ${(all / slow).toFixed(3)}; load ${os.loadavg()[0]!.toFixed(1)}`,
      );
    }
    const q = quantiles(ratios);
    return [
      {
        ...ratioResult(
          {
            name: 'parallel-stores',
            figure: `sync --parallel 3 of three stores / the slowest store alone (4 rps each), median of ${rounds} rounds' ratios`,
            measured: Number(quantiles(together).median.toFixed(2)),
            bound: Number(quantiles(slowest).median.toFixed(2)),
            target: `≤ ${TARGET}`,
            extra: {
              alone: STORES.map((store) => quantiles(aloneByStore.get(store)!).median.toFixed(2)).join('/'),
              ratioMin: Number(q.min.toFixed(3)),
              ratioMax: Number(q.max.toFixed(3)),
              load: os.loadavg()[0]!.toFixed(1),
            },
          },
          'max',
          TARGET,
        ),
        // Each round's own ratio, so that a noisy round shows; the verdict is their median.
        ratio: q.median,
        pass: q.median <= TARGET,
      },
    ];
  } finally {
    for (const sandbox of sandboxes) await sandbox.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
};

export default bench;
await runAloneIfMain(import.meta.url, bench);
