import {
  BIGINT,
  BOOLEAN,
  DECIMAL,
  DOUBLE,
  type DuckDBAppender,
  type DuckDBConnection,
  DuckDBDataChunk,
  type DuckDBType,
  TIMESTAMPTZ,
  VARCHAR,
} from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';
import type { ColumnType, TableRows } from '../normalize/index.js';

/**
 * Hands normalize's columnar rows to a DuckDB Appender one data chunk (≤ 2048 rows) at a time.
 * Numbers go in as whole vectors (one copy per column per chunk, from the typed arrays normalize filled)
 * and only strings cross into DuckDB one by one. Appending value by value through `appendVarchar` and
 * friends costs a native call per value, about five times slower on the ingest benchmark. The binding
 * calls used here (`copy_data_to_vector`, `vector_assign_string_element`, validity masks) are the same
 * ones @duckdb/node-api's own vectors use to flush.
 */

const CHUNK_ROWS = 2048;

/** The DuckDB type a staging column holds: numbers keep their target type, everything else is text. */
export function stagingType(type: ColumnType): DuckDBType {
  switch (type) {
    case 'BIGINT':
      return BIGINT;
    case 'DOUBLE':
      return DOUBLE;
    case 'BOOLEAN':
      return BOOLEAN;
    case 'TIMESTAMPTZ':
      return TIMESTAMPTZ;
    default: {
      const m = /^DECIMAL\((\d+),(\d+)\)$/.exec(type);
      return m ? DECIMAL(Number(m[1]), Number(m[2])) : VARCHAR;
    }
  }
}

export const stagingSqlType = (type: ColumnType): string => stagingType(type).toString();

/** One open Appender on a table, fed from a TableRows buffer of the same column order. */
export class ChunkAppender {
  private readonly chunk: DuckDBDataChunk;
  private readonly validity = new Uint8Array(CHUNK_ROWS / 8);
  rowsAppended = 0;

  private constructor(
    private readonly appender: DuckDBAppender,
    types: DuckDBType[],
  ) {
    this.chunk = DuckDBDataChunk.create(types);
  }

  static async open(
    connection: DuckDBConnection,
    table: string,
    columnTypes: readonly ColumnType[],
    schema = 'main',
    catalog?: string,
  ): Promise<ChunkAppender> {
    const appender = await connection.createAppender(table, schema, catalog);
    return new ChunkAppender(appender, columnTypes.map(stagingType));
  }

  /** Appends every row of the buffer (the caller clears it afterwards). */
  append(rows: TableRows): void {
    for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
      this.appendSlice(rows, start, Math.min(CHUNK_ROWS, rows.length - start));
    }
  }

  close(): void {
    this.appender.closeSync();
  }

  private appendSlice(rows: TableRows, start: number, count: number): void {
    const raw = this.chunk.chunk;
    duckdb.data_chunk_reset(raw);
    const words = Math.ceil(count / 64) * 8;
    for (let c = 0; c < rows.kinds.length; c++) {
      const vector = duckdb.data_chunk_get_vector(raw, c);
      const valid = rows.valid[c]!;
      switch (rows.kinds[c]) {
        case 'i64': {
          const data = rows.i64[c]!;
          duckdb.copy_data_to_vector(
            vector,
            0,
            data.buffer as ArrayBuffer,
            data.byteOffset + start * 8,
            count * 8,
          );
          break;
        }
        case 'f64': {
          const data = rows.f64[c]!;
          duckdb.copy_data_to_vector(
            vector,
            0,
            data.buffer as ArrayBuffer,
            data.byteOffset + start * 8,
            count * 8,
          );
          break;
        }
        case 'bool': {
          const data = rows.u8[c]!;
          duckdb.copy_data_to_vector(vector, 0, data.buffer as ArrayBuffer, data.byteOffset + start, count);
          break;
        }
        default: {
          const strings = rows.str[c]!;
          for (let i = 0; i < count; i++) {
            if (valid[start + i]) duckdb.vector_assign_string_element(vector, i, strings[start + i]!);
          }
        }
      }
      this.validity.fill(0);
      for (let i = 0; i < count; i++) if (valid[start + i]) this.validity[i >> 3]! |= 1 << (i & 7);
      duckdb.vector_ensure_validity_writable(vector);
      duckdb.copy_data_to_vector_validity(vector, 0, this.validity.buffer, 0, words);
    }
    duckdb.data_chunk_set_size(raw, count);
    this.appender.appendDataChunk(this.chunk);
    this.rowsAppended += count;
  }
}
