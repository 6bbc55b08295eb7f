/** SQL text helpers: every identifier is quoted (the spec's field names include `index`, `type`, `values` …). */

export const ident = (name: string): string => `"${name.replaceAll('"', '""')}"`;

export const literal = (value: string | null): string =>
  value === null ? 'NULL' : `'${value.replaceAll("'", "''")}'`;

/** A TIMESTAMPTZ literal from epoch milliseconds. */
export const timestampLiteral = (ms: number): string => `TIMESTAMPTZ ${literal(new Date(ms).toISOString())}`;
