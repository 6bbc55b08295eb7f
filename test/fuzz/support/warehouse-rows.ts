import type { DuckDBConnection } from '@duckdb/node-api';
import { type ColumnDef, dataTables, sourcedColumns } from '../../../src/model/index.js';
import { type Cell, canonicalDouble, decimalAsPrinted } from './oracle.js';

/**
 * Reads a store's rows back from DuckDB in the oracle's canonical text, so that what was committed can be
 * compared with what the documents must become: decimals as DuckDB prints them, instants as epoch
 * microseconds, JSON and lists re-serialized, doubles as JavaScript numbers.
 */

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const DECIMAL = /^DECIMAL\(\d+,(\d+)\)$/;

function selectExpression(column: ColumnDef): string {
  const c = q(column.name);
  switch (column.type) {
    case 'DOUBLE':
    case 'VARCHAR':
      return c;
    case 'TIMESTAMPTZ':
      return `CAST(epoch_us(${c}) AS VARCHAR)`;
    case 'VARCHAR[]':
    case 'BIGINT[]':
      return `CAST(to_json(${c}) AS VARCHAR)`;
    default:
      return `CAST(${c} AS VARCHAR)`;
  }
}

const reserialize = (text: string) => JSON.stringify(JSON.parse(text));

/** The canonical text of a cell read from DuckDB. */
function fromDuckDb(column: ColumnDef, value: unknown): Cell {
  if (value === null || value === undefined) return null;
  if (column.type === 'DOUBLE') return canonicalDouble(value as number);
  if (column.type === 'JSON' || column.type.endsWith('[]')) return reserialize(String(value));
  return String(value);
}

/** The oracle's cell in the form `fromDuckDb` produces. */
export function asStored(column: ColumnDef, cell: Cell): Cell {
  if (cell === null) return null;
  const decimal = DECIMAL.exec(column.type);
  if (decimal) return decimalAsPrinted(cell, Number(decimal[1]));
  if (column.type === 'JSON' || column.type.endsWith('[]')) return reserialize(cell);
  return cell;
}

/** Every data table's rows for one store, as canonical text rows in sourced-column order. */
export async function storeRows(connection: DuckDBConnection, store: string): Promise<Map<string, Cell[][]>> {
  const tables = dataTables();
  const literal = `'${store.replaceAll("'", "''")}'`;
  const counts = await connection.runAndReadAll(
    tables
      .map((t) => `SELECT '${t.name}', count(*) FROM ${q(t.name)} WHERE _store = ${literal}`)
      .join(' UNION ALL '),
  );
  const out = new Map<string, Cell[][]>();
  for (const [name, count] of counts.getRows()) {
    if (Number(count) === 0) continue;
    const columns = sourcedColumns(tables.find((t) => t.name === name)!);
    const reader = await connection.runAndReadAll(
      `SELECT ${columns.map(selectExpression).join(', ')} FROM ${q(String(name))} WHERE _store = ${literal}`,
    );
    out.set(
      String(name),
      reader.getRows().map((row) => row.map((value, i) => fromDuckDb(columns[i]!, value))),
    );
  }
  return out;
}

/** Rows as sorted lines, so two multisets of rows compare with one deepEqual and diff readably. */
export const sortedLines = (rows: readonly Cell[][]): string[] => rows.map((r) => JSON.stringify(r)).sort();
