import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_TOKEN, spawnSandbox } from './extract-support.js';
import { changeOnePercent } from './incremental.js';
import { type Benchmark, benchRounds, quantiles, ratioResult, runAloneIfMain, runCli } from './lib.js';

/**
 * Issue 27: what keeping history costs a nightly run. Two warehouses of the same store (a large sandbox in its
 * own process), one with history (the default) and one with `keepHistory: false`, are each fully synced once;
 * then each round changes 1 % of the store (bench/incremental.ts changeOnePercent) and runs the incremental
 * `store-sync sync` of both, as whole processes (bin/store-sync.js through its `#!` line, bench/lib.ts runCli),
 * in an order alternated from round to round, against the same changed store. A round's ratio is the run with
 * history over the run without; the result is their median (BENCH_ROUNDS, 3 by default).
 */
const TARGET = 1.2;
const TOKEN_ENV = 'STORE_SYNC_BENCH_TOKEN';

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'medium' : 'large';
  const rounds = benchRounds(3);
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', '0']);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-history-'));
  try {
    const configOf = async (name: string, keepHistory: boolean) => {
      const file = path.join(dir, `${name}.config.json`);
      await writeFile(
        file,
        JSON.stringify({
          warehouse: path.join(dir, `${name}.duckdb`),
          rateLimit: 0,
          keepHistory,
          stores: [{ name: 'bench', baseUrl: sandbox.baseUrl, tokenEnv: TOKEN_ENV }],
        }),
      );
      return file;
    };
    const withHistory = await configOf('with-history', true);
    const without = await configOf('without-history', false);
    const sync = async (config: string) => {
      // runCli fails on a non-zero exit, naming the command.
      return runCli(['sync', '--config', config], { env: { ...process.env, [TOKEN_ENV]: SANDBOX_TOKEN } });
    };
    log(`history-cost: ${scale} store, a full sync of each warehouse, then ${rounds} rounds of 1 % changed`);
    const fullWith = await sync(withHistory);
    const fullWithout = await sync(without);
    log(`  full sync: with history ${fullWith.wall.toFixed(1)} s, without ${fullWithout.wall.toFixed(1)} s`);
    const ratios: number[] = [];
    const walls = { with: [] as number[], without: [] as number[] };
    for (let round = 0; round < rounds; round++) {
      await changeOnePercent(sandbox, scale, 100 + round);
      const order = round % 2 === 0 ? ['with', 'without'] : ['without', 'with'];
      const wall: Record<string, number> = {};
      for (const which of order) wall[which] = (await sync(which === 'with' ? withHistory : without)).wall;
      walls.with.push(wall.with!);
      walls.without.push(wall.without!);
      ratios.push(wall.with! / wall.without!);
      log(
        `  round ${round + 1} (${order.join(', ')}): with history ${wall.with!.toFixed(2)} s, without ${wall.without!.toFixed(2)} s, ratio ${ratios.at(-1)!.toFixed(3)}; load ${os.loadavg()[0]!.toFixed(1)}`,
      );
    }
    const ratio = quantiles(ratios);
    const withMedian = quantiles(walls.with).median;
    return [
      ratioResult(
        {
          name: 'history-cost',
          figure: `incremental sync after 1 % changed, ${scale} store, with history / without (keepHistory false), median of ${rounds} rounds' ratios`,
          measured: withMedian,
          bound: withMedian / ratio.median,
          target: `≤ ${TARGET}`,
          extra: {
            ratioMin: Number(ratio.min.toFixed(3)),
            ratioMax: Number(ratio.max.toFixed(3)),
            withSeconds: walls.with.map((s) => s.toFixed(2)).join('/'),
            withoutSeconds: walls.without.map((s) => s.toFixed(2)).join('/'),
            load: Number(os.loadavg()[0]!.toFixed(1)),
          },
        },
        'max',
        TARGET,
      ),
    ];
  } finally {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;
await runAloneIfMain(import.meta.url, bench);
