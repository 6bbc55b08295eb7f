import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';
import { DOCUMENTS, prepare, step } from './warehouse-lib.js';

/** `store-sync rebuild` of the warehouse bench/ingest.ts built, against that ingest's time. */
const bench: Benchmark = async ({ quick, log }) => {
  const p = await prepare(quick ? DOCUMENTS.quick : DOCUMENTS.full, log);
  log('  rebuilding …');
  const rebuild = await step(['rebuild', p.warehouse]);
  const seconds = rebuild.work ?? rebuild.seconds;
  const ingest = p.ingest.work ?? p.ingest.seconds;
  if (rebuild.rows !== p.ingest.rows)
    throw new Error(`rebuild loaded ${rebuild.rows} rows, ingest ${p.ingest.rows}`);
  return [
    ratioResult(
      {
        name: 'rebuild',
        figure: 'rebuild time / ingest time of the same documents',
        measured: seconds,
        bound: ingest,
        target: '≤ 1.0',
        extra: { rows: Number(rebuild.rows), peakRssMb: Math.round(rebuild.peakRssMb) },
      },
      'max',
      1.0,
    ),
  ];
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
