import { type Benchmark, type BenchResult, ratioResult, runAloneIfMain } from './lib.js';
import { UNKNOWN_FIELDS } from './warehouse-data.js';
import { DOCUMENTS, prepare, step } from './warehouse-lib.js';

/**
 * `store-sync ingest` of generated order documents (mixed shapes, about three lines each with taxes,
 * transactions and fulfillments) as NDJSON, against the time to read and JSON.parse the same files and
 * do nothing else; also rows loaded per second and the ingest's peak RSS (measured in its own process).
 *
 * With `--unknown-fields` (or BENCH_UNKNOWN_FIELDS=1) it then does the same with the `unknown-fields`
 * variant of the documents (bench/warehouse-data.ts: three fields the model does not map in each, kept in
 * `_extra`), reported beside the standard figures against its own read + JSON.parse bound. Those documents
 * all take the object path (the fast path leaves unknown fields to it), so the variant shows what a store
 * whose every document carries new fields costs; the targets hold for the standard documents.
 */
export const unknownFieldsSelected = (): boolean =>
  process.env.BENCH_UNKNOWN_FIELDS === '1' || process.argv.includes('--unknown-fields');

const bench: Benchmark = async ({ quick, log }) => {
  const documents = quick ? DOCUMENTS.quick : DOCUMENTS.full;
  const p = await prepare(documents, log);
  const seconds = p.ingest.work ?? p.ingest.seconds;
  const rows = Number(p.ingest.rows);
  const rowsPerSecond = rows / seconds;
  log(
    `  ingest ${seconds.toFixed(1)} s for ${rows.toLocaleString('en')} rows; bound ${p.bound.seconds.toFixed(1)} s`,
  );
  const extra = {
    documents: p.documents,
    megabytes: Math.round(p.bytes / 2 ** 20),
    rows,
    rowsPerSecond: Math.round(rowsPerSecond),
    peakRssMb: Math.round(p.ingest.peakRssMb),
  };
  const results: BenchResult[] = [
    ratioResult(
      {
        name: 'ingest',
        figure: 'ingest + normalize + load time / (read + JSON.parse of the same files)',
        measured: seconds,
        bound: p.bound.seconds,
        target: '≤ 2.0',
        extra,
      },
      'max',
      2.0,
    ),
  ];
  if (unknownFieldsSelected()) results.push(await unknownFields(documents, rows, log));
  results.push(
    ratioResult(
      {
        name: 'ingest-rows-per-second',
        figure: 'rows loaded per second / 150,000',
        measured: rowsPerSecond,
        bound: 150_000,
        target: '≥ 1.0',
      },
      'min',
      1.0,
    ),
    ratioResult(
      {
        name: 'ingest-peak-rss',
        figure: 'peak RSS of the ingest process (MB) / 512 MB',
        measured: p.ingest.peakRssMb,
        bound: 512,
        target: '≤ 1.0',
      },
      'max',
      1.0,
    ),
  );
  return results;
};

/** The `unknown-fields` variant: its ratio, and proof that `_extra` holds each unknown field of each document. */
async function unknownFields(
  documents: number,
  standardRows: number,
  log: (line: string) => void,
): Promise<BenchResult> {
  const v = await prepare(documents, log, 'unknown-fields');
  const seconds = v.ingest.work ?? v.ingest.seconds;
  const rows = Number(v.ingest.rows);
  // The same documents but for the unknown fields: the same rows, none rejected.
  if (rows !== standardRows || Number(v.ingest.rejections) !== 0)
    throw new Error(
      `the unknown-fields variant loaded ${rows} rows with ${v.ingest.rejections} rejections; the standard documents ${standardRows} rows`,
    );
  const kept = await step(['extra', v.warehouse]);
  const keptIn = Object.keys(UNKNOWN_FIELDS).map((table) => `${table} ${kept[table]}`);
  log(
    `  unknown-fields variant: ingest ${seconds.toFixed(1)} s; bound ${v.bound.seconds.toFixed(1)} s; rows with the unknown field in _extra: ${keptIn.join(', ')} (of ${documents.toLocaleString('en')} documents)`,
  );
  return ratioResult(
    {
      name: 'ingest-unknown-fields',
      figure: 'the same, each document with 3 unknown fields (root, line, line tax line)',
      measured: seconds,
      bound: v.bound.seconds,
      target: 'reported',
      extra: {
        megabytes: Math.round(v.bytes / 2 ** 20),
        rowsPerSecond: Math.round(rows / seconds),
        peakRssMb: Math.round(v.ingest.peakRssMb),
        ...Object.fromEntries(
          Object.keys(UNKNOWN_FIELDS).map((table) => [`extra:${table}`, Number(kept[table])]),
        ),
      },
    },
    'max',
    Number.POSITIVE_INFINITY,
  );
}

export default bench;

await runAloneIfMain(import.meta.url, bench);
