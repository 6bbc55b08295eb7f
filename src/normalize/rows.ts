import type { ColumnDef, ColumnType } from '../model/index.js';
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
 * row's bytes end (a NULL row ends where the previous one did). One buffer per column, not a string per
 * value, is what lets the loader write whole vectors of strings (see src/load/chunks.ts).
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

/** Handed-back buffer sets a table keeps (see TableRows.reuse): as many as batches are on their way back. */
const MAX_SPARES = 3;

/**
 * Node Buffers over text columns' bytes, one per bytes array: reading a value through a Buffer view made
 * for it alone cost about twice the decoding, and its garbage was a large share of the merge's (which reads
 * every key of a batch's unit tables).
 */
const wrappers = new WeakMap<Uint8Array, Buffer>();

function wrapped(bytes: Uint8Array): Buffer {
  if (Buffer.isBuffer(bytes)) return bytes;
  let buffer = wrappers.get(bytes);
  if (!buffer) {
    buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    wrappers.set(bytes, buffer);
  }
  return buffer;
}

/** Row `row` of a text column, decoded ('' for a NULL row: the caller checks validity). */
export function textAt(text: EncodedText, row: number): string {
  return wrapped(text.bytes).toString('utf8', row === 0 ? 0 : text.ends[row - 1]!, text.ends[row]!);
}

/** Row `row`'s UTF-8 bytes of a text column: a view, valid as long as the column's bytes are. */
export function textBytesAt(text: EncodedText, row: number): Buffer {
  return wrapped(text.bytes).subarray(row === 0 ? 0 : text.ends[row - 1]!, text.ends[row]!);
}

/** The validity of a table between a snapshot and its next row (see TableRows.dropBuffers). */
const NO_ROWS = new Uint8Array(0);

/** Strings up to this length are encoded by a JavaScript loop; a native call costs more than that. */
const SHORT_TEXT = 32;

/**
 * One text column being built: each value is encoded to UTF-8 as it is set, so the strings themselves die
 * young (holding a batch's strings until the end would make every one of them survive two scavenges and a
 * mark-compact). Values arrive in row order, each row at most once; `filled` rows have their end recorded,
 * and a row never set ends where the one before it did (NULL, or empty).
 */
class TextColumn {
  bytes: Uint8Array;
  ends: Uint32Array;
  filled = 0;

  constructor(rows: number, bytes: number, reused?: EncodedText) {
    // Plain ArrayBuffers, not Buffer.allocUnsafe: a short Buffer comes from Node's shared pool, which
    // cannot be moved to another thread (Node 21+ refuses it in a transfer list).
    this.bytes = reused ? new Uint8Array(reused.bytes.buffer) : new Uint8Array(bytes);
    this.ends = reused ? new Uint32Array(reused.ends.buffer) : new Uint32Array(rows);
  }

  get end(): number {
    return this.filled === 0 ? 0 : this.ends[this.filled - 1]!;
  }

  /** Where `row`'s bytes start, with room for `most` of them (rows skipped since the last one end there). */
  private begin(row: number, most: number): number {
    // Bytes only ever go at the end: a row before the last one set would land after it, unseen.
    if (row < this.filled) throw new Error(`text for row ${row} set after row ${this.filled - 1}`);
    const ends = this.ends;
    const pos = this.end;
    for (let r = this.filled; r < row; r++) ends[r] = pos;
    if (pos + most > this.bytes.length) this.reserve(pos + most);
    return pos;
  }

  set(row: number, value: string): void {
    const n = value.length;
    let pos = this.begin(row, n * 3);
    const ends = this.ends;
    const bytes = this.bytes;
    let i = 0;
    if (n <= SHORT_TEXT) {
      for (; i < n; i++) {
        const c = value.charCodeAt(i);
        if (c >= 128) break;
        bytes[pos + i] = c;
      }
      pos += i;
    }
    // The rest from the first non-ASCII character (never inside a surrogate pair: both halves are ≥ 128);
    // a lone surrogate becomes U+FFFD, exactly as Buffer.from would store it.
    if (i < n) pos += utf8.encodeInto(i === 0 ? value : value.slice(i), bytes.subarray(pos)).written;
    ends[row] = pos;
    this.filled = row + 1;
  }

  /**
   * The value as UTF-8 bytes already checked to be well formed (a document's string as read, see scan.ts):
   * copied as they are, with no string in between.
   */
  setBytes(row: number, source: Uint8Array, start: number, end: number): void {
    const n = end - start;
    const pos = this.begin(row, n);
    const bytes = this.bytes;
    if (n <= SHORT_TEXT) for (let i = 0; i < n; i++) bytes[pos + i] = source[start + i]!;
    else bytes.set(source.subarray(start, end), pos);
    this.ends[row] = pos + n;
    this.filled = row + 1;
  }

  /** Forgets rows from `length` on. */
  truncate(length: number): void {
    if (this.filled > length) this.filled = length;
  }

  /** The column's rows so far; rows past the last value set end where it does. */
  seal(length: number): EncodedText {
    const pos = this.end;
    for (let r = this.filled; r < length; r++) this.ends[r] = pos;
    this.filled = length;
    return { bytes: this.bytes.subarray(0, pos), ends: this.ends.subarray(0, length) };
  }

  read(row: number): string {
    return textAt(this, row);
  }

  growRows(rows: number): void {
    const ends = new Uint32Array(rows);
    ends.set(this.ends.subarray(0, this.filled));
    this.ends = ends;
  }

  private reserve(bytes: number): void {
    const grown = new Uint8Array(Math.max(bytes, this.bytes.length * 2));
    grown.set(this.bytes.subarray(0, this.end));
    this.bytes = grown;
  }
}

export class TableRows {
  readonly kinds: StageKind[];
  length = 0;
  /** Rows the typed buffers hold; 0 between a snapshot and the next row (see takeSnapshot). */
  private capacity = 256;
  /** Rows and text bytes per column that fresh buffers are made for: a quarter more than the last batch. */
  private nextRows = 256;
  private nextTextBytes: number[] = [];
  // The typed buffers are set by allocate(): from the constructor on, and after a snapshot (dropBuffers) at
  // the next row.
  /** Two 32-bit words per row (little-endian int64), shared with `u32` below. */
  i64!: (Int32Array | null)[];
  u32!: (Uint32Array | null)[];
  f64!: (Float64Array | null)[];
  u8!: (Uint8Array | null)[];
  /** Text columns being filled (see TextColumn); replaced by `text` once sealed. */
  private building!: (TextColumn | null)[];
  /** Text columns once sealed (see `seal`). */
  text!: (EncodedText | null)[];
  list: ((string[] | number[] | null)[] | null)[];
  /** One byte per row: 1 = value present. Packed into DuckDB's bitmask when flushed. */
  valid!: Uint8Array[];
  /** True once the text columns are encoded (see `seal`): no more rows can be added. */
  sealed = false;

  constructor(
    readonly name: string,
    readonly columns: readonly ColumnDef[],
    /** False for rows made from a snapshot, whose buffers are the snapshot's. */
    allocate = true,
  ) {
    this.kinds = columns.map((c) => stageKind(c.type));
    if (allocate) this.allocate();
    else this.building = this.kinds.map(() => null);
    this.list = this.kinds.map((k) => (k === 'list' ? [] : null));
  }

  /**
   * The buffers of a snapshot of this table that has been loaded and handed back (see `reuse`): the next
   * batch is written into them instead of into fresh ones.
   */
  private readonly spares: RowsSnapshot[] = [];

  /**
   * Takes back the buffers of a snapshot this table made, once the loader is done with them. Fresh buffers
   * for every batch (some 30 MB each) would make V8 collect its heap again and again for the sake of memory
   * held outside it, and the kernel zero new pages; reused ones cost neither.
   */
  reuse(snapshot: RowsSnapshot): void {
    // A few are kept: one dropped here would stay allocated until V8's next full collection, which
    // normalizing from bytes (little garbage) makes rare.
    if (
      snapshot.name === this.name &&
      snapshot.valid.length === this.kinds.length &&
      this.spares.length < MAX_SPARES
    )
      this.spares.push(snapshot);
  }

  /** Empty typed buffers (a snapshot took the previous ones away): handed-back ones, or fresh ones. */
  private allocate(): void {
    const spare = this.spares.pop();
    if (spare) {
      this.capacity = spare.valid[0]!.buffer.byteLength;
      this.i64 = spare.i64.map((a) => (a ? new Int32Array(a.buffer) : null));
      this.u32 = this.i64.map((a) => (a ? new Uint32Array(a.buffer) : null));
      this.f64 = spare.f64.map((a) => (a ? new Float64Array(a.buffer) : null));
      this.u8 = spare.u8.map((a) => (a ? new Uint8Array(a.buffer) : null));
      this.valid = spare.valid.map((a) => new Uint8Array(a.buffer).fill(0));
      this.building = spare.text.map((t) => (t ? new TextColumn(0, 0, t) : null));
      this.text = this.kinds.map(() => null);
      return;
    }
    this.capacity = this.nextRows;
    this.i64 = this.kinds.map((k) => (k === 'i64' ? new Int32Array(this.capacity * 2) : null));
    this.u32 = this.i64.map((a) => (a ? new Uint32Array(a.buffer) : null));
    this.f64 = this.kinds.map((k) => (k === 'f64' ? new Float64Array(this.capacity) : null));
    this.u8 = this.kinds.map((k) => (k === 'bool' ? new Uint8Array(this.capacity) : null));
    this.valid = this.kinds.map(() => new Uint8Array(this.capacity));
    this.building = this.kinds.map((k, column) =>
      k === 'str' ? new TextColumn(this.capacity, Math.max(256, this.nextTextBytes[column] ?? 0)) : null,
    );
    this.text = this.kinds.map(() => null);
  }

  /** Closes the text columns for the loader (idempotent); rows can no longer be added or changed. */
  seal(): void {
    if (this.sealed) return;
    this.sealed = true;
    this.building.forEach((column, index) => {
      if (column) this.text[index] = column.seal(this.length);
    });
  }

  /**
   * Seals and hands the content over as a snapshot (its typed arrays can be transferred), leaving this
   * object empty and without buffers: the next row takes handed-back ones, or fresh ones sized by this
   * batch. Taking them here, while the batch before is still being loaded, would make an ingest worker hold
   * a third set of batch buffers (some 25 MB) besides the one being loaded and the one handed over.
   */
  takeSnapshot(): RowsSnapshot {
    if (this.capacity === 0) this.allocate();
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
    // The next batch is likely as big as this one: fresh buffers hold a quarter more than it did (rows
    // and text), not the doubled capacity it grew to.
    if (this.length > 0) {
      this.nextRows = Math.max(256, Math.ceil(this.length * 1.25));
      this.nextTextBytes = this.text.map((t) => Math.ceil((t?.bytes.length ?? 0) * 1.25));
    }
    this.dropBuffers();
    for (const l of this.list) if (l) l.length = 0;
    this.length = 0;
    this.sealed = false;
    return snapshot;
  }

  /** Rows rebuilt from a snapshot (sealed: ready to load, not to extend). */
  static fromSnapshot(snapshot: RowsSnapshot, columns: readonly ColumnDef[]): TableRows {
    const rows = new TableRows(snapshot.name, columns, false);
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
    if (typeof value === 'number' && value >= 0 && value < TWO_32) {
      // Most values (ids, units, money in cents, small counts) fit one word: no division needed.
      this.u32[column]![row * 2] = value;
      this.i64[column]![row * 2 + 1] = 0;
    } else if (typeof value === 'number') {
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
    this.building[column]!.set(row, value);
    this.valid[column]![row] = 1;
  }

  /** Text given as well-formed UTF-8 bytes (see TextColumn.setBytes). */
  setTextBytes(column: number, row: number, source: Uint8Array, start: number, end: number): void {
    this.building[column]!.setBytes(row, source, start, end);
    this.valid[column]![row] = 1;
  }

  setList(column: number, row: number, value: string[] | number[]): void {
    this.list[column]![row] = value;
    this.valid[column]![row] = 1;
  }

  /**
   * Adds a copy of `row` of `source` (sealed or not, with this table's first columns in the same order) and
   * returns its index: every value is copied, text as its bytes, so `source`'s buffers can be reused.
   */
  copyRow(source: TableRows, row: number): number {
    const to = this.addRow();
    for (let c = 0; c < source.kinds.length; c++) {
      if (!source.valid[c]![row]) continue;
      switch (this.kinds[c]) {
        case 'i64':
          this.i64[c]![to * 2] = source.i64[c]![row * 2]!;
          this.i64[c]![to * 2 + 1] = source.i64[c]![row * 2 + 1]!;
          this.valid[c]![to] = 1;
          break;
        case 'f64':
          this.setDouble(c, to, source.f64[c]![row]!);
          break;
        case 'bool':
          this.setBoolean(c, to, source.u8[c]![row] === 1);
          break;
        case 'list':
          this.setList(c, to, source.list[c]![row]!);
          break;
        default: {
          const text: EncodedText = source.text[c] ?? source.building[c]!;
          this.setTextBytes(c, to, text.bytes, row === 0 ? 0 : text.ends[row - 1]!, text.ends[row]!);
        }
      }
    }
    return to;
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

  /**
   * Keeps only the rows of the given units (`_unit`, column 0), in order, once sealed: the rows a merge
   * decided to write (see src/load/merge.ts). Rows move down in place, text bytes included.
   */
  keepUnits(units: ReadonlySet<number>): void {
    if (!this.sealed) throw new Error(`rows of ${this.name} must be sealed before they are filtered`);
    const unitWords = this.u32[0]!;
    let kept = 0;
    const textAt = this.text.map(() => 0);
    for (let row = 0; row < this.length; row++) {
      if (!units.has(unitWords[row * 2]!)) continue;
      for (let c = 0; c < this.kinds.length; c++) {
        const text = this.text[c];
        if (text) {
          // Every kept row's bytes move down to where the kept rows before it end.
          const start = row === 0 ? 0 : text.ends[row - 1]!;
          const end = text.ends[row]!;
          if (start !== textAt[c]) text.bytes.copyWithin(textAt[c]!, start, end);
          textAt[c]! += end - start;
          text.ends[kept] = textAt[c]!;
        }
        if (kept === row) continue;
        this.valid[c]![kept] = this.valid[c]![row]!;
        const i64 = this.i64[c];
        if (i64) {
          i64[kept * 2] = i64[row * 2]!;
          i64[kept * 2 + 1] = i64[row * 2 + 1]!;
        }
        const f64 = this.f64[c];
        if (f64) f64[kept] = f64[row]!;
        const u8 = this.u8[c];
        if (u8) u8[kept] = u8[row]!;
        const list = this.list[c];
        if (list) list[kept] = list[row]!;
      }
      kept++;
    }
    // The rows past the kept ones are empty again: a builder's buffers serve its next batch, whose rows
    // there would otherwise read these flags as values present (clear() resets only `length` rows).
    for (const valid of this.valid) valid.fill(0, kept, this.length);
    this.length = kept;
    this.text = this.text.map((t, c) =>
      t ? { bytes: t.bytes.subarray(0, textAt[c]), ends: t.ends.subarray(0, kept) } : null,
    );
    for (const list of this.list) if (list) list.length = kept;
  }

  /** Drops rows from `length` on (a rejected document takes back what it wrote). */
  truncate(length: number): void {
    if (length >= this.length) return;
    if (this.sealed) throw new Error(`rows of ${this.name} are sealed`);
    for (const v of this.valid) v.fill(0, length, this.length);
    for (const t of this.building) t?.truncate(length);
    this.length = length;
  }

  clear(): void {
    for (const v of this.valid) v.fill(0, 0, this.length);
    for (const t of this.building) t?.truncate(0);
    for (const l of this.list) if (l) l.length = 0;
    this.text.fill(null);
    this.length = 0;
    this.sealed = false;
  }

  /** A text column's UTF-8 bytes of `row` (a view, not a copy), sealed or not; null when absent. */
  textBytes(column: number, row: number): Buffer | null {
    if (!this.valid[column]![row]) return null;
    return textBytesAt(this.text[column] ?? this.building[column]!, row);
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
        return text ? textAt(text, row) : this.building[column]!.read(row);
      }
    }
  }

  /** No buffers until the next row (see takeSnapshot); what stays is empty, so clearing is a no-op. */
  private dropBuffers(): void {
    this.capacity = 0;
    this.i64 = this.kinds.map(() => null);
    this.u32 = this.kinds.map(() => null);
    this.f64 = this.kinds.map(() => null);
    this.u8 = this.kinds.map(() => null);
    this.valid = this.kinds.map(() => NO_ROWS);
    this.building = this.kinds.map(() => null);
    this.text = this.kinds.map(() => null);
  }

  private grow(): void {
    if (this.capacity === 0) {
      this.allocate();
      return;
    }
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
    for (const t of this.building) t?.growRows(capacity);
    this.capacity = capacity;
  }
}
