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
