import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';
import { DOCUMENTS, prepare } from './warehouse-lib.js';

/**
 * `store-sync ingest` of generated order documents (mixed shapes, about three lines each with taxes,
 * transactions and fulfillments) as NDJSON, against the time to read and JSON.parse the same files and
 * do nothing else; also rows loaded per second and the ingest's peak RSS (measured in its own process).
 */
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
  return [
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
  ];
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
