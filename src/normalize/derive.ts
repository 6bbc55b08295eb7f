import type { ColumnDef } from '../model/index.js';
import type { TableRows } from './rows.js';

/**
 * Columns computed from other columns of the same row (`ColumnDef.derive`), once the row is written. Both
 * normalize paths (normalizer.ts and fast.ts) call the same function on the same buffers, so they cannot
 * compute a value differently.
 */

export interface DerivedColumn {
  column: number;
  numerator: number;
  denominator: number;
}

/** The derived columns among staging columns, with the indexes of what they are computed from. */
export function derivedColumns(columns: readonly ColumnDef[]): DerivedColumn[] {
  const out: DerivedColumn[] = [];
  columns.forEach((column, index) => {
    if (!column.derive) return;
    const [numerator, denominator] = column.derive.divide.map((name) => {
      const at = columns.findIndex((c) => c.name === name);
      if (at < 0)
        throw new Error(`${column.name} is derived from ${name}, which is not a column of its table`);
      return at;
    });
    if (columns[numerator!]!.type !== column.type)
      throw new Error(`${column.name} must have the type of ${column.derive.divide[0]}, its scale is kept`);
    out.push({ column: index, numerator: numerator!, denominator: denominator! });
  });
  return out;
}

/**
 * Fills the derived columns of `row`. A quotient is written only when it is exact: the numerator is a
 * scaled decimal and the denominator an integer, so the scaled quotient is exact when the integer division
 * leaves no remainder (0.10 ÷ 3 is NULL, not 0.033).
 */
export function applyDerived(rows: TableRows, row: number, derived: readonly DerivedColumn[]): void {
  for (const d of derived) {
    const numerator = rows.get(d.numerator, row);
    const denominator = rows.get(d.denominator, row);
    if (numerator === null || denominator === null) continue;
    // Safe integers divide exactly as numbers (the common case, on every order line); BigInt otherwise.
    if (typeof numerator === 'number' && typeof denominator === 'number') {
      if (denominator !== 0 && numerator % denominator === 0)
        rows.setInt64(d.column, row, numerator / denominator + 0);
      continue;
    }
    const n = BigInt(numerator as number | bigint);
    const q = BigInt(denominator as number | bigint);
    if (q === 0n || n % q !== 0n) continue;
    const quotient = n / q;
    rows.setInt64(
      d.column,
      row,
      quotient >= BigInt(Number.MIN_SAFE_INTEGER) && quotient <= BigInt(Number.MAX_SAFE_INTEGER)
        ? Number(quotient)
        : quotient,
    );
  }
}
