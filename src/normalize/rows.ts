import type { ColumnDef, ColumnType } from './types.js';
import type { Converted, Int64 } from './values.js';

/**
 * Normalize's output: the rows of one table, held column by column in typed arrays so the loader can
 * hand them to DuckDB a vector at a time (see src/load/chunks.ts) instead of a value at a time.
 */

/** How a column is held: 64-bit integers, doubles, booleans, strings, or lists (arrays of strings or integers). */
export type StageKind = 'i64' | 'f64' | 'bool' | 'str' | 'list';

export function stageKind(type: ColumnType): StageKind {
  if (type === 'DOUBLE') return 'f64';
  if (type.endsWith('[]')) return 'list';
  if (type === 'BOOLEAN') return 'bool';
  if (type === 'BIGINT' || type === 'TIMESTAMPTZ' || type.startsWith('DECIMAL')) return 'i64';
  return 'str';
}

const TWO_32 = 4294967296;

/**
 * A text column ready for DuckDB: every present value's UTF-8 bytes one after another, and where each
 * row's bytes end (a NULL row ends where the previous one did). Encoding a column once, not value by value,
 * is what lets the loader write whole vectors of strings (see src/load/chunks.ts).
 */
export interface EncodedText {
  bytes: Uint8Array;
  ends: Uint32Array;
}

/** A TableRows' content as plain data: typed arrays that can be moved to another thread without copying. */
export interface RowsSnapshot {
  name: string;
  length: number;
  i64: (Int32Array | null)[];
  f64: (Float64Array | null)[];
  u8: (Uint8Array | null)[];
  text: (EncodedText | null)[];
  list: ((string[] | number[] | null)[] | null)[];
  valid: Uint8Array[];
}

const utf8 = new TextEncoder();

/** The typed arrays of a snapshot, for `postMessage`'s transfer list. */
export function snapshotBuffers(snapshot: RowsSnapshot): ArrayBuffer[] {
  const buffers = new Set<ArrayBuffer>();
  const add = (a: { buffer: ArrayBufferLike } | null) => {
    if (a) buffers.add(a.buffer as ArrayBuffer);
  };
  for (const a of [...snapshot.i64, ...snapshot.f64, ...snapshot.u8, ...snapshot.valid]) add(a);
  for (const t of snapshot.text) if (t) for (const a of [t.bytes, t.ends]) add(a);
  return [...buffers];
}

/**
 * Encodes the present values (`valid[i]` = 1) into one UTF-8 buffer; `ends[i]` is where value i's bytes end.
 * A slot that is not valid may still hold a value written before a rejected record was taken back.
 */
export function encodeTexts(
  values: readonly (string | null)[],
  valid: Uint8Array,
  length: number,
): EncodedText {
  const ends = new Uint32Array(length);
  const present: string[] = [];
  for (let i = 0; i < length; i++) if (valid[i]) present.push(values[i]!);
  const joined = present.join('');
  // TextEncoder, not Buffer.from: a short Buffer comes from Node's shared pool, which cannot be moved to
  // another thread (Node 21+ refuses it in a transfer list).
  let bytes = utf8.encode(joined);
  const ascii = bytes.length === joined.length;
  let end = 0;
  for (let i = 0; i < length; i++) {
    if (valid[i]) end += ascii ? values[i]!.length : Buffer.byteLength(values[i]!, 'utf8');
    ends[i] = end;
  }
  // A lone surrogate at the seam of two values encodes differently joined than apart (only possible in
  // rejection payloads): then each value is encoded on its own, exactly as it would be alone.
  if (end !== bytes.length) {
    const parts = present.map((v) => utf8.encode(v));
    bytes = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
    let at = 0;
    for (const part of parts) {
      bytes.set(part, at);
      at += part.length;
    }
    end = 0;
    for (let i = 0; i < length; i++) {
      if (valid[i]) end += Buffer.byteLength(values[i]!, 'utf8');
      ends[i] = end;
    }
  }
  return { bytes, ends };
}

export class TableRows {
  readonly kinds: StageKind[];
  length = 0;
  private capacity = 256;
  // The typed buffers are set by allocate(), from the constructor on.
  /** Two 32-bit words per row (little-endian int64), shared with `u32` below. */
  i64!: (Int32Array | null)[];
  u32!: (Uint32Array | null)[];
  f64!: (Float64Array | null)[];
  u8!: (Uint8Array | null)[];
  str: ((string | null)[] | null)[];
  /** Text columns once sealed (see `seal`); `str` is then empty. */
  text!: (EncodedText | null)[];
  list: ((string[] | number[] | null)[] | null)[];
  /** One byte per row: 1 = value present. Packed into DuckDB's bitmask when flushed. */
  valid!: Uint8Array[];
  /** True once the text columns are encoded (see `seal`): no more rows can be added. */
  sealed = false;

  constructor(
    readonly name: string,
    readonly columns: readonly ColumnDef[],
  ) {
    this.kinds = columns.map((c) => stageKind(c.type));
    this.allocate();
    this.str = this.kinds.map((k) => (k === 'str' ? [] : null));
    this.list = this.kinds.map((k) => (k === 'list' ? [] : null));
  }

  /** Fresh, empty typed buffers of the current capacity (a snapshot took the previous ones away). */
  private allocate(): void {
    this.i64 = this.kinds.map((k) => (k === 'i64' ? new Int32Array(this.capacity * 2) : null));
    this.u32 = this.i64.map((a) => (a ? new Uint32Array(a.buffer) : null));
    this.f64 = this.kinds.map((k) => (k === 'f64' ? new Float64Array(this.capacity) : null));
    this.u8 = this.kinds.map((k) => (k === 'bool' ? new Uint8Array(this.capacity) : null));
    this.valid = this.kinds.map(() => new Uint8Array(this.capacity));
    this.text = this.kinds.map(() => null);
  }

  /** Encodes the text columns for the loader (idempotent); rows can no longer be added or changed. */
  seal(): void {
    if (this.sealed) return;
    this.sealed = true;
    this.kinds.forEach((kind, column) => {
      if (kind !== 'str') return;
      this.text[column] = encodeTexts(this.str[column]!, this.valid[column]!, this.length);
      this.str[column]!.length = 0;
    });
  }

  /**
   * Seals and hands the content over as a snapshot (its typed arrays can be transferred), leaving this
   * object empty with fresh buffers of the same capacity, ready for the next batch.
   */
  takeSnapshot(): RowsSnapshot {
    this.seal();
    const snapshot: RowsSnapshot = {
      name: this.name,
      length: this.length,
      i64: this.i64.map((a) => a?.subarray(0, this.length * 2) ?? null),
      f64: this.f64.map((a) => a?.subarray(0, this.length) ?? null),
      u8: this.u8.map((a) => a?.subarray(0, this.length) ?? null),
      text: this.text,
      list: this.list.map((l) => l?.slice(0, this.length) ?? null),
      valid: this.valid.map((a) => a.subarray(0, this.length)),
    };
    this.allocate();
    for (const l of this.list) if (l) l.length = 0;
    this.length = 0;
    this.sealed = false;
    return snapshot;
  }

  /** Rows rebuilt from a snapshot (sealed: ready to load, not to extend). */
  static fromSnapshot(snapshot: RowsSnapshot, columns: readonly ColumnDef[]): TableRows {
    const rows = new TableRows(snapshot.name, columns);
    rows.length = snapshot.length;
    rows.capacity = snapshot.length;
    rows.i64 = snapshot.i64;
    rows.u32 = snapshot.i64.map((a) => (a ? new Uint32Array(a.buffer, a.byteOffset, a.length) : null));
    rows.f64 = snapshot.f64;
    rows.u8 = snapshot.u8;
    rows.text = snapshot.text;
    rows.list = snapshot.list;
    rows.valid = snapshot.valid;
    rows.sealed = true;
    return rows;
  }

  /** Starts a row and returns its index; every column is null until set. */
  addRow(): number {
    if (this.sealed) throw new Error(`rows of ${this.name} are sealed`);
    if (this.length === this.capacity) this.grow();
    return this.length++;
  }

  setInt64(column: number, row: number, value: Int64): void {
    if (typeof value === 'number') {
      const hi = Math.floor(value / TWO_32);
      this.u32[column]![row * 2] = value - hi * TWO_32;
      this.i64[column]![row * 2 + 1] = hi;
    } else {
      const words = new BigInt64Array([value]);
      const halves = new Int32Array(words.buffer);
      this.i64[column]![row * 2] = halves[0]!;
      this.i64[column]![row * 2 + 1] = halves[1]!;
    }
    this.valid[column]![row] = 1;
  }

  setDouble(column: number, row: number, value: number): void {
    this.f64[column]![row] = value;
    this.valid[column]![row] = 1;
  }

  setBoolean(column: number, row: number, value: boolean): void {
    this.u8[column]![row] = value ? 1 : 0;
    this.valid[column]![row] = 1;
  }

  setText(column: number, row: number, value: string): void {
    this.str[column]![row] = value;
    this.valid[column]![row] = 1;
  }

  setList(column: number, row: number, value: string[] | number[]): void {
    this.list[column]![row] = value;
    this.valid[column]![row] = 1;
  }

  /** Writes a converted value according to the column's kind. */
  set(column: number, row: number, value: Converted): void {
    switch (this.kinds[column]) {
      case 'i64':
        this.setInt64(column, row, value as Int64);
        return;
      case 'f64':
        this.setDouble(column, row, value as number);
        return;
      case 'bool':
        this.setBoolean(column, row, value as boolean);
        return;
      case 'list':
        this.setList(column, row, value as string[] | number[]);
        return;
      default:
        this.setText(column, row, value as string);
    }
  }

  /** Drops rows from `length` on (a rejected document takes back what it wrote). */
  truncate(length: number): void {
    if (length >= this.length) return;
    if (this.sealed) throw new Error(`rows of ${this.name} are sealed`);
    for (const v of this.valid) v.fill(0, length, this.length);
    this.length = length;
  }

  clear(): void {
    for (const v of this.valid) v.fill(0, 0, this.length);
    for (const s of this.str) if (s) s.length = 0;
    for (const l of this.list) if (l) l.length = 0;
    this.text.fill(null);
    this.length = 0;
    this.sealed = false;
  }

  /** Reads a value back (tests and small bookkeeping reads); null when absent. */
  get(column: number, row: number): Converted | null {
    if (!this.valid[column]![row]) return null;
    switch (this.kinds[column]) {
      case 'i64': {
        const lo = this.u32[column]![row * 2]!;
        const hi = this.i64[column]![row * 2 + 1]!;
        const n = hi * TWO_32 + lo;
        return Number.isSafeInteger(n) ? n : (BigInt(hi) << 32n) + BigInt(lo);
      }
      case 'f64':
        return this.f64[column]![row]!;
      case 'bool':
        return this.u8[column]![row] === 1;
      case 'list':
        return this.list[column]![row]!;
      default: {
        const text = this.text[column];
        if (!text) return this.str[column]![row]!;
        const start = row === 0 ? 0 : text.ends[row - 1]!;
        return Buffer.from(
          text.bytes.buffer,
          text.bytes.byteOffset + start,
          text.ends[row]! - start,
        ).toString('utf8');
      }
    }
  }

  private grow(): void {
    const capacity = this.capacity * 2;
    const copy = <T extends Int32Array | Float64Array | Uint8Array>(
      a: T | null,
      make: (n: number) => T,
      n: number,
    ) => {
      if (!a) return null;
      const b = make(n);
      b.set(a);
      return b;
    };
    this.i64 = this.i64.map((a) => copy(a, (n) => new Int32Array(n), capacity * 2));
    this.u32 = this.i64.map((a) => (a ? new Uint32Array(a.buffer) : null));
    this.f64 = this.f64.map((a) => copy(a, (n) => new Float64Array(n), capacity));
    this.u8 = this.u8.map((a) => copy(a, (n) => new Uint8Array(n), capacity));
    this.valid = this.valid.map((a) => copy(a, (n) => new Uint8Array(n), capacity)!);
    this.capacity = capacity;
  }
}
