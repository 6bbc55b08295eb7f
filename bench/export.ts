import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { dataTables } from '../src/model/index.js';
import {
  type Benchmark,
  type BenchResult,
  benchRounds,
  fromRepo,
  type ProcessRun,
  quantiles,
  ratioResult,
  runAloneIfMain,
  runCli,
  tableRows,
  timeProcess,
} from './lib.js';
import { DOCUMENTS, prepare, step } from './warehouse-lib.js';

/**
 * `store-sync export --warehouse W --out D` as users run it (every table, orders and children partitioned by
 * month, atomic swap) of the warehouse bench/warehouse-lib.ts built: the command as a whole process through
 * bin/store-sync.js's `#!` line under GNU time (bench/lib.ts runCli), start-up and its read-only open
 * included, against DuckDB's plain COPY of the largest table alone, a process of its own
 * (bench/peers/plain-copy.ts, the warehouse opened read-only too). The two alternate over BENCH_ROUNDS
 * rounds (3 by default; which runs first alternates too); the result is the median of the rounds' ratios.
 * No target: the ratio shows what the whole export costs next to the cheapest possible single copy. Then the
 * command's peak RSS (GNU time's %M, the largest of the rounds) against its memory budget.
 *
 * Diagnostic only (BENCH_EXPORT_STEP=1): the export step of bench/warehouse-child.ts, the export alone in a
 * process that is not the command, timed from its open to its close.
 */

/** The memory an export may hold, its whole process (issue 32; runtime-profile.ts, EXPORT_MEMORY_LIMIT). */
const MEMORY_BUDGET_MB = 512;
const PEER = fromRepo('dist/bench/peers/plain-copy.js');

/** The data table with the most rows, and its rows (the plain COPY's subject). */
async function largestTable(warehouse: string): Promise<{ table: string; rows: number }> {
  const rows = await tableRows(
    warehouse,
    dataTables().map((def) => def.name),
  );
  const table = Object.keys(rows).reduce((a, b) => (rows[b]! > rows[a]! ? b : a));
  return { table, rows: rows[table]! };
}

/** The tables the export wrote, from its last line ("exported N tables to DIR in S s"). */
function exportedTables(run: ProcessRun): number {
  const tables = /exported (\d+) tables/.exec(run.stdout)?.[1];
  if (!tables) throw new Error(`store-sync export did not say what it exported:\n${run.stdout.slice(-1000)}`);
  return Number(tables);
}

const bench: Benchmark = async ({ quick, log }) => {
  const p = await prepare(quick ? DOCUMENTS.quick : DOCUMENTS.full, log);
  const rounds = benchRounds(3);
  const largest = await largestTable(p.warehouse);
  log(
    `  export: ${rounds} rounds, the command against a plain COPY of ${largest.table} (${largest.rows} rows)`,
  );
  const exports: ProcessRun[] = [];
  const copies: ProcessRun[] = [];
  const ratios: number[] = [];
  let tables = 0;
  for (let round = 0; round < rounds; round++) {
    const roundDir = path.join(p.dir, `export-round-${round}`);
    await mkdir(roundDir, { recursive: true });
    const command = () =>
      runCli(
        [
          'export',
          '--warehouse',
          p.warehouse,
          '--out',
          path.join(roundDir, 'parquet'),
          '--log-format',
          'json',
        ],
        {
          cwd: roundDir,
        },
      );
    const copy = () =>
      timeProcess(process.execPath, [PEER, p.warehouse, largest.table, path.join(roundDir, 'copy.parquet')]);
    let e: ProcessRun;
    let c: ProcessRun;
    if (round % 2 === 0) {
      e = await command();
      c = await copy();
    } else {
      c = await copy();
      e = await command();
    }
    await rm(roundDir, { recursive: true, force: true });
    tables = exportedTables(e);
    exports.push(e);
    copies.push(c);
    ratios.push(e.wall / c.wall);
    log(
      `  round ${round + 1}: export ${e.wall.toFixed(2)} s (${e.cpu.toFixed(1)} CPU-s, ${Math.round(e.peakRssMb)} MB), plain COPY ${c.wall.toFixed(2)} s (${c.cpu.toFixed(1)} CPU-s, ${Math.round(c.peakRssMb)} MB): ${(e.wall / c.wall).toFixed(2)}×`,
    );
  }
  const q = quantiles(ratios);
  const exportWall = quantiles(exports.map((r) => r.wall)).median;
  const peak = Math.max(...exports.map((r) => r.peakRssMb));
  const results: BenchResult[] = [
    {
      ...ratioResult(
        {
          name: 'export',
          figure: `store-sync export wall (whole process) / plain COPY of the largest table (${largest.table}, whole process), median of ${rounds} rounds' ratios`,
          measured: Number(exportWall.toFixed(2)),
          bound: Number(quantiles(copies.map((r) => r.wall)).median.toFixed(2)),
          target: 'reported',
          extra: {
            tables,
            largestTableRows: largest.rows,
            ratioMin: Number(q.min.toFixed(2)),
            ratioMax: Number(q.max.toFixed(2)),
            exportCpuSeconds: Number(quantiles(exports.map((r) => r.cpu)).median.toFixed(1)),
            copyCpuSeconds: Number(quantiles(copies.map((r) => r.cpu)).median.toFixed(1)),
          },
        },
        'max',
        Number.POSITIVE_INFINITY,
      ),
      ratio: q.median,
    },
    ratioResult(
      {
        name: 'export-memory',
        figure: `peak RSS of the store-sync export process (MB, GNU time %M, largest of the rounds) / the ${MEMORY_BUDGET_MB} MB budget`,
        measured: Math.round(peak),
        bound: MEMORY_BUDGET_MB,
        target: '≤ 1.0',
        extra: { seconds: Number(exportWall.toFixed(1)), documents: p.documents },
      },
      'max',
      1,
    ),
  ];
  if (process.env.BENCH_EXPORT_STEP === '1') {
    const exported = await step(['export', p.warehouse, path.join(p.dir, 'parquet-step')]);
    results.push({
      name: 'export-step (diagnostic)',
      figure: 'the export alone in bench/warehouse-child.ts (not the command), open to close; seconds',
      measured: exported.work ?? exported.seconds,
      bound: exported.work ?? exported.seconds,
      ratio: 1,
      target: 'none',
      pass: true,
      extra: {
        peakRssMb: Math.round(exported.peakRssMb),
        tables: Number(exported.tables),
        rows: Number(exported.rows),
      },
    });
  }
  return results;
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
