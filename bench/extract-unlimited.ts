import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { API_VERSION_HEADER } from '../schemas/headers.js';
import { emptyStreamState } from '../src/contracts.js';
import { ApiClient, DEFAULT_MAX_IN_FLIGHT, STREAMS } from '../src/extract/index.js';
import { defaultStreamOptions } from '../src/streams.js';
import {
  ALL_STREAMS,
  SANDBOX_TOKEN,
  type SandboxProcess,
  seconds,
  spawnSandbox,
  syncAll,
} from './extract-support.js';
import {
  type Benchmark,
  type BenchResult,
  benchRounds,
  fromRepo,
  median,
  type ProcessRun,
  ratioResult,
  runAloneIfMain,
  runCli,
  timeProcess,
} from './lib.js';
import type { BareSpec } from './peers/bare-download.js';

/**
 * `store-sync sync` as users run it, against the bare download of the same pages. A large store served with
 * 20 ms latency and no rate limit is synced by the CLI (bin/store-sync.js through its `#!` line, with its Node
 * flags) as a process of its own into a fresh warehouse, and downloaded by a bare undici loop (bench/peers/bare-download.ts), also a process of
 * its own, that follows the same chains (the sync's plan: each slice's first page, then the `next` links)
 * with the same concurrency and only parses the pages. The two alternate in rounds (BENCH_ROUNDS, 3 by
 * default; the first of each round alternates too), after one bare warm-up of the sandbox's caches. Each
 * round's ratio is the sync's wall time over the bare loop's; the result is their median, with min and max,
 * each process's CPU seconds and peak RSS (GNU time, bench/lib.ts) beside it.
 *
 * Diagnostic only (BENCH_NOOP_COMMIT=1): the extraction alone in this process with a commit that does
 * nothing, which is not a program users run.
 */

// Built beside the CLI (tsconfig.build.json includes bench/): the peer runs as plain JavaScript, as the CLI does,
// but with node's defaults: the CLI's Node flags (its `#!` line, NODE_FLAGS) are the CLI's own.
const PEER = fromRepo('dist/bench/peers/bare-download.js');
const TOKEN_ENV = 'STORE_SYNC_BENCH_TOKEN';

/** The chains a sync of a fresh warehouse reads (every stream's plan), for the bare loop. */
function bareSpec(baseUrl: string, now: Date): BareSpec {
  const client = new ApiClient({ baseUrl, token: SANDBOX_TOKEN, rateLimit: 0 });
  const spec: BareSpec = {
    token: SANDBOX_TOKEN,
    versionHeader: API_VERSION_HEADER,
    connections: DEFAULT_MAX_IN_FLIGHT,
    streams: ALL_STREAMS.map((name) => {
      const stream = STREAMS[name];
      const options = defaultStreamOptions(name);
      const plan = stream.plan({ mode: 'incremental', state: emptyStreamState(), options, now });
      return {
        name,
        version: stream.operation.version,
        concurrency: options.concurrency,
        startUrls: plan.slices.map((slice) => client.operationUrl(stream.operation, {}, slice.params).href),
      };
    }),
  };
  void client.close();
  return spec;
}

/** Pages the sync read, from its `stream.done` log lines. */
function syncedPages(stderr: string): number {
  let pages = 0;
  for (const line of stderr.split('\n')) {
    if (!line.startsWith('{')) continue;
    const event = JSON.parse(line) as { event?: string; pages?: number };
    if (event.event === 'stream.done') pages += event.pages ?? 0;
  }
  return pages;
}

async function noopCommitDiagnostic(sandbox: SandboxProcess, scale: string): Promise<BenchResult> {
  const client = new ApiClient({ baseUrl: sandbox.baseUrl, token: SANDBOX_TOKEN, rateLimit: 0 });
  try {
    const started = performance.now();
    const outcome = await syncAll(client, 'full_refresh', new Date());
    const ms = performance.now() - started;
    return {
      name: 'extract-unlimited-noop-commit (diagnostic)',
      figure: `extraction alone in the bench process, commits doing nothing (not a program users run), ${scale} store; seconds`,
      measured: seconds(ms),
      bound: seconds(ms),
      ratio: 1,
      target: 'none',
      pass: true,
      extra: { pages: outcome.pages, records: outcome.records },
    };
  } finally {
    await client.close();
  }
}

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'medium' : 'large';
  const rounds = benchRounds(3);
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', '0', '--latency-ms', '20']);
  const dir = await mkdtemp(path.join(tmpdir(), 'store-sync-bench-unlimited-'));
  try {
    log(`extract-unlimited: ${scale} store, no rate limit, 20 ms latency, ${rounds} rounds`);
    const specFile = path.join(dir, 'bare.json');
    await writeFile(specFile, JSON.stringify(bareSpec(sandbox.baseUrl, new Date())));
    const bare = async () => {
      const run = await timeProcess(process.execPath, [PEER, specFile]);
      return { ...run, ...(JSON.parse(run.stdout) as { pages: number; records: number }) };
    };
    const warm = await bare(); // JIT of the sandbox, its lazy caches
    log(`  warm-up bare download: ${warm.wall.toFixed(1)} s, ${warm.pages} pages`);
    const syncs: ProcessRun[] = [];
    const bares: (ProcessRun & { pages: number; records: number })[] = [];
    const ratios: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const sync = async () => {
        const roundDir = await mkdtemp(path.join(dir, 'round-'));
        const config = path.join(roundDir, 'sync.config.json');
        await writeFile(
          config,
          JSON.stringify({
            rateLimit: 0,
            warehouse: path.join(roundDir, 'warehouse.duckdb'),
            stores: [{ name: 'bench', baseUrl: sandbox.baseUrl, tokenEnv: TOKEN_ENV }],
          }),
        );
        const run = await runCli(['sync', '--config', config, '--log-format', 'json'], {
          env: { ...process.env, [TOKEN_ENV]: SANDBOX_TOKEN },
        });
        await rm(roundDir, { recursive: true, force: true });
        return run;
      };
      let s: ProcessRun;
      let b: Awaited<ReturnType<typeof bare>>;
      if (round % 2 === 0) {
        s = await sync();
        b = await bare();
      } else {
        b = await bare();
        s = await sync();
      }
      const pages = syncedPages(s.stderr);
      if (pages !== b.pages)
        throw new Error(
          `the sync read ${pages} pages and the bare loop ${b.pages}: they must read the same pages`,
        );
      syncs.push(s);
      bares.push(b);
      ratios.push(s.wall / b.wall);
      log(
        `  round ${round + 1}: sync ${s.wall.toFixed(1)} s (${s.cpu.toFixed(1)} CPU-s, ${Math.round(s.peakRssMb)} MB), bare ${b.wall.toFixed(1)} s (${b.cpu.toFixed(1)} CPU-s, ${Math.round(b.peakRssMb)} MB), ${pages} pages: ${(s.wall / b.wall).toFixed(2)}×`,
      );
    }
    const syncSeconds = median(syncs.map((r) => r.wall));
    const bareSeconds = median(bares.map((r) => r.wall));
    const peakRss = Math.max(...syncs.map((r) => r.peakRssMb));
    const results: BenchResult[] = [
      {
        ...ratioResult(
          {
            name: 'extract-unlimited',
            figure: `store-sync sync (whole process, into a warehouse) / bare undici download of the same pages, ${scale} store, 20 ms latency; median of ${rounds} rounds' ratios`,
            measured: Number(syncSeconds.toFixed(2)),
            bound: Number(bareSeconds.toFixed(2)),
            target: '≤ 1.25',
          },
          'max',
          1.25,
        ),
        // Each round's own ratio, so a noisy round shows; the verdict is their median.
        ratio: median(ratios),
        pass: median(ratios) <= 1.25,
        extra: {
          pages: bares[0]!.pages,
          records: bares[0]!.records,
          'ratio min': Number(Math.min(...ratios).toFixed(3)),
          'ratio median': Number(median(ratios).toFixed(3)),
          'ratio max': Number(Math.max(...ratios).toFixed(3)),
          'sync CPU-s (median)': Number(median(syncs.map((r) => r.cpu)).toFixed(1)),
          'bare CPU-s (median)': Number(median(bares.map((r) => r.cpu)).toFixed(1)),
          'sync peak RSS MB (max)': Math.round(peakRss),
          'bare peak RSS MB (max)': Math.round(Math.max(...bares.map((r) => r.peakRssMb))),
        },
      },
      ratioResult(
        {
          name: 'extract-unlimited-peak-rss',
          figure: 'peak RSS of the store-sync sync process (MB, largest of the rounds) / 512 MB',
          measured: Math.round(peakRss),
          bound: 512,
          target: '≤ 1.0',
        },
        'max',
        1.0,
      ),
    ];
    if (process.env.BENCH_NOOP_COMMIT === '1') results.push(await noopCommitDiagnostic(sandbox, scale));
    return results;
  } finally {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
