import { type ColumnDef, type Source, sourceFor } from '../model/index.js';
import type { EnvelopeMeta } from './detect.js';
import type { TableRows } from './rows.js';
import { type Converted, converterFor, ValueError } from './values.js';

/**
 * Compiles the columns of one table, for one order shape, into a row writer. The writer is generated
 * JavaScript with every source path spelled out as literal property reads (`item["price_excl_tax"]`), so
 * V8's inline caches see the same few object shapes at each read; a generic path-walking loop is about
 * three times slower and normalize is on the ingest's critical path. Only registry text (column names and
 * source paths, quoted with JSON.stringify) goes into the generated code.
 */

export interface WalkContext {
  /** The whole document (`$$`). */
  doc: Record<string, unknown>;
  /** The unit the current row belongs to (`$`). */
  unitRoot: Record<string, unknown>;
  apiVersion: string | null;
  /** What the envelope the record came in said of it (`@event_id` …); null for a bare document or a synced record. */
  envelope: EnvelopeMeta | null;
  /** Array fields and indexes from the record down to the current item, for rejection reasons. */
  fields: string[];
  indexes: number[];
}

export type RowWriter = (
  item: Record<string, unknown>,
  parent: Record<string, unknown> | null,
  ctx: WalkContext,
  index: number,
  /** The parent item's position in its array (0 for the root and for a single object). */
  parentIndex: number,
  rows: TableRows,
  row: number,
) => void;

/** Why a column's value could not be written: the source path read and what was expected. */
export class ColumnError extends Error {
  constructor(
    readonly path: string,
    readonly value: unknown,
    readonly expected: string,
  ) {
    super(`${path}: expected ${expected}`);
  }
}

const q = (s: string) => JSON.stringify(s);

/**
 * The source tokens that read the envelope (src/model/types.ts): the field of EnvelopeMeta each reads, and
 * the envelope field a refused value is named by (only a `timestamp` that is not a date-time can be).
 */
export const ENVELOPE_TOKENS: Readonly<
  Record<string, { field: keyof EnvelopeMeta; named: string } | undefined>
> = {
  '@event_id': { field: 'eventId', named: "event_id (the envelope's)" },
  '@event_type': { field: 'eventType', named: "event_type (the envelope's)" },
  '@event_at': { field: 'eventAt', named: "timestamp (the envelope's)" },
  '@label': { field: 'label', named: "api_version (the envelope's)" },
  '@envelope': { field: 'rest', named: "the envelope's other fields" },
};

/**
 * Source tokens of columns filled after the row is written, from the row or the item as a whole (see
 * src/model/types.ts): the row writers leave them alone.
 */
export const AFTER_ROW_TOKENS: ReadonlySet<string> = new Set(['@extra', '@absent', '@derived']);

/** JS expression reading one alternative of a source into `v` (assumes `v` is declared). */
function readAlternative(source: string): string {
  if (source === '#') return 'v = index;';
  if (source === '#-') return 'v = -index - 1;';
  if (source === '^#-') return 'v = -parentIndex - 1;';
  if (source.startsWith('=')) return `v = ${q(source.slice(1))};`;
  if (source === '@api_version') return 'v = ctx.apiVersion;';
  const envelopeField = ENVELOPE_TOKENS[source];
  if (envelopeField !== undefined)
    return `v = ctx.envelope === null ? null : ctx.envelope[${q(envelopeField.field)}];`;
  if (source.startsWith('@')) throw new Error(`unknown source token ${source}`);
  let base = 'item';
  let path = source;
  if (source.startsWith('$$.')) [base, path] = ['ctx.doc', source.slice(3)];
  else if (source.startsWith('$.')) [base, path] = ['ctx.unitRoot', source.slice(2)];
  else if (source.startsWith('^.')) [base, path] = ['parent', source.slice(2)];
  const parts = path.split('.');
  const lines = [`v = ${base};`];
  parts.forEach((part, i) => {
    // A non-object on the way (e.g. `"billing_address": "x"`) is refused rather than read as missing.
    const check =
      i === 0
        ? ''
        : `if (typeof v !== 'object' || Array.isArray(v)) bad(${q(parts.slice(0, i).join('.'))}, v, 'an object'); `;
    lines.push(`if (v != null) { ${check}v = v[${q(part)}]; }`);
  });
  return lines.join(' ');
}

const SETTER = {
  i64: 'setInt64',
  f64: 'setDouble',
  bool: 'setBoolean',
  str: 'setText',
  list: 'setList',
} as const;

/**
 * A value a careful writer could not write (see compileRowWriter): the column is left NULL and the caller
 * decides what that costs (normalizer.ts: a field rejection, a record rejection, or nothing).
 */
export interface ColumnFailure {
  /** Index of the column in the staging columns. */
  column: number;
  /** What a record rejection names, as the hot writer does: the source text, or the object on the way. */
  named: string;
  /**
   * The path of the refused value, relative to the item when `itemRelative`: the field of the alternative
   * that gave it (`created_at` of `created_at|date_created`), or the non-object on the way (`billing_address`).
   */
  path: string;
  /** Whether the refused value is the row's own item's (its source has no `$.`, `$$.`, `^.` or token). */
  itemRelative: boolean;
  value: unknown;
  expected: string;
}

/**
 * The row writer's twin for a row the hot writer refused: the same reads and conversions, each column in
 * its own try/catch, so every column that can be written is, and each one that cannot is pushed into
 * `failures` and left NULL.
 */
export type CarefulWriter = (...args: [...Parameters<RowWriter>, failures: ColumnFailure[]]) => void;

export interface RowWriters {
  /** Throws ColumnError at the first value that does not fit: the path every row takes. */
  write: RowWriter;
  careful: CarefulWriter;
}

/** Whether a source alternative reads the item itself (a field path without `$.`, `$$.`, `^.`, `#`, `=`, `@`). */
export function itemRelative(alternative: string): boolean {
  const first = alternative[0];
  return (
    first !== '#' &&
    first !== '=' &&
    first !== '@' &&
    !alternative.startsWith('$.') &&
    !alternative.startsWith('$$.') &&
    !alternative.startsWith('^.')
  );
}

/** An alternative's field path without its base (`$.a.b` → `a.b`). */
const pathOf = (alternative: string): string =>
  alternative.startsWith('$$.')
    ? alternative.slice(3)
    : alternative.startsWith('$.') || alternative.startsWith('^.')
      ? alternative.slice(2)
      : alternative;

/**
 * The writers for the given staging columns (index 0, `_unit`, is written by the caller). `overrides` are
 * the plan node's per-context sources.
 */
export function compileRowWriter(
  columns: readonly ColumnDef[],
  kinds: readonly (keyof typeof SETTER)[],
  shape: string | null,
  overrides: Record<string, Source> = {},
): RowWriters {
  const converters: ((value: unknown) => Converted)[] = [];
  const paths: string[] = [];
  const alternativesOf: string[][] = [];
  const body: string[] = [];
  const careful: string[] = [];
  columns.forEach((column, k) => {
    if (k === 0) return;
    const source = overrides[column.name] ?? column.source;
    const text = source === undefined ? null : sourceFor(source, shape);
    if (text === null || AFTER_ROW_TOKENS.has(text)) return;
    converters[k] = converterFor(column.type);
    const alternatives = text.split('|');
    alternativesOf[k] = alternatives;
    // A refused value came from a field: a position is always an integer, so it is not named.
    paths[k] = alternatives
      .filter((alt) => alt !== '#-' && alt !== '^#-')
      .map((alt) => ENVELOPE_TOKENS[alt]?.named ?? alt)
      .join('|');
    const set = `if (v != null) rows.${SETTER[kinds[k]!]}(${k}, row, conv[${k}](v));`;
    body.push(`col = ${k};`, readAlternative(alternatives[0]!));
    for (const alt of alternatives.slice(1)) body.push(`if (v == null) { ${readAlternative(alt)} }`);
    body.push(set);
    const reads = [readAlternative(alternatives[0]!)];
    alternatives.slice(1).forEach((alt, i) => {
      reads.push(`if (v == null) { alt = ${i + 1}; ${readAlternative(alt)} }`);
    });
    careful.push(
      `alt = 0; v = undefined; try { ${reads.join(' ')} ${set} } catch (error) { failed(failures, error, ${k}, alt, v); }`,
    );
  });
  const source = `return function writeRow(item, parent, ctx, index, parentIndex, rows, row) {
  let col = -1, v;
  try { ${body.join('\n  ')} }
  catch (error) { fail(error, col, v); }
};`;
  const carefulSource = `return function writeRowCarefully(item, parent, ctx, index, parentIndex, rows, row, failures) {
  let alt = 0, v;
  ${careful.join('\n  ')}
};`;
  const bad = (at: string, value: unknown, expected: string): never => {
    throw new ColumnError(at, value, expected);
  };
  const fail = (error: unknown, col: number, value: unknown): never => {
    if (error instanceof ColumnError) throw error;
    if (error instanceof ValueError) throw new ColumnError(paths[col] ?? '?', value, error.expected);
    throw error;
  };
  const failed = (
    failures: ColumnFailure[],
    error: unknown,
    column: number,
    alt: number,
    value: unknown,
  ): void => {
    const alternative = alternativesOf[column]![alt]!;
    const relative = itemRelative(alternative);
    if (error instanceof ColumnError)
      failures.push({
        column,
        named: error.path,
        path: error.path,
        itemRelative: relative,
        value: error.value,
        expected: error.expected,
      });
    else if (error instanceof ValueError)
      failures.push({
        column,
        named: paths[column] ?? '?',
        path: pathOf(alternative),
        itemRelative: relative,
        value,
        expected: error.expected,
      });
    else throw error;
  };
  return {
    write: new Function('conv', 'bad', 'fail', source)(converters, bad, fail) as RowWriter,
    careful: new Function('conv', 'bad', 'failed', carefulSource)(converters, bad, failed) as CarefulWriter,
  };
}
