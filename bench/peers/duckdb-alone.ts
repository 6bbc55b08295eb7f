import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import { TABLES } from './tables.js';

/**
 * Peer of bench/ingest.ts: DuckDB alone loads the benchmark's order documents into the ten tables of
 * tables.sql with duckdb-alone.sql (a typed read_ndjson, then SQL with UNNEST), as a user who writes the SQL
 * by hand would, with DuckDB's default settings. No newest-wins, rejections, landing or resume.
 *   node duckdb-alone.js <input file, folder or glob> <database>
 * Prints one JSON line: the rows of each table.
 */

/** bench/peers/ of the repository, from this module as a source or compiled (dist/bench/peers/). */
const PEERS = fileURLToPath(
  new URL(import.meta.url.endsWith('.js') ? '../../../bench/peers/' : './', import.meta.url),
);

const [input, database] = process.argv.slice(2);
if (!input || !database) throw new Error('usage: duckdb-alone <input file, folder or glob> <database>');
const files =
  input.includes('*') || (!input.endsWith('/') && path.extname(input)) ? input : path.join(input, '*.ndjson');
const quoted = `'${files.replaceAll("'", "''")}'`;
const instance = await DuckDBInstance.create(database);
const connection = await instance.connect();
await connection.run(await readFile(path.join(PEERS, 'tables.sql'), 'utf8'));
await connection.run(`SET VARIABLE files = ${quoted}`);
await connection.run(await readFile(path.join(PEERS, 'duckdb-alone.sql'), 'utf8'));
const rows: Record<string, number> = {};
for (const table of TABLES) {
  const reader = await connection.runAndReadAll(`SELECT count(*) FROM ${table}`);
  rows[table] = Number(reader.getRows()[0]![0]);
}
connection.closeSync();
instance.closeSync();
process.stdout.write(`${JSON.stringify({ rows })}\n`);
