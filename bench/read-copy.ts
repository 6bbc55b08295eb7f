import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { type Benchmark, benchRounds, quantiles, ratioResult, runAloneIfMain, runCli } from './lib.js';
import { writeOrderFiles } from './warehouse-data.js';

/**
 * Issue 28: what publishing the read copy costs beside what the run it follows cost. `store-sync ingest FILE
 * --config CFG --log-format json` of generated order documents into a new warehouse, as users run it
 * (bin/store-sync.js through its `#!` line, bench/lib.ts runCli), once per method of publishing, each with a
 * config whose readCopy names the copy's path and the method's storageCompatibility: CHECKPOINT and a file
 * copy (the default, no storageCompatibility), DuckDB's COPY FROM DATABASE into a new file in the same format,
 * and into DuckDB 1.0's format. Each run logs how long its publish took (`read_copy.published`); its ratio is
 * those seconds against the rest of the command's wall time. The methods run in an order rotated over
 * BENCH_ROUNDS rounds (3 by default); the headline is the default method's median ratio, target ≤ 0.25, the
 * others beside it. BENCH_DOCS sets the documents (default 200,000).
 */

const TOKEN_ENV = 'STORE_SYNC_BENCH_TOKEN';

/** Each method: its name, and the readCopy.storageCompatibility that selects it (none: the default). */
const METHODS = [
  ['file-copy', undefined],
  ['copy-from-database', 'v1.5.0'],
  ['copy-from-database-v1.0.0', 'v1.0.0'],
] as const;
type Method = (typeof METHODS)[number][0];

function documentCount(quick: boolean): number {
  const asked = process.env.BENCH_DOCS;
  if (asked) {
    const n = Number(asked);
    if (!Number.isSafeInteger(n) || n < 1)
      throw new Error(`BENCH_DOCS: expected a document count, got ${asked}`);
    return n;
  }
  return quick ? 20_000 : 200_000;
}

interface Published {
  wall: number;
  seconds: number;
  bytes: number;
  method: string;
}

/** One `store-sync ingest` into a fresh folder, its read copy published by `storageCompatibility`. */
async function ingestOnce(
  file: string,
  dir: string,
  storageCompatibility: string | undefined,
): Promise<Published> {
  await mkdir(dir, { recursive: true });
  const config = path.join(dir, 'sync.config.json');
  await writeFile(
    config,
    JSON.stringify({
      warehouse: path.join(dir, 'w.duckdb'),
      // The config names a store; ingest reads no API, so the address is never used.
      stores: [{ name: 'bench', baseUrl: 'http://127.0.0.1:9', tokenEnv: TOKEN_ENV }],
      readCopy: {
        path: path.join(dir, 'read.duckdb'),
        ...(storageCompatibility ? { storageCompatibility } : {}),
      },
    }),
  );
  try {
    const run = await runCli(['ingest', file, '--config', config, '--log-format', 'json'], { cwd: dir });
    const published = run.stderr
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { event: string; seconds?: number; bytes?: number; method?: string })
      .find((line) => line.event === 'read_copy.published');
    if (!published?.seconds)
      throw new Error(`the ingest published no read copy:\n${run.stderr.slice(-2000)}`);
    return {
      wall: run.wall,
      seconds: published.seconds,
      bytes: published.bytes ?? 0,
      method: published.method ?? '',
    };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

const bench: Benchmark = async ({ quick, log }) => {
  const count = documentCount(quick);
  const rounds = benchRounds(3);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-read-copy-'));
  try {
    log(`  generating ${count.toLocaleString('en')} order documents …`);
    const { paths, bytes } = await writeOrderFiles(path.join(dir, 'docs'), count, 1, 42);
    log(
      `  ${(bytes / 2 ** 20).toFixed(0)} MB; ${rounds} rounds of ${METHODS.length} ingests; load ${os.loadavg()[0]!.toFixed(2)}`,
    );
    const runs = new Map<Method, Published[]>(METHODS.map(([name]) => [name, []]));
    for (let round = 0; round < rounds; round++) {
      // Rotated each round, so that no method always follows the same one.
      const turn = METHODS.map((_, i) => METHODS[(i + round) % METHODS.length]!);
      for (const [name, storageCompatibility] of turn) {
        const run = await ingestOnce(paths[0]!, path.join(dir, `${name}-${round}`), storageCompatibility);
        runs.get(name)!.push(run);
        log(
          `  round ${round + 1} ${name} (${run.method}): ingest ${run.wall.toFixed(1)} s, publish ${run.seconds.toFixed(2)} s, ${(run.seconds / (run.wall - run.seconds)).toFixed(3)}; load ${os.loadavg()[0]!.toFixed(2)}`,
        );
      }
    }
    const ratio = (r: Published) => r.seconds / (r.wall - r.seconds);
    const methods: Record<string, number> = {};
    for (const [name] of METHODS) {
      const r = runs.get(name)!;
      methods[`${name}-s`] = Number(quantiles(r.map((m) => m.seconds)).median.toFixed(3));
      methods[`${name}-ratio`] = Number(quantiles(r.map(ratio)).median.toFixed(3));
      methods[`${name}-MB`] = Math.round(quantiles(r.map((m) => m.bytes)).median / 2 ** 20);
    }
    const headline = runs.get('file-copy')!;
    const q = quantiles(headline.map(ratio));
    const publishSeconds = quantiles(headline.map((r) => r.seconds)).median;
    const ingestSeconds = quantiles(headline.map((r) => r.wall - r.seconds)).median;
    return [
      {
        ...ratioResult(
          {
            name: `read-copy-publish-${count >= 1_000_000 ? `${count / 1_000_000}M` : `${count / 1000}k`}`,
            figure: `seconds publishing the read copy (default method) / seconds of the ingest command before it, median of ${rounds} rounds' ratios`,
            measured: Number(publishSeconds.toFixed(3)),
            bound: Number(ingestSeconds.toFixed(1)),
            target: '≤ 0.25',
            extra: {
              documents: count,
              ratioMin: Number(q.min.toFixed(3)),
              ratioMax: Number(q.max.toFixed(3)),
              ...methods,
              load: Number(os.loadavg()[0]!.toFixed(2)),
            },
          },
          'max',
          0.25,
        ),
        ratio: q.median,
        pass: q.median <= 0.25,
      },
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
