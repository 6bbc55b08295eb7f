import type { DrainRun } from '../../../pipelines/drain.js';
import type { IngestFileResult, IngestSummary } from '../../../pipelines/ingest.js';
import type { RunSummary, StoreLine, SummaryRow } from '../output.js';

/**
 * The table `ingest` prints (without --json): a row per file, as `sync` prints a row per stream
 * (src/cli/output.ts renderRunSummary), and a line per store.
 */

/** Files listed one by one; past these, the rest are added up per status, so a folder of thousands stays short. */
export const FILE_ROWS = 20;

const COUNTS = ['documents', 'rejections'];

const counted = (label: string, counts: Record<string, number> | undefined) =>
  counts && Object.keys(counts).length
    ? `${label} ${Object.entries(counts)
        .map(([name, n]) => `${name} ${n}`)
        .join(', ')}`
    : '';

function fileRows(store: string, files: readonly (IngestFileResult & { then?: string })[]): SummaryRow[] {
  const rows: SummaryRow[] = files.slice(0, FILE_ROWS).map((f) => ({
    store,
    part: f.path,
    status: f.status,
    counts: [f.documents, f.rejections],
    note: [f.then ?? '', counted('skipped', f.skipped), counted('unknown versions:', f.unknownVersions)]
      .filter(Boolean)
      .join('; '),
  }));
  const rest = new Map<string, { files: number; documents: number; rejections: number }>();
  for (const f of files.slice(FILE_ROWS)) {
    const sum = rest.get(f.status) ?? { files: 0, documents: 0, rejections: 0 };
    rest.set(f.status, {
      files: sum.files + 1,
      documents: sum.documents + f.documents,
      rejections: sum.rejections + f.rejections,
    });
  }
  for (const [status, sum] of rest)
    rows.push({
      store,
      part: `… ${plural(sum.files, 'more file')}`,
      status,
      counts: [sum.documents, sum.rejections],
      note: '',
    });
  return rows;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

const figures = (s: { files: unknown[]; documents: number; rows: number }) => [
  plural(s.files.length, 'file'),
  plural(s.documents, 'document'),
  plural(s.rows, 'row'),
];

/** One ingest run of `store`. */
export function ingestSummary(
  store: string,
  summary: IngestSummary,
  run: { outcome: string; seconds: number; runId: string },
): RunSummary {
  return {
    part: 'file',
    counts: COUNTS,
    rows: fileRows(store, summary.files),
    stores: [
      {
        store,
        outcome: run.outcome,
        seconds: run.seconds,
        details: figures(summary),
        ref: `run ${run.runId}`,
        newFields: summary.newFields,
      },
    ],
  };
}

/** A drain of each spool (`ingest --spool`): its files, and a line per spool with that drain's outcome and time. */
export function drainSummary(drains: readonly DrainRun[]): RunSummary {
  return {
    part: 'file',
    counts: COUNTS,
    rows: drains.flatMap((d) => fileRows(d.store, d.files)),
    stores: drains.map(
      (d): StoreLine => ({
        store: d.store,
        outcome: d.outcome,
        seconds: d.seconds,
        details: figures(d),
        ref: `spool ${d.spoolDir}`,
        newFields: d.newFields,
      }),
    ),
  };
}
