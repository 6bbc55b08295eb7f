import { asStoreSyncError, ERROR_CODES, isStoreSyncError, StoreSyncError } from '../errors.js';
import { duckdbApi } from './duckdb-api.js';
import { openInstance } from './open.js';
import { checkStatement, checkText, isEmptySql, SANDBOX_SETTINGS, settingsRefusal } from './query-sandbox.js';

/**
 * `store-sync query`: one SQL statement on a read-only open of the warehouse. Values come back in JSON
 * form without loss: DECIMAL and TIMESTAMPTZ as text, integers as numbers while they are exact.
 *
 * The statement only reads: the warehouse, and the user's own files (query-sandbox.ts says how and why).
 */

export interface QueryResult {
  columns: { name: string; type: string }[];
  rows: unknown[][];
  /** Rows the statement gave: more than `rows` holds when `maxRows` cut them. */
  totalRows: number;
}

export interface QueryOptions {
  /**
   * Most rows converted and returned (`query --limit`); the others are only counted, so a large result
   * printed as a table costs neither the time nor the memory of turning every row into JSON values.
   */
  maxRows?: number;
}

const INTEGER_TYPES =
  /^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|UTINYINT|USMALLINT|UINTEGER|UBIGINT|UHUGEINT)$/;

/** Integers (in lists too: `BIGINT[]`) as JSON numbers where that is exact; DuckDB's JSON gives them as strings. */
function exactNumber(value: unknown, type: string): unknown {
  const element = /^(.+)\[\]$/.exec(type)?.[1];
  if (element && Array.isArray(value)) return value.map((v) => exactNumber(v, element));
  if (typeof value === 'string' && INTEGER_TYPES.test(type)) {
    const n = Number(value);
    return Number.isSafeInteger(n) ? n : value;
  }
  return value;
}

/**
 * @duckdb/node-api prints a TIMESTAMPTZ in the zone of the computer it runs on (its offset is read once, into
 * this public field), whatever the connection's TimeZone: `query` in New York would show 23:30 UTC on 31
 * January as "2024-01-31 18:30:00-05", and `date_trunc('month', …)` of it as December. The warehouse's times
 * are UTC, and so is what `query` prints.
 */
duckdbApi.DuckDBTimestampTZValue.timezoneOffsetInMinutes = 0;

export async function runReadOnlyQuery(
  path: string,
  sql: string,
  options: QueryOptions = {},
): Promise<QueryResult> {
  if (isEmptySql(sql))
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      'no SQL given (only comments): pass one statement, e.g. "SELECT count(*) FROM orders"',
    );
  checkText(sql);
  const { instance, release } = await openInstance(path, { readOnly: true });
  try {
    const connection = await instance.connect();
    try {
      await connection.run(SANDBOX_SETTINGS);
      // Several statements would print only one result, silently: refused, with what to do instead.
      const extracted = await connection.extractStatements(sql);
      if (extracted.count > 1)
        throw new StoreSyncError(
          ERROR_CODES.QUERY,
          `store-sync query runs one SQL statement at a time, and this holds ${extracted.count}: run them one by one, or open the warehouse with the DuckDB CLI`,
        );
      // Prepared once: its type is checked before anything runs, and the same preparation then runs.
      const prepared = await extracted.prepare(0);
      try {
        await checkStatement(connection, sql, prepared.statementType);
        const { maxRows } = options;
        const reader =
          maxRows === undefined ? await prepared.runAndReadAll() : await prepared.streamAndReadUntil(maxRows);
        const types = reader.columnTypes();
        // An alias names what the type is for (JSON is a VARCHAR with the alias JSON).
        const columns = reader
          .columnNames()
          .map((name, i) => ({ name, type: types[i]!.alias ?? types[i]!.toString() }));
        const read = reader.getRowsJson();
        const kept = maxRows === undefined ? read : read.slice(0, maxRows);
        const rows = kept.map((row) => row.map((v, i) => exactNumber(v, columns[i]!.type)));
        // The rest is read (as DuckDB's chunks, never converted) only to be counted.
        if (!reader.done) await reader.readAll();
        return { columns, rows, totalRows: reader.currentRowCount };
      } finally {
        prepared.destroySync();
      }
    } catch (error) {
      if (isStoreSyncError(error)) throw error;
      const message = (error instanceof Error ? error.message : String(error)).replace(
        /^Failed to extract statements: /,
        '',
      );
      const refused = settingsRefusal(message, error);
      if (refused) throw refused;
      if (/read-only|read only/i.test(message))
        throw new StoreSyncError(ERROR_CODES.QUERY, `store-sync query is read-only: ${message}`, {
          cause: error,
        });
      throw new StoreSyncError(ERROR_CODES.QUERY, `query failed: ${message}`, { cause: error });
    } finally {
      connection.closeSync();
    }
  } catch (error) {
    throw asStoreSyncError(error, ERROR_CODES.QUERY);
  } finally {
    instance.closeSync();
    release();
  }
}
