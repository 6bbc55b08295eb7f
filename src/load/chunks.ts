import type { DuckDBAppender, DuckDBConnection, DuckDBDataChunk, DuckDBType } from '@duckdb/node-api';
import duckdb from '@duckdb/node-bindings';
import type { EncodedText, TableRows } from '../normalize/index.js';
import { duckdbApi } from './duckdb-api.js';

const { DuckDBListType, DuckDBTimestampTZValue, LIST, VARCHAR } = duckdbApi;

/**
 * Hands normalize's columnar rows to a DuckDB Appender one data chunk (≤ 2048 rows) at a time.
 * Numbers go in as whole vectors (one copy per column per chunk, from the typed arrays normalize filled)
 * and only strings cross into DuckDB one by one. Appending value by value through `appendVarchar` and
 * friends costs a native call per value, about five times slower on the ingest benchmark. The binding
 * calls used here (`copy_data_to_vector`, `vector_assign_string_element`, validity masks, list children)
 * are the ones @duckdb/node-api's own vectors use to flush.
 */

const CHUNK_ROWS = 2048;
const TWO_32 = 4294967296;
/** DuckDB's `string_t`: 4-byte length, then 12 inline bytes, or a 4-byte prefix and an 8-byte pointer. */
const STRING_T = 16;
const STRING_INLINE = 12;

/**
 * Data chunks are reused per table layout: a chunk's native memory is only released when its JavaScript
 * wrapper is garbage collected, and the wrappers are too small for the collector to hurry, so a chunk
 * per append would grow the process by hundreds of megabytes over a large ingest.
 */
const chunkPool = new Map<string, DuckDBDataChunk>();

function pooledChunk(types: DuckDBType[]): DuckDBDataChunk {
  const key = types.map(String).join(',');
  let chunk = chunkPool.get(key);
  if (!chunk) {
    chunk = duckdbApi.DuckDBDataChunk.create(types);
    chunkPool.set(key, chunk);
  }
  return chunk;
}

/** A value of a row appended value by value (see ChunkAppender.appendRows). */
export type LandingValue =
  | { int64: number }
  | { text: string }
  | { texts: string[] }
  | { timestampMicros: number }
  | null;

/** What a column of `_raw_landing_parts` holds (see ChunkAppender.appendParts). */
export type PartColumn = 'first_seq' | 'part' | 'bytes';

/** The columns of `_raw_landing_parts` named in its physical order, checked: appendParts fills only these. */
export function partColumns(names: readonly string[]): PartColumn[] {
  return names.map((name) => {
    if (name === 'first_seq' || name === 'part' || name === 'bytes') return name;
    throw new Error(`_raw_landing_parts has a column the loader does not fill: ${name}`);
  });
}

/** Where a table column's values come from: a column of the rows, or the same value on every row. */
export type Feed =
  | { from: 'rows'; column: number }
  | { from: 'text'; value: string }
  | { from: 'int64'; value: number }
  | { from: 'null' };

/**
 * An Appender on one table, fed from TableRows buffers through per-column feeds. It is kept open for the
 * connection's life (see AppenderPool) and flushed after every append, so its rows always land in the
 * transaction that is current when `append` runs.
 */
export class ChunkAppender {
  private readonly chunk: DuckDBDataChunk;
  private readonly validity = new Uint8Array(CHUNK_ROWS / 8);
  private readonly words = new Int32Array(CHUNK_ROWS * 2);
  private readonly structs = new Uint8Array(CHUNK_ROWS * STRING_T);
  private readonly structView = new DataView(this.structs.buffer);
  private readonly listOfText: boolean[];
  private feeds: readonly Feed[] = [];
  /** Text that is the same on every row becomes a constant vector: one value per chunk, not per row. */
  private constants: (duckdb.Value | null)[] = [];
  rowsAppended = 0;

  private constructor(
    private readonly appender: DuckDBAppender,
    readonly table: string,
  ) {
    const types = Array.from({ length: appender.columnCount }, (_, i) => appender.columnType(i));
    this.chunk = pooledChunk(types);
    this.listOfText = types.map((t) => t instanceof DuckDBListType && t.valueType.toString() === 'VARCHAR');
  }

  static async open(connection: DuckDBConnection, table: string, catalog?: string): Promise<ChunkAppender> {
    return new ChunkAppender(await connection.createAppender(table, 'main', catalog), table);
  }

  /**
   * Appends every row of the buffer (the caller clears it afterwards) and flushes. `feeds` gives, for every
   * column of the table in its physical order, where the values come from.
   */
  append(rows: TableRows, feeds: readonly Feed[]): void {
    if (feeds.length !== this.appender.columnCount)
      throw new Error(
        `table ${this.table} has ${this.appender.columnCount} columns, the loader expected ${feeds.length}`,
      );
    this.feeds = feeds;
    this.constants = feeds.map((f) => (f.from === 'text' ? duckdb.create_varchar(f.value) : null));
    try {
      for (let start = 0; start < rows.length; start += CHUNK_ROWS) {
        this.appendSlice(rows, start, Math.min(CHUNK_ROWS, rows.length - start));
      }
      this.appender.flushSync();
    } catch (error) {
      this.appender.clear();
      throw error;
    }
  }

  /** Appends rows value by value and flushes (the raw landing: a row per batch, and its parts). */
  appendRows(rows: readonly (readonly LandingValue[])[]): void {
    const a = this.appender;
    try {
      for (const values of rows) {
        for (const v of values) {
          if (v === null) a.appendNull();
          else if ('int64' in v) a.appendBigInt(BigInt(v.int64));
          else if ('text' in v) a.appendVarchar(v.text);
          else if ('texts' in v) a.appendList(v.texts, LIST(VARCHAR));
          else a.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(v.timestampMicros)));
        }
        a.endRow();
      }
      a.flushSync();
    } catch (error) {
      a.clear();
      throw error;
    }
  }

  /**
   * Appends a raw landing block as its parts (landing.ts, LANDING_PART_BYTES) and flushes: a row per
   * `partBytes` of `block`, a vector per column per chunk; returns the number of parts. `columns` names, in
   * the table's physical order, what each column holds: the block's `first_seq` (the same on every row), the
   * part's place, or its bytes. Value by value (appendRows), the three native calls per part of a
   * 200,000-document ingest's 140,000 parts took about half a second of the main thread.
   */
  appendParts(
    columns: readonly PartColumn[],
    firstSeq: number,
    block: Uint8Array,
    partBytes: number,
  ): number {
    const parts = Math.ceil(block.length / partBytes);
    const ends = new Uint32Array(parts);
    for (let p = 0; p < parts; p++) ends[p] = Math.min(block.length, (p + 1) * partBytes);
    const text: EncodedText = { bytes: block, ends };
    const valid = new Uint8Array(parts).fill(1);
    const raw = this.chunk.chunk;
    try {
      for (let start = 0; start < parts; start += CHUNK_ROWS) {
        const count = Math.min(CHUNK_ROWS, parts - start);
        duckdb.data_chunk_reset(raw);
        this.validity.fill(255);
        columns.forEach((column, c) => {
          const vector = duckdb.data_chunk_get_vector(raw, c);
          if (column === 'bytes') this.writeText(vector, text, valid, start, count);
          else if (column === 'part') this.writeInt64s(vector, count, start, 1);
          else this.writeInt64s(vector, count, firstSeq, 0);
          duckdb.vector_ensure_validity_writable(vector);
          duckdb.copy_data_to_vector_validity(vector, 0, this.validity.buffer, 0, Math.ceil(count / 64) * 8);
        });
        duckdb.data_chunk_set_size(raw, count);
        this.appender.appendDataChunk(this.chunk);
        this.rowsAppended += count;
      }
      this.appender.flushSync();
    } catch (error) {
      this.appender.clear();
      throw error;
    }
    return parts;
  }

  close(): void {
    this.appender.closeSync();
  }

  private appendSlice(rows: TableRows, start: number, count: number): void {
    const raw = this.chunk.chunk;
    duckdb.data_chunk_reset(raw);
    for (let c = 0; c < this.feeds.length; c++) {
      const vector = duckdb.data_chunk_get_vector(raw, c);
      const feed = this.feeds[c]!;
      const constant = this.constants[c];
      if (constant) {
        duckdb.vector_reference_value(vector, constant);
        continue;
      }
      this.validity.fill(0);
      if (feed.from === 'rows') this.writeColumn(vector, rows, feed.column, c, start, count);
      else if (feed.from === 'int64') {
        this.writeInt64s(vector, count, feed.value, 0);
        this.validity.fill(255);
      }
      duckdb.vector_ensure_validity_writable(vector);
      duckdb.copy_data_to_vector_validity(vector, 0, this.validity.buffer, 0, Math.ceil(count / 64) * 8);
    }
    duckdb.data_chunk_set_size(raw, count);
    this.appender.appendDataChunk(this.chunk);
    this.rowsAppended += count;
  }

  /** Writes `count` BIGINTs into a vector: `first`, `first + step`, … (the same value when `step` is 0). */
  private writeInt64s(vector: duckdb.Vector, count: number, first: number, step: number): void {
    for (let i = 0; i < count; i++) {
      const value = first + i * step;
      const hi = Math.floor(value / TWO_32);
      this.words[i * 2] = value - hi * TWO_32;
      this.words[i * 2 + 1] = hi;
    }
    duckdb.copy_data_to_vector(vector, 0, this.words.buffer, 0, count * 8);
  }

  /** Writes rows[start, start+count) of one buffer column into a vector and marks the present values. */
  private writeColumn(
    vector: duckdb.Vector,
    rows: TableRows,
    column: number,
    target: number,
    start: number,
    count: number,
  ): void {
    const valid = rows.valid[column]!;
    // Eight rows to a byte at a time (each is 0 or 1): a read-modify-write per row costs a tenth of the loop.
    const bits = this.validity;
    const whole = count >> 3;
    for (let k = 0, o = start; k < whole; k++, o += 8)
      bits[k] =
        valid[o]! |
        (valid[o + 1]! << 1) |
        (valid[o + 2]! << 2) |
        (valid[o + 3]! << 3) |
        (valid[o + 4]! << 4) |
        (valid[o + 5]! << 5) |
        (valid[o + 6]! << 6) |
        (valid[o + 7]! << 7);
    for (let i = whole << 3; i < count; i++) bits[i >> 3]! |= valid[start + i]! << (i & 7);
    switch (rows.kinds[column]) {
      case 'i64':
      case 'f64': {
        const data = (rows.i64[column] ?? rows.f64[column])!;
        duckdb.copy_data_to_vector(
          vector,
          0,
          data.buffer as ArrayBuffer,
          data.byteOffset + start * 8,
          count * 8,
        );
        return;
      }
      case 'bool': {
        const data = rows.u8[column]!;
        duckdb.copy_data_to_vector(vector, 0, data.buffer as ArrayBuffer, data.byteOffset + start, count);
        return;
      }
      case 'str': {
        const text = rows.text[column];
        if (!text) throw new Error(`rows of ${rows.name} must be sealed before they are appended`);
        this.writeText(vector, text, valid, start, count);
        return;
      }
      default: {
        this.writeList(vector, rows.list[column]!, valid, target, start, count);
      }
    }
  }

  /**
   * Writes a chunk of strings as DuckDB `string_t`s in one copy. A native call per string
   * (`vector_assign_string_element`) was the loader's largest cost; instead the column was encoded to UTF-8
   * once (TableRows.seal), the chunk's slice of those bytes is assigned to row 0 so DuckDB copies it into
   * the vector's own string heap (freed with the chunk, after the Appender has copied the rows), and every
   * row's 16-byte `string_t` is written here: length and up to 12 bytes inline, or length, 4-byte prefix
   * and a pointer into that heap copy. Row 0's struct is then overwritten with its own value.
   */
  private writeText(
    vector: duckdb.Vector,
    text: EncodedText,
    valid: Uint8Array,
    start: number,
    count: number,
  ): void {
    const { bytes, ends } = text;
    const first = start === 0 ? 0 : ends[start - 1]!;
    const last = ends[start + count - 1]!;
    // Only strings longer than 12 bytes point into the heap, and there can be one only if the chunk's
    // bytes are more than 12 in all.
    // The heap copy's address as two 32-bit words: a BigInt sum per string allocates, and would make this
    // loop the main thread's largest source of garbage.
    let baseLow = 0;
    let baseHigh = 0;
    if (last - first > STRING_INLINE) {
      duckdb.vector_assign_string_element_len(vector, 0, bytes.subarray(first, last));
      const row0 = duckdb.vector_get_data(vector, STRING_T);
      const pointer = new DataView(row0.buffer, row0.byteOffset, STRING_T);
      baseLow = pointer.getUint32(8, true);
      baseHigh = pointer.getUint32(12, true);
    }
    const structs = this.structs;
    const view = this.structView;
    structs.fill(0, 0, count * STRING_T);
    for (let i = 0, from = first; i < count; i++) {
      const end = ends[start + i]!;
      if (!valid[start + i]) continue;
      const length = end - from;
      const at = i * STRING_T;
      view.setUint32(at, length, true);
      if (length <= STRING_INLINE) {
        for (let b = 0; b < length; b++) structs[at + 4 + b] = bytes[from + b]!;
      } else {
        for (let b = 0; b < 4; b++) structs[at + 4 + b] = bytes[from + b]!;
        const low = baseLow + (from - first);
        view.setUint32(at + 8, low >>> 0, true);
        view.setUint32(at + 12, low >= TWO_32 ? baseHigh + 1 : baseHigh, true);
      }
      from = end;
    }
    duckdb.copy_data_to_vector(vector, 0, structs.buffer, 0, count * STRING_T);
  }

  private writeList(
    vector: duckdb.Vector,
    lists: (string[] | number[] | null)[],
    valid: Uint8Array,
    target: number,
    start: number,
    count: number,
  ): void {
    const entries = new Uint32Array(count * 4);
    let total = 0;
    for (let i = 0; i < count; i++) {
      const length = valid[start + i] ? lists[start + i]!.length : 0;
      entries[i * 4] = total;
      entries[i * 4 + 2] = length;
      total += length;
    }
    duckdb.copy_data_to_vector(vector, 0, entries.buffer, 0, count * 16);
    duckdb.list_vector_reserve(vector, total);
    duckdb.list_vector_set_size(vector, total);
    if (total === 0) return;
    const child = duckdb.list_vector_get_child(vector);
    const words = new Int32Array(this.listOfText[target] ? 0 : total * 2);
    let at = 0;
    for (let i = 0; i < count; i++) {
      if (!valid[start + i]) continue;
      for (const item of lists[start + i]!) {
        if (typeof item === 'string') duckdb.vector_assign_string_element(child, at, item);
        else {
          const hi = Math.floor(item / TWO_32);
          words[at * 2] = item - hi * TWO_32;
          words[at * 2 + 1] = hi;
        }
        at++;
      }
    }
    if (!this.listOfText[target]) duckdb.copy_data_to_vector(child, 0, words.buffer, 0, total * 8);
    const childValidity = new Uint8Array(Math.ceil(total / 64) * 8).fill(255);
    duckdb.vector_ensure_validity_writable(child);
    duckdb.copy_data_to_vector_validity(child, 0, childValidity.buffer, 0, childValidity.length);
  }
}

/** One ChunkAppender per table and connection, opened on first use and closed with the warehouse. */
export class AppenderPool {
  private readonly open = new Map<string, Promise<ChunkAppender>>();

  constructor(private readonly connection: DuckDBConnection) {}

  get(table: string, catalog?: string): Promise<ChunkAppender> {
    const key = `${catalog ?? ''}.${table}`;
    let appender = this.open.get(key);
    if (!appender) {
      appender = ChunkAppender.open(this.connection, table, catalog);
      appender.catch(() => this.open.delete(key));
      this.open.set(key, appender);
    }
    return appender;
  }

  async closeAll(): Promise<void> {
    for (const appender of this.open.values()) (await appender.catch(() => null))?.close();
    this.open.clear();
  }
}
