import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, literal } from '../model/index.js';

/**
 * What the loader knows of the keys stored in each unit table, per store: a range every stored key lies in. A
 * batch whose keys all fall outside it cannot collide with a stored row, so it is appended straight into the
 * table without asking DuckDB (a semi join per table per batch would cost a fifth of a large ingest). The
 * range is read once per table, then only ever widened by the keys the loader writes; rows that are deleted
 * or rolled back leave it wider than it need be, which is safe: a batch inside it is checked against the
 * table as before. Keys are ordered as numbers when they are numbers or canonical decimal text (order numbers
 * "1" … "1000000", whose text order would make every batch overlap every other), as text when they are
 * printable ASCII (where JavaScript and DuckDB order text alike); any other key is always checked.
 */

export type Key = string | number | bigint;

interface Range {
  min: Key;
  max: Key;
}

const DIGITS = /^(?:0|[1-9]\d{0,14})$/;
const ASCII = /^[\x20-\x7e]*$/;

/** Printable ASCII: text that JavaScript and DuckDB order alike. */
export const isAsciiText = (text: string): boolean => ASCII.test(text);

/** The key as it is ordered here: a number, ASCII text, or null when it cannot be ordered. */
function orderable(k: Key): number | string | null {
  if (typeof k === 'number') return k;
  if (typeof k === 'bigint') return null;
  if (DIGITS.test(k)) return Number(k);
  return isAsciiText(k) ? k : null;
}

const less = (a: Key, b: Key): boolean => a < b;

export class KeyRanges {
  /** `null`: the table holds no row of the store (or none the loader could order). */
  private readonly known = new Map<string, Range | null | 'unordered'>();

  /** Forgets everything (the tables were recreated or a rollback may have undone them). */
  clear(): void {
    this.known.clear();
  }

  /** The smallest and largest of `keys` when they can all be ordered like DuckDB does, else null. */
  static span(keys: Iterable<Key>): Range | null {
    let range: Range | null = null;
    let kind: string | null = null;
    for (const key of keys) {
      const k = orderable(key);
      if (k === null) return null;
      if (kind !== null && typeof k !== kind) return null;
      kind = typeof k;
      if (!range) range = { min: k, max: k };
      else {
        if (less(k, range.min)) range.min = k;
        if (less(range.max, k)) range.max = k;
      }
    }
    return range;
  }

  /** True when no key in `span` can be stored yet: the batch's keys all lie outside the stored range. */
  async outside(
    connection: DuckDBConnection,
    table: string,
    keyColumn: string,
    store: string,
    span: Range,
  ): Promise<boolean> {
    const stored = await this.stored(connection, table, keyColumn, store);
    if (stored === 'unordered') return false;
    if (stored === null) return true;
    if (typeof stored.min !== typeof span.min) return false;
    return less(span.max, stored.min) || less(stored.max, span.min);
  }

  /** Records that keys in `span` (or keys that cannot be ordered, when null) may now be stored. */
  widen(table: string, store: string, span: Range | null): void {
    const id = `${store}\u0000${table}`;
    const current = this.known.get(id);
    if (current === undefined || current === 'unordered') return;
    if (span === null) {
      this.known.set(id, 'unordered');
      return;
    }
    if (current === null) {
      this.known.set(id, { ...span });
      return;
    }
    if (typeof current.min !== typeof span.min) {
      this.known.set(id, 'unordered');
      return;
    }
    this.known.set(id, {
      min: less(span.min, current.min) ? span.min : current.min,
      max: less(current.max, span.max) ? span.max : current.max,
    });
  }

  private async stored(
    connection: DuckDBConnection,
    table: string,
    keyColumn: string,
    store: string,
  ): Promise<Range | null | 'unordered'> {
    const id = `${store}\u0000${table}`;
    const cached = this.known.get(id);
    if (cached !== undefined) return cached;
    const key = ident(keyColumn);
    const text = `${key}::VARCHAR`;
    const reader = await connection.runAndReadAll(
      `SELECT count(*), min(${key}), max(${key}), ` +
        `bool_and(regexp_full_match(${text}, '0|[1-9][0-9]{0,14}')), ` +
        `min(TRY_CAST(${text} AS BIGINT)), max(TRY_CAST(${text} AS BIGINT)), ` +
        `bool_and(regexp_full_match(${text}, '[\\x20-\\x7e]*')) ` +
        `FROM ${ident(table)} WHERE _store = ${literal(store)}`,
    );
    const [count, min, max, digits, minNumber, maxNumber, ascii] = reader.getRows()[0]!;
    const safe = (v: unknown) =>
      typeof v === 'bigint' && v >= BigInt(Number.MIN_SAFE_INTEGER) && v <= BigInt(Number.MAX_SAFE_INTEGER);
    let range: Range | null | 'unordered';
    if (Number(count) === 0) range = null;
    else if ((typeof min === 'bigint' || digits === true) && safe(minNumber) && safe(maxNumber))
      range = { min: Number(minNumber), max: Number(maxNumber) };
    else if (typeof min === 'string' && typeof max === 'string' && ascii === true) range = { min, max };
    else range = 'unordered';
    this.known.set(id, range);
    return range;
  }
}
