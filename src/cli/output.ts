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

/** JSON rows as objects; bigints become numbers when they are safe and strings otherwise (never rounded). */
export function renderJson(columns: string[], rows: unknown[][]): string {
  const objects = rows.map((row) => Object.fromEntries(columns.map((name, i) => [name, row[i]])));
  return JSON.stringify(objects, (_k, v) =>
    typeof v === 'bigint'
      ? v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)
        ? Number(v)
        : v.toString()
      : v,
  );
}

export function renderRows(format: OutputFormat, columns: string[], rows: unknown[][]): string {
  if (format === 'csv') return renderCsv(columns, rows);
  if (format === 'json') return renderJson(columns, rows);
  return renderTable(columns, rows);
}
