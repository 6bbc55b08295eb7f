import { DuckDBInstance } from '@duckdb/node-api';

/**
 * Peer of bench/export.ts: DuckDB's plain COPY of one table to one Parquet file, as a process of its own, the
 * warehouse opened read-only as `store-sync export` opens it, with DuckDB's default settings.
 *   node plain-copy.js <warehouse> <table> <out.parquet>
 * Prints one JSON line: the rows copied.
 */
const [warehouse, table, out] = process.argv.slice(2);
if (!warehouse || !table || !out) throw new Error('usage: plain-copy <warehouse> <table> <out.parquet>');
const quote = (text: string, mark: string) => `${mark}${text.replaceAll(mark, mark + mark)}${mark}`;
const instance = await DuckDBInstance.create(warehouse, { access_mode: 'READ_ONLY' });
const connection = await instance.connect();
const reader = await connection.runAndReadAll(
  `COPY (SELECT * FROM ${quote(table, '"')}) TO ${quote(out, "'")} (FORMAT parquet)`,
);
const rows = Number(reader.getRows()[0]?.[0] ?? 0);
connection.closeSync();
instance.closeSync();
process.stdout.write(`${JSON.stringify({ rows })}\n`);
