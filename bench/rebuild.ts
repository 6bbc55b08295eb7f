import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { dataTables } from '../src/model/index.js';
import {
  type Benchmark,
  benchRounds,
  type ProcessRun,
  quantiles,
  ratioResult,
  rowsDiffer,
  runAloneIfMain,
  runCli,
  tableRows,
} from './lib.js';
import { writeOrderFiles } from './warehouse-data.js';

/**
 * Issue 31 point 4, as users run the commands (each a whole process, bin/store-sync.js through its `#!` line,
 * bench/lib.ts runCli), in interleaved rounds on the benchmark's documents (bench/warehouse-data.ts, seed 42):
 * - **rebuild**: `store-sync rebuild` of the warehouse a fresh `store-sync ingest` of BENCH_DOCS documents
 *   (200,000 by default) made in the same round, against that ingest's time: ≤ 1.0;
 * - **merge path**: the same documents ingested again into a warehouse that already holds BENCH_MERGE_BASE
 *   documents (1,000,000 by default; the BENCH_DOCS are its first ones, so each is compared with a stored
 *   version), against the round's fresh ingest: ≤ 1.2. The base warehouse is built once and copied for each
 *   round, so every round merges into the same warehouse.
 * BENCH_QUICK=1 runs 20,000 documents into a base of 100,000. BENCH_ROUNDS (default 3).
 */
const REBUILD_TARGET = 1.0;
const MERGE_TARGET = 1.2;

function count(variable: string, fallback: number): number {
  const value = process.env[variable];
  if (value === undefined || value === '') return fallback;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${variable}: expected a document count, got ${value}`);
  return n;
}

/**
 * The tables a rebuild must leave as the ingest left them (it re-derives them). The commands' own row counts
 * cannot be compared: a rebuild stores a customer once per commit, an ingest once per batch that names it
 * (docs/ingest.md).
 */
const DATA_TABLES = dataTables().map((def) => def.name);

/**
 * The seconds the command spent publishing its read copy (its `read_copy.published` line), which grows with
 * the warehouse's size and not with the merge (docs/performance.md, "Issue 31 point 4"); null when it
 * published none.
 */
function publishSeconds(run: ProcessRun): number | null {
  const found = /read_copy\.published\b.*\bseconds=([\d.]+)/.exec(run.stderr);
  return found ? Number(found[1]) : null;
}

const seconds = (run: ProcessRun) => {
  const publish = publishSeconds(run);
  const copy = publish === null ? '' : ` (read copy ${publish.toFixed(1)} s)`;
  return `${run.wall.toFixed(1)} s${copy}, ${run.cpu.toFixed(1)} CPU-s, ${Math.round(run.peakRssMb)} MB`;
};

const bench: Benchmark = async ({ quick, log }) => {
  const docs = count('BENCH_DOCS', quick ? 20_000 : 200_000);
  const base = count('BENCH_MERGE_BASE', quick ? 100_000 : 1_000_000);
  if (base < docs) throw new Error(`BENCH_MERGE_BASE (${base}) must hold the BENCH_DOCS (${docs})`);
  const rounds = benchRounds(3);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-rebuild-'));
  try {
    log(
      `rebuild and merge path: ${docs.toLocaleString('en')} documents, a base of ${base.toLocaleString('en')}`,
    );
    // The base's first `docs` documents are the round's documents: the same generator, seed and numbers.
    const { paths: docFiles } = await writeOrderFiles(path.join(dir, 'docs'), docs, 1, 42);
    const docFile = docFiles[0]!;
    const baseFolder = path.join(dir, 'base-docs');
    await writeOrderFiles(baseFolder, base, 8, 42);
    const baseWarehouse = path.join(dir, 'base.duckdb');
    // In the scratch folder, where no sync.config.json is: each command is a one-off job on its --warehouse.
    const cli = (args: string[]) => runCli(args, { cwd: dir });
    const built = await cli(['ingest', baseFolder, '--warehouse', baseWarehouse]);
    log(`  base warehouse: ${seconds(built)}`);
    await rm(baseFolder, { recursive: true, force: true });

    const rebuildRatios: number[] = [];
    const mergeRatios: number[] = [];
    const peaks = { ingest: [] as number[], rebuild: [] as number[], merge: [] as number[] };
    const walls = { rebuild: [] as number[], merge: [] as number[] };
    for (let round = 1; round <= rounds; round++) {
      const fresh = path.join(dir, `fresh-${round}.duckdb`);
      const merged = path.join(dir, `merged-${round}.duckdb`);
      await copyFile(baseWarehouse, merged);
      // Rotated: no step always follows the same one (the page cache and the machine's load).
      const steps: Record<string, () => Promise<ProcessRun>> = {
        ingest: () => cli(['ingest', docFile, '--warehouse', fresh]),
        merge: () => cli(['ingest', docFile, '--warehouse', merged]),
      };
      const order = round % 2 === 1 ? ['ingest', 'merge'] : ['merge', 'ingest'];
      const runs: Record<string, ProcessRun> = {};
      for (const step of order) runs[step] = await steps[step]!();
      const ingested = await tableRows(fresh, DATA_TABLES);
      // The rebuild needs the fresh warehouse, so it comes after the ingest that made it.
      runs.rebuild = await cli(['rebuild', '--warehouse', fresh]);
      const { ingest, merge, rebuild } = runs as Record<'ingest' | 'merge' | 'rebuild', ProcessRun>;
      // A rebuild that loaded less would be faster for the wrong reason.
      const differs = rowsDiffer(ingested, await tableRows(fresh, DATA_TABLES), DATA_TABLES);
      if (differs) throw new Error(`the rebuild's tables differ from the ingest's: ${differs}`);
      rebuildRatios.push(rebuild.wall / ingest.wall);
      mergeRatios.push(merge.wall / ingest.wall);
      walls.rebuild.push(rebuild.wall);
      walls.merge.push(merge.wall);
      peaks.ingest.push(ingest.peakRssMb);
      peaks.rebuild.push(rebuild.peakRssMb);
      peaks.merge.push(merge.peakRssMb);
      log(
        `  round ${round} (${order.join(', ')}, rebuild): ingest ${seconds(ingest)}; merge ${seconds(merge)} (${mergeRatios.at(-1)!.toFixed(3)}); rebuild ${seconds(rebuild)} (${rebuildRatios.at(-1)!.toFixed(3)}); load ${os.loadavg()[0]!.toFixed(1)}`,
      );
      await rm(merged, { force: true });
      await rm(fresh, { force: true });
      await rm(`${fresh.replace(/\.duckdb$/, '')}.read.duckdb`, { force: true });
      await rm(`${merged.replace(/\.duckdb$/, '')}.read.duckdb`, { force: true });
    }
    const result = (
      name: string,
      figure: string,
      ratios: number[],
      target: number,
      peak: number[],
      wall: number[],
    ) => {
      const q = quantiles(ratios);
      const measured = quantiles(wall).median;
      return ratioResult(
        {
          name,
          figure,
          // The bound is what the median ratio measured the median wall time against.
          measured,
          bound: measured / q.median,
          target: `≤ ${target}`,
          extra: {
            rounds,
            ratioMin: Number(q.min.toFixed(3)),
            ratioMax: Number(q.max.toFixed(3)),
            peakRssMb: Math.round(Math.max(...peak)),
            load: Number(os.loadavg()[0]!.toFixed(1)),
          },
        },
        'max',
        target,
      );
    };
    return [
      result(
        'rebuild',
        `store-sync rebuild / store-sync ingest of the same ${docs.toLocaleString('en')} documents, median of ${rounds} rounds`,
        rebuildRatios,
        REBUILD_TARGET,
        peaks.rebuild,
        walls.rebuild,
      ),
      result(
        'merge-path',
        `store-sync ingest of ${docs.toLocaleString('en')} documents into a warehouse of ${base.toLocaleString('en')} that holds them / into an empty one, median of ${rounds} rounds`,
        mergeRatios,
        MERGE_TARGET,
        peaks.merge,
        walls.merge,
      ),
    ];
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;
await runAloneIfMain(import.meta.url, bench);
