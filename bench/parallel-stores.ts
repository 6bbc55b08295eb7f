import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { SANDBOX_TOKEN, type SandboxProcess, seconds, spawnSandbox } from './extract-support.js';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';

/**
 * Issue 28: three stores synced with `sync --parallel 3` (warehouseLayout "per-store", a child process and a
 * file per store) take at most 1.15× the time of the slowest store synced alone. Each store is a sandbox in
 * its own process limited to RATE requests a second, with the CLI paced at the same rate: each store is paced
 * by its own limit, so parallel runs must not serialise. The stores have different seeds (and so different
 * page counts); each is first synced alone, each into a fresh folder, then all three at once into another.
 */
const RATE = 4;
const PAGE_SIZE = 20;
const TARGET = 1.15;
const BIN = fileURLToPath(new URL('../bin/store-sync.js', import.meta.url));
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
  const child = spawn(BIN, args, {
    cwd,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, [TOKEN_ENV]: SANDBOX_TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let log = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    log += chunk.toString();
  });
  const started = Date.now();
  const [code] = (await once(child, 'exit')) as [number | null];
  if (code !== 0) throw new Error(`store-sync ${args.join(' ')} exited ${code}:\n${log.slice(-2000)}`);
  return seconds(Date.now() - started);
}

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? '30' : 'small';
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
    const alone: number[] = [];
    for (const store of STORES) {
      const config = await fresh();
      alone.push(await timed(['sync', '--store', store, '--config', config], path.dirname(config)));
      log(`${store} alone: ${alone.at(-1)} s`);
    }
    const config = await fresh();
    const together = await timed(['sync', '--parallel', '3', '--config', config], path.dirname(config));
    const slowest = Math.max(...alone);
    log(
      `three stores with --parallel 3: ${together} s; slowest alone ${slowest} s; load ${os.loadavg()[0]!.toFixed(1)}`,
    );
    return [
      ratioResult(
        {
          name: 'parallel-stores',
          figure: 'sync --parallel 3 of three stores / the slowest store alone (4 rps each)',
          measured: together,
          bound: slowest,
          target: `≤ ${TARGET}`,
          extra: { alone: alone.join('/'), load: os.loadavg()[0]!.toFixed(1) },
        },
        'max',
        TARGET,
      ),
    ];
  } finally {
    for (const sandbox of sandboxes) await sandbox.close();
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  }
};

export default bench;
await runAloneIfMain(import.meta.url, bench);
