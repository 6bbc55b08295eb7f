import { redact } from '../log.js';

/**
 * Rendering results for stdout: aligned tables on a terminal, CSV and JSON for scripts.
 * Values arrive as JS values from DuckDB (bigint, Date, decimals as strings); they print losslessly.
 */

export type OutputFormat = 'table' | 'csv' | 'json';

export function displayValue(value: unknown): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  if (typeof value === 'bigint' || typeof value === 'number' || typeof value === 'boolean')
    return String(value);
  if (value instanceof Date) return value.toISOString();
  return JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? v.toString() : v));
}

function isNumeric(value: unknown): boolean {
  return (
    typeof value === 'number' ||
    typeof value === 'bigint' ||
    (typeof value === 'string' && /^-?\d+(\.\d+)?$/.test(value))
  );
}

export function renderTable(columns: string[], rows: unknown[][]): string {
  const cells = rows.map((row) => row.map(displayValue));
  const widths = columns.map((name, i) => Math.max(name.length, ...cells.map((row) => row[i]!.length)));
  const rightAlign = columns.map(
    (_, i) => rows.length > 0 && rows.every((row) => row[i] == null || isNumeric(row[i])),
  );
  const line = (values: string[]) =>
    values
      .map((v, i) => (rightAlign[i] ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('  ')
      .trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(columns), rule, ...cells.map(line)].join('\n');
}

function csvField(value: unknown): string {
  const text = displayValue(value);
  return /[",\n\r]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

export function renderCsv(columns: string[], rows: unknown[][]): string {
  return [columns.map(csvField).join(','), ...rows.map((row) => row.map(csvField).join(','))].join('\n');
}

/**
 * JSON rows as objects; bigints become numbers when they are safe and strings otherwise (never rounded).
 * Columns named in `rawJson` hold JSON text (DuckDB's JSON type, such as `metadata`): it is embedded as JSON,
 * so `jq .metadata.key` works, and embedded as written rather than parsed, so a big number in it stays exact.
 */
export function renderJson(
  columns: string[],
  rows: unknown[][],
  rawJson: ReadonlySet<string> = new Set(),
): string {
  const raw: string[] = [];
  // A marker no JSON string from DuckDB can hold (a NUL, escaped by JSON.stringify), replaced after.
  const embed = (text: string) => `\u0000raw${raw.push(text) - 1}`;
  const objects = rows.map((row) =>
    Object.fromEntries(
      columns.map((name, i) => {
        const value = row[i];
        return [name, rawJson.has(name) && typeof value === 'string' ? embed(value) : value];
      }),
    ),
  );
  const text = JSON.stringify(objects, (_k, v) =>
    typeof v === 'bigint'
      ? v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)
        ? Number(v)
        : v.toString()
      : v,
  );
  return raw.length ? text.replace(/"\\u0000raw(\d+)"/g, (_m, n: string) => raw[Number(n)]!) : text;
}

export function renderRows(
  format: OutputFormat,
  columns: { name: string; type?: string }[],
  rows: unknown[][],
): string {
  const names = columns.map((c) => c.name);
  if (format === 'csv') return renderCsv(names, rows);
  if (format === 'json')
    return renderJson(names, rows, new Set(columns.filter((c) => c.type === 'JSON').map((c) => c.name)));
  return renderTable(names, rows);
}

/** One row of a run's summary: what became of one part of the run (a stream of a sync, a file of an ingest). */
export interface SummaryRow {
  store: string;
  part: string;
  status: string;
  /** One number for each of the summary's count columns, in order. */
  counts: readonly number[];
  note: string;
}

/** How a store's run ended, told under the table: its outcome and figures, or the error that ended it. */
export type StoreLine = {
  store: string;
  /** Field paths no column maps that the run saw first, per table. */
  newFields?: readonly { table: string; fields: string[] }[];
} & (
  | {
      /** `succeeded`, `completed_with_rejections`, `partial`, `interrupted` … (printed with spaces). */
      outcome: string;
      seconds: number;
      /** Figures after the time: `12 requests`, `3 files` … */
      details: readonly string[];
      /** What the run is known by, in brackets at the end: `run <id>`, `spool <dir>`. */
      ref: string;
    }
  | { error: string }
);

/**
 * What a command that runs into the warehouse prints when it ends (sync, backfill, ingest, a drain): one table of
 * the run's parts, `store stream|file status <counts> note`, then one line per store with how its run ended and
 * the fields no column maps that it saw first. One renderer, so that every run reads alike.
 */
export interface RunSummary {
  /** What a row is: `stream` or `file`. */
  part: string;
  /** The count columns between status and note. */
  counts: readonly string[];
  rows: readonly SummaryRow[];
  stores: readonly StoreLine[];
}

/** `describeNewFields` is schema-changes.ts's `newFieldsText`, which the caller has loaded with the pipelines. */
export function renderRunSummary(
  summary: RunSummary,
  describeNewFields: (entry: { table: string; fields: string[] }) => string,
): string {
  const columns = ['store', summary.part, 'status', ...summary.counts, 'note'];
  const rows = summary.rows.map((r) => [r.store, r.part, r.status, ...r.counts, r.note]);
  const lines = [renderTable(columns, rows)];
  for (const s of summary.stores) {
    lines.push(
      'error' in s
        ? `${s.store}: failed: ${s.error}`
        : `${s.store}: ${s.outcome.replace(/_/g, ' ')} in ${s.seconds.toFixed(1)} s, ${s.details.join(', ')} (${s.ref})`,
    );
    // Kept in the rows' `_extra`, listed in `_schema_changes`.
    for (const entry of s.newFields ?? []) lines.push(`${s.store}: ${describeNewFields(entry)}`);
  }
  // Messages come from errors that may quote a server's reply; masking again costs nothing.
  return redact(`${lines.join('\n')}\n`);
}
