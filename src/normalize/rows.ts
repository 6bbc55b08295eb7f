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

export class TableRows {
  readonly kinds: StageKind[];
  length = 0;
  private capacity = 256;
  /** Two 32-bit words per row (little-endian int64), shared with `u32` below. */
  i64: (Int32Array | null)[];
  u32: (Uint32Array | null)[];
  f64: (Float64Array | null)[];
  u8: (Uint8Array | null)[];
  str: ((string | null)[] | null)[];
  list: ((string[] | number[] | null)[] | null)[];
  /** One byte per row: 1 = value present. Packed into DuckDB's bitmask when flushed. */
  valid: Uint8Array[];

  constructor(
    readonly name: string,
    readonly columns: readonly ColumnDef[],
  ) {
    this.kinds = columns.map((c) => stageKind(c.type));
    this.i64 = this.kinds.map((k) => (k === 'i64' ? new Int32Array(this.capacity * 2) : null));
    this.u32 = this.i64.map((a) => (a ? new Uint32Array(a.buffer) : null));
    this.f64 = this.kinds.map((k) => (k === 'f64' ? new Float64Array(this.capacity) : null));
    this.u8 = this.kinds.map((k) => (k === 'bool' ? new Uint8Array(this.capacity) : null));
    this.str = this.kinds.map((k) => (k === 'str' ? [] : null));
    this.list = this.kinds.map((k) => (k === 'list' ? [] : null));
    this.valid = this.kinds.map(() => new Uint8Array(this.capacity));
  }

  /** Starts a row and returns its index; every column is null until set. */
  addRow(): number {
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
    for (const v of this.valid) v.fill(0, length, this.length);
    this.length = length;
  }

  clear(): void {
    for (const v of this.valid) v.fill(0, 0, this.length);
    for (const s of this.str) if (s) s.length = 0;
    for (const l of this.list) if (l) l.length = 0;
    this.length = 0;
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
      default:
        return this.str[column]![row]!;
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
