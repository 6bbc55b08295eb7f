import path from 'node:path';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';
import { DOCUMENTS, prepare, step } from './warehouse-lib.js';

/**
 * `store-sync export` (every table, orders and children partitioned by month, atomic swap) of the
 * warehouse bench/ingest.ts built, against DuckDB's plain COPY of the largest table alone. No target: the
 * ratio shows what the whole export costs next to the cheapest possible single copy.
 */
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
  ];
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
