import path from 'node:path';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';
import { DOCUMENTS, prepare, step } from './warehouse-lib.js';

/**
 * `store-sync export` (every table, orders and children partitioned by month, atomic swap) of the
 * warehouse bench/ingest.ts built, against DuckDB's plain COPY of the largest table alone. No target: the
 * ratio shows what the whole export costs next to the cheapest possible single copy. Then the export's
 * peak RSS (its whole process, VmHWM) against the command's memory budget.
 */

/** The memory an export may hold, its whole process (issue 32; runtime-profile.ts, EXPORT_MEMORY_LIMIT). */
const MEMORY_BUDGET_MB = 512;
const bench: Benchmark = async ({ quick, log }) => {
  const p = await prepare(quick ? DOCUMENTS.quick : DOCUMENTS.full, log);
  log('  exporting …');
  const exported = await step(['export', p.warehouse, path.join(p.dir, 'parquet')]);
  const copied = await step(['copy', p.warehouse, p.dir]);
  const measured = exported.work ?? exported.seconds;
  const bound = copied.work ?? copied.seconds;
  return [
    {
      ...ratioResult(
        {
          name: 'export',
          figure: `export time / plain COPY of the largest table (${copied.table})`,
          measured,
          bound,
          target: 'reported',
          extra: {
            tables: Number(exported.tables),
            rows: Number(exported.rows),
            largestTableRows: Number(copied.rows),
          },
        },
        'max',
        Number.POSITIVE_INFINITY,
      ),
    },
    ratioResult(
      {
        name: 'export-memory',
        figure: `export peak RSS (MB) / the ${MEMORY_BUDGET_MB} MB budget`,
        measured: exported.peakRssMb,
        bound: MEMORY_BUDGET_MB,
        target: '≤ 1.0',
        extra: { seconds: Number(measured.toFixed(1)), documents: p.documents },
      },
      'max',
      1,
    ),
  ];
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
