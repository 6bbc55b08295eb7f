import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { openWarehouse } from '../src/load/index.js';
import type { ReadCopySettings } from '../src/load/read-copy.js';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';
import { writeOrderFiles } from './warehouse-data.js';

/**
 * Issue 28: what publishing the read copy costs beside what the run it follows cost. `store-sync ingest` of
 * generated order documents into a new warehouse, as users run it (it publishes the copy as it closes, and
 * logs how long that took); the publish's seconds against the rest of the command's wall time, target
 * ≤ 0.25. Then the methods side by side on the same warehouse, each timed by publishing again: CHECKPOINT
 * and a file copy (the default), DuckDB's COPY FROM DATABASE into a new file in the same format, and into
 * DuckDB 1.0's format (readCopy.storageCompatibility). BENCH_DOCS sets the documents (default 200,000).
 */

const run = promisify(execFile);
const CLI = fileURLToPath(new URL('../bin/store-sync.js', import.meta.url));

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

async function timePublish(warehouse: string, settings: ReadCopySettings): Promise<number> {
  const opened = await openWarehouse(warehouse);
  try {
    return (await opened.publishReadCopy(settings)).seconds;
  } finally {
    await opened.close();
  }
}

const bench: Benchmark = async ({ quick, log }) => {
  const count = documentCount(quick);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-read-copy-'));
  try {
    log(`  generating ${count.toLocaleString('en')} order documents …`);
    const { paths, bytes } = await writeOrderFiles(path.join(dir, 'docs'), count, 1, 42);
    const warehouse = path.join(dir, 'w.duckdb');
    log(`  ingesting ${(bytes / 2 ** 20).toFixed(0)} MB; load ${os.loadavg()[0]!.toFixed(2)} …`);
    const started = performance.now();
    const { stderr } = await run(
      process.execPath,
      [CLI, 'ingest', paths[0]!, '--warehouse', warehouse, '--log-format', 'json'],
      { maxBuffer: 64 << 20 },
    );
    const wall = (performance.now() - started) / 1000;
    const published = stderr
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { event: string; seconds?: number; bytes?: number })
      .find((line) => line.event === 'read_copy.published');
    if (!published?.seconds) throw new Error(`the ingest published no read copy:\n${stderr}`);
    const ingestSeconds = wall - published.seconds;
    const methods: Record<string, number> = {};
    for (const [name, storageCompatibility] of [
      ['file-copy', null],
      ['copy-from-database', 'v1.5.0'],
      ['copy-from-database-v1.0.0', 'v1.0.0'],
    ] as const) {
      const target = path.join(dir, `${name}.duckdb`);
      methods[`${name}-s`] = Number(
        (await timePublish(warehouse, { enabled: true, path: target, storageCompatibility })).toFixed(3),
      );
      methods[`${name}-MB`] = Math.round((await stat(target)).size / 2 ** 20);
      await rm(target, { force: true });
    }
    return [
      ratioResult(
        {
          name: `read-copy-publish-${count >= 1_000_000 ? `${count / 1_000_000}M` : `${count / 1000}k`}`,
          figure: 'seconds publishing the read copy / seconds of the ingest before it',
          measured: published.seconds,
          bound: ingestSeconds,
          target: '≤ 0.25',
          extra: {
            documents: count,
            warehouseMB: Math.round((published.bytes ?? 0) / 2 ** 20),
            ingestSeconds: Number(ingestSeconds.toFixed(1)),
            ...methods,
            load: Number(os.loadavg()[0]!.toFixed(2)),
          },
        },
        'max',
        0.25,
      ),
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
