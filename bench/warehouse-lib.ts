import { execFile } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { MALLOC_ENV, NODE_FLAGS } from '../src/load/runtime-profile.js';
import { type DocumentVariant, writeOrderFiles } from './warehouse-data.js';

/**
 * Shared by bench/ingest.ts, bench/rebuild.ts and bench/export.ts: the generated documents and the ingested
 * warehouse, built once per process and size (bench/run.ts runs the three in one process), and the
 * child-process runner for each measured step.
 */

export const DOCUMENTS = { full: 1_000_000, quick: 20_000 };

/** A file of the repository, from this module as a source (bench/) or compiled (dist/bench/). */
const fromRepo = (file: string): URL =>
  new URL(`${import.meta.url.endsWith('.js') ? '../../' : '../'}${file}`, import.meta.url);

/**
 * The measured steps run compiled (dist/, `npm run build`, which `npm run bench` runs first), as the
 * store-sync command does: through the TypeScript loader, an ingest holds some 40 MB more, in the loader's
 * threads.
 */
const CHILD = fileURLToPath(fromRepo('dist/bench/warehouse-child.js'));
const run = promisify(execFile);

/** The Node flags the store-sync command runs with (its `#!` line holds the same, see NODE_FLAGS). */
export function commandNodeFlags(): string[] {
  return [...NODE_FLAGS];
}

/** This process's environment with the allocator settings the command runs with (its `#!` line, MALLOC_ENV). */
export function commandEnv(): NodeJS.ProcessEnv {
  return { ...process.env, ...MALLOC_ENV };
}

export interface StepResult {
  seconds: number;
  work?: number;
  peakRssMb: number;
  [key: string]: unknown;
}

export async function step(args: string[]): Promise<StepResult> {
  if (!existsSync(CHILD)) throw new Error(`${CHILD} is missing: run \`npm run build\` first`);
  const { stdout } = await run(process.execPath, [...commandNodeFlags(), CHILD, ...args], {
    maxBuffer: 1 << 20,
    env: commandEnv(),
  });
  return JSON.parse(stdout.trim().split('\n').at(-1)!) as StepResult;
}

export interface Prepared {
  variant: DocumentVariant;
  dir: string;
  docs: string;
  warehouse: string;
  documents: number;
  bytes: number;
  bound: StepResult;
  ingest: StepResult;
}

const prepared = new Map<string, Promise<Prepared>>();

/**
 * Documents of a variant (bench/warehouse-data.ts) written, read+parse bound measured and ingested (each once
 * per size and variant in this process).
 */
export function prepare(
  documents: number,
  log: (line: string) => void,
  variant: DocumentVariant = 'standard',
): Promise<Prepared> {
  const key = `${documents}:${variant}`;
  let ready = prepared.get(key);
  if (!ready) {
    ready = (async () => {
      const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-'));
      // 'exit' handlers cannot wait for promises: the removal has to be synchronous.
      process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
      const docs = path.join(dir, 'docs');
      log(`  generating ${documents.toLocaleString('en')} order documents (${variant}) …`);
      const { bytes } = await writeOrderFiles(docs, documents, 8, 42, variant);
      log(`  ${(bytes / 2 ** 20).toFixed(0)} MB of NDJSON; measuring read + JSON.parse …`);
      const bound = await step(['bound', docs]);
      const warehouse = path.join(dir, 'warehouse.duckdb');
      log(`  ingesting (bound ${bound.seconds.toFixed(1)} s) …`);
      const ingest = await step(['ingest', docs, warehouse]);
      return { variant, dir, docs, warehouse, documents, bytes, bound, ingest };
    })();
    prepared.set(key, ready);
  }
  return ready;
}

export async function cleanup(p: Prepared): Promise<void> {
  await rm(p.dir, { recursive: true, force: true });
}
