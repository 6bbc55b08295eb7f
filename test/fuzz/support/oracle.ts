import type { EntityKind } from '../../../src/contracts.js';
import {
  type ColumnDef,
  type ColumnType,
  type PlanNode,
  plans,
  type Source,
  sourcedColumns,
  tableDef,
  unitVersionColumns,
} from '../../../src/model/index.js';
import { type EnvelopeMeta, MAX_NESTING } from '../../../src/normalize/index.js';
import { absentFields, type KnownTree, knownTree, trackedFields } from '../../../src/normalize/known.js';

/**
 * The fuzz oracle: what a document must become, worked out independently of the normalizer. It follows
 * the table registry's plans and source grammar as documented (src/model/types.ts) and converts each
 * value by the column type's rule with its own arithmetic (BigInt decimals, calendar checks), so a value
 * is either stored exactly or refused. A refused value of the row's own item leaves its column NULL and goes
 * to the row's `_extra` (a field rejection); a refused key or version, a missing key or a wrong structure
 * refuses the whole document. What the model maps (src/normalize/known.ts: knownTree, trackedFields) is
 * taken as given; what becomes of each field is worked out here: unknown ones kept in `_extra` in document
 * order, `_absent_fields`, and the derived quotients. Cells come out as canonical text, the form both the
 * staging buffers and DuckDB's rows are reduced to before comparing.
 */

export type Cell = string | null;
/** A field rejection the oracle expects: the table and the path from the record's root. */
export interface ExpectedRefusal {
  table: string;
  fieldPath: string;
}
export type Expected =
  | { rejected: true; why: string }
  | {
      rejected: false;
      rows: Map<string, Cell[][]>;
      columns: Map<string, ColumnDef[]>;
      refusals: ExpectedRefusal[];
    };

class Refused extends Error {}

/** A value refused on the way to a column: where (relative to the alternative's base) and which value. */
class RefusedAt extends Refused {
  constructor(
    message: string,
    readonly path: string,
    readonly value: unknown,
  ) {
    super(message);
  }
}

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const DECIMAL = /^DECIMAL\((\d+),(\d+)\)$/;
const NUMBER_TEXT = /^(-?)(\d*)(?:\.(\d*))?$/;

/** The exact scaled integer of decimal text in DECIMAL(p,s), or a refusal. */
export function exactDecimal(value: unknown, precision: number, scale: number): bigint {
  if (typeof value !== 'string') throw new Refused('decimal must be text');
  const m = NUMBER_TEXT.exec(value);
  if (!m || `${m[2]}${m[3] ?? ''}` === '') throw new Refused(`not decimal text: ${value}`);
  const whole = m[2]!.replace(/^0+/, '');
  const fraction = m[3] ?? '';
  if (whole.length > precision - scale) throw new Refused(`too many integer digits: ${value}`);
  if (/[1-9]/.test(fraction.slice(scale))) throw new Refused(`too many decimals: ${value}`);
  const scaled = BigInt(`${whole || '0'}${fraction.slice(0, scale).padEnd(scale, '0')}`);
  return m[1] === '-' ? -scaled : scaled;
}

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:([Zz])|([+-])(\d{2}):?(\d{2}))$/;

/** Microseconds since the epoch of an ISO 8601 date-time with a zone, or a refusal. */
export function exactMicros(value: unknown): bigint {
  if (typeof value !== 'string') throw new Refused('timestamp must be text');
  const m = ISO.exec(value);
  if (!m) throw new Refused(`not ISO 8601 with a zone: ${value}`);
  const [y, mo, d, h, mi] = [m[1], m[2], m[3], m[4], m[5]].map(Number) as [
    number,
    number,
    number,
    number,
    number,
  ];
  const s = Number(m[6] ?? 0);
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  const realDay = date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
  if (!realDay || mo < 1 || h > 23 || mi > 59 || s > 59) throw new Refused(`not a real instant: ${value}`);
  const fraction = m[7] ?? '';
  if (/[1-9]/.test(fraction.slice(6))) throw new Refused(`finer than microseconds: ${value}`);
  let offset = 0;
  if (m[9]) {
    const [oh, om] = [Number(m[10]), Number(m[11])];
    if (oh > 23 || om > 59) throw new Refused(`bad offset: ${value}`);
    offset = (m[9] === '-' ? -1 : 1) * (oh * 60 + om);
  }
  date.setUTCHours(h, mi, s, 0);
  const seconds = BigInt(date.getTime() / 1000) - BigInt(offset * 60);
  return seconds * 1_000_000n + BigInt(fraction.slice(0, 6).padEnd(6, '0'));
}

export const canonicalDouble = (n: number): string => (Object.is(n, -0) ? '-0' : String(n));

/** A value as its column stores it, in the canonical text the comparisons use. */
export function convert(type: ColumnType, value: unknown): string {
  switch (type) {
    case 'BIGINT':
      if (Number.isSafeInteger(value)) return String(value);
      throw new Refused('not a safe integer');
    case 'DOUBLE':
      if (typeof value === 'number' && Number.isFinite(value)) return canonicalDouble(value);
      throw new Refused('not a number');
    case 'BOOLEAN':
      if (typeof value === 'boolean') return String(value);
      throw new Refused('not a boolean');
    case 'VARCHAR':
    case 'DATE':
      if (typeof value === 'string') return value;
      throw new Refused('not text');
    case 'TIMESTAMPTZ':
      return String(exactMicros(value));
    case 'JSON':
      if (roundedNumbers(value, '').length > 0)
        throw new Refused('JSON with a number JSON.parse may have rounded');
      return JSON.stringify(value);
    case 'VARCHAR[]':
      if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return JSON.stringify(value);
      throw new Refused('not a list of text');
    case 'BIGINT[]':
      if (Array.isArray(value) && value.every((v) => Number.isSafeInteger(v))) return JSON.stringify(value);
      throw new Refused('not a list of integers');
    default: {
      const m = DECIMAL.exec(type)!;
      return String(exactDecimal(value, Number(m[1]), Number(m[2])));
    }
  }
}

/** DECIMAL's scaled integer (canonical text) as DuckDB prints the value: "-12.500". */
export function decimalAsPrinted(scaled: string, scale: number): string {
  const negative = scaled.startsWith('-');
  const digits = (negative ? scaled.slice(1) : scaled).padStart(scale + 1, '0');
  const text = scale === 0 ? digits : `${digits.slice(0, -scale)}.${digits.slice(-scale)}`;
  return negative ? `-${text}` : text;
}

interface Walk {
  root: PlanNode;
  doc: Record<string, unknown>;
  /** Array and object fields from the record to the current item (`lines[0]`, `user`). */
  trail: string[];
  refusals: ExpectedRefusal[];
  shape: string | null;
  /** What the record's envelope said of it (the `@event_*` and `@label` tokens); none for a bare document. */
  envelope: EnvelopeMeta | undefined;
  rows: Map<string, Cell[][]>;
  columns: Map<string, ColumnDef[]>;
}

function sourceText(source: Source | undefined, shape: string | null): string | null {
  if (source === undefined) return null;
  if (typeof source === 'string') return source;
  const own = shape === null ? undefined : (source as Record<string, string | undefined>)[shape];
  return own ?? source.default ?? null;
}

function readOne(
  alternative: string,
  at: { item: Record<string, unknown>; parent: unknown; unit: unknown; index: number; parentIndex: number },
  w: Walk,
): unknown {
  if (alternative === '#') return at.index;
  if (alternative === '#-') return -(at.index + 1);
  if (alternative === '^#-') return -(at.parentIndex + 1);
  if (alternative.startsWith('=')) return alternative.slice(1);
  if (alternative === '@api_version') return w.shape;
  if (alternative === '@event_id') return w.envelope?.eventId;
  if (alternative === '@event_type') return w.envelope?.eventType;
  if (alternative === '@event_at') return w.envelope?.eventAt;
  if (alternative === '@label') return w.envelope?.label;
  if (alternative === '@envelope') return w.envelope?.rest;
  if (alternative.startsWith('@'))
    throw new Error(`the oracle does not know the source token ${alternative}`);
  let base: unknown = at.item;
  let path = alternative;
  if (alternative.startsWith('$$.')) [base, path] = [w.doc, alternative.slice(3)];
  else if (alternative.startsWith('$.')) [base, path] = [at.unit, alternative.slice(2)];
  else if (alternative.startsWith('^.')) [base, path] = [at.parent, alternative.slice(2)];
  let v = base;
  const parts = path.split('.');
  parts.forEach((part, i) => {
    if (v === null || v === undefined) return;
    if (i > 0 && !isObject(v))
      throw new RefusedAt(`non-object on the way to ${alternative}`, parts.slice(0, i).join('.'), v);
    v = (v as Record<string, unknown>)[part];
  });
  return v;
}

const itemRelative = (alternative: string): boolean =>
  !/^[#=@]/.test(alternative) && !/^(\$\$|\$|\^)\./.test(alternative);

const fieldOf = (alternative: string): string => alternative.replace(/^(\$\$|\$|\^)\./, '');

const join = (trail: readonly string[], path: string): string => [...trail, path].filter(Boolean).join('.');

/** Whether `item` has a field its known tree does not map, or a non-object where columns read inside. */
function unmapped(item: Record<string, unknown>, tree: KnownTree): boolean {
  return Object.keys(item).some((key) => {
    const entry = tree.get(key);
    if (entry === undefined) return true;
    if (typeof entry === 'string') return false;
    const value = item[key];
    return value !== null && value !== undefined && (!isObject(value) || unmapped(value, entry));
  });
}

/** The refused part of a value a column keeps whole: all of it, or the refused fields inside it. */
function refusedPart(value: unknown, path: string, refused: readonly string[]): unknown {
  if (refused.includes(path)) return value;
  if (!isObject(value) || !refused.some((r) => r.startsWith(`${path}.`))) return undefined;
  const out: [string, unknown][] = [];
  for (const key of Object.keys(value)) {
    const part = refusedPart(value[key], `${path}.${key}`, refused);
    if (part !== undefined) out.push([key, part]);
  }
  return out.length ? Object.fromEntries(out) : undefined;
}

/**
 * What a row's `_extra` holds of `item`: unknown fields, refused values at their paths, inside mapped objects
 * only what is unknown or refused there, a non-object where columns read inside, and the unknown fields of a
 * skipped child item under its field. Object.fromEntries keeps a `__proto__` field a field.
 */
function extraOf(
  item: Record<string, unknown>,
  tree: KnownTree,
  refused: readonly string[],
  skipped: Map<string, unknown>,
  prefix: string,
): Record<string, unknown> | undefined {
  const out: [string, unknown][] = [];
  for (const key of Object.keys(item)) {
    const value = item[key];
    const entry = tree.get(key);
    const path = prefix ? `${prefix}.${key}` : key;
    let kept: unknown;
    if (entry === undefined) kept = value;
    else if (entry === 'leaf') kept = refusedPart(value, path, refused);
    else if (entry === 'child') {
      const part = refusedPart(value, path, refused);
      const lost = skipped.get(key);
      kept =
        part === undefined
          ? lost
          : lost === undefined
            ? part
            : Object.fromEntries([...Object.entries(part as object), ...Object.entries(lost as object)]);
    } else if (isObject(value)) kept = extraOf(value, entry, refused, new Map(), path);
    else if (value !== null && value !== undefined) kept = value;
    if (kept !== undefined) out.push([key, kept]);
  }
  return out.length ? Object.fromEntries(out) : undefined;
}

/** Walks an item and its children into `w.rows`; true when the item is skipped (a user without an id). */
function walk(
  node: PlanNode,
  item: Record<string, unknown>,
  parent: unknown,
  unit: unknown,
  index: number,
  parentIndex: number,
  w: Walk,
): boolean {
  const def = tableDef(node.table);
  const columns = sourcedColumns(def);
  const strict = new Set([...def.key, ...unitVersionColumns(def)]);
  if (node.unit) unit = item;
  const at = { item, parent, unit, index, parentIndex };
  /** Paths (relative to the item) of this row's refused values, one per path. */
  const refused: { path: string; value: unknown }[] = [];
  const row: Cell[] = columns.map((column) => {
    const text = sourceText(node.sources?.[column.name] ?? column.source, w.shape);
    if (text === null || text === '@extra' || text === '@absent' || text === '@derived') return null;
    let value: unknown = null;
    let used = '';
    try {
      for (const alternative of text.split('|')) {
        used = alternative;
        value = readOne(alternative, at, w);
        if (value !== null && value !== undefined) break;
      }
      if (value === null || value === undefined) return null;
      return convert(column.type, value);
    } catch (error) {
      if (!(error instanceof Refused)) throw error;
      if (strict.has(column.name)) throw new Refused(`${node.table}.${column.name}: ${error.message}`);
      if (!itemRelative(used)) return null;
      const path = error instanceof RefusedAt ? error.path : fieldOf(used);
      const refusedValue = error instanceof RefusedAt ? error.value : value;
      if (!refused.some((r) => path === r.path || path.startsWith(`${r.path}.`))) {
        for (let i = refused.length - 1; i >= 0; i--)
          if (refused[i]!.path.startsWith(`${path}.`)) refused.splice(i, 1);
        refused.push({ path, value: refusedValue });
      }
      return null;
    }
  });
  columns.forEach((column, k) => {
    if (!column.derive) return;
    const [numerator, denominator] = column.derive.divide.map(
      (name) => row[columns.findIndex((c) => c.name === name)],
    );
    if (numerator == null || denominator == null) return;
    const [n, q] = [BigInt(numerator), BigInt(denominator)];
    if (q !== 0n && n % q === 0n) row[k] = String(n / q);
  });
  if (node.unit) {
    const absentAt = columns.findIndex((c) => c.source === '@absent');
    if (absentAt >= 0) row[absentAt] = absentFields(item, trackedFields(w.root, node, w.shape));
    const keyAt = columns.findIndex((c) => c.name === def.unit!.key);
    if (row[keyAt] === null) {
      if (node.optionalKey) return true;
      throw new Refused(`${node.table}: key ${def.unit!.key} missing`);
    }
  }
  w.columns.set(def.name, columns);
  w.rows.set(def.name, [...(w.rows.get(def.name) ?? []), row]);
  const skipped = new Map<string, unknown>();
  for (const child of node.children ?? []) {
    const value = item[child.field!];
    if (value === null || value === undefined) continue;
    if (child.single) {
      if (!isObject(value)) throw new Refused(`${child.field} is not an object`);
      w.trail.push(child.field!);
      const wasSkipped = walk(child, value, item, unit, 0, index, w);
      w.trail.pop();
      if (wasSkipped) {
        const lost = extraOf(value, knownTree(w.root, child, w.shape), [], new Map(), '');
        if (lost !== undefined) skipped.set(child.field!, lost);
      }
      continue;
    }
    if (!Array.isArray(value)) throw new Refused(`${child.field} is not an array`);
    value.forEach((element, i) => {
      if (!isObject(element)) throw new Refused(`${child.field}[${i}] is not an object`);
      w.trail.push(`${child.field}[${i}]`);
      walk(child, element, item, unit, i, index, w);
      w.trail.pop();
    });
  }
  for (const r of refused) w.refusals.push({ table: def.name, fieldPath: join(w.trail, r.path) });
  const extraAt = columns.findIndex((c) => c.source === '@extra');
  const tree = knownTree(w.root, node, w.shape);
  if (extraAt >= 0 && (refused.length > 0 || skipped.size > 0 || unmapped(item, tree))) {
    const extra = extraOf(
      item,
      tree,
      refused.map((r) => r.path),
      skipped,
      '',
    );
    if (extra !== undefined) {
      row[extraAt] = JSON.stringify(extra);
      // A number JSON.parse may have rounded (beyond 2^53, or not finite) is named too, unless a refusal holds it.
      for (const path of roundedNumbers(extra, ''))
        if (
          !refused.some(
            (r) => path === r.path || path.startsWith(`${r.path}.`) || path.startsWith(`${r.path}[`),
          )
        )
          w.refusals.push({ table: def.name, fieldPath: join(w.trail, path) });
    }
  }
  return false;
}

/** Paths of the numbers in `value` a JSON text may have held other than as parsed: integers from 2^53, or ±Infinity. */
function roundedNumbers(value: unknown, path: string): string[] {
  if (typeof value === 'number')
    return Math.abs(value) >= 2 ** 53 && (Number.isInteger(value) || !Number.isFinite(value)) ? [path] : [];
  if (Array.isArray(value)) return value.flatMap((v, i) => roundedNumbers(v, `${path}[${i}]`));
  if (isObject(value))
    return Object.keys(value).flatMap((k) => roundedNumbers(value[k], path === '' ? k : `${path}.${k}`));
  return [];
}

/** The rows a record of `entity` in order shape `shape` (from an envelope that said `envelope`) must produce, or that it must be refused. */
export function expectRows(
  record: Record<string, unknown>,
  entity: EntityKind,
  shape: string | null,
  envelope?: EnvelopeMeta,
): Expected {
  const unstorable = unstorableText(record, 1);
  if (unstorable) return { rejected: true, why: unstorable };
  const w: Walk = {
    root: plans[entity],
    doc: record,
    trail: [],
    refusals: [],
    shape,
    envelope,
    rows: new Map(),
    columns: new Map(),
  };
  try {
    walk(plans[entity], record, null, record, 0, 0, w);
  } catch (error) {
    if (error instanceof Refused) return { rejected: true, why: error.message };
    throw error;
  }
  const loaded: Expected = { rejected: false, rows: w.rows, columns: w.columns, refusals: w.refusals };
  const missing = missingKeys(loaded);
  return missing.length ? { rejected: true, why: `key missing: ${missing.join(', ')}` } : loaded;
}

/** Nesting beyond the documented limit, or a lone surrogate anywhere (in a value or a field name). */
function unstorableText(value: unknown, depth: number): string | null {
  if (typeof value === 'string') return /\p{Cs}/u.test(value) ? 'a lone surrogate' : null;
  if (typeof value !== 'object' || value === null) return null;
  if (depth > MAX_NESTING) return `nested deeper than ${MAX_NESTING} levels`;
  const entries = Array.isArray(value) ? value.map((v) => ['', v] as const) : Object.entries(value);
  for (const [key, item] of entries) {
    const found = unstorableText(key, 0) ?? unstorableText(item, depth + 1);
    if (found) return found;
  }
  return null;
}

/**
 * Key columns a loaded document would leave NULL (an owned item without its `id` is keyed by its position
 * instead, `#-`, so it is not one of them). The warehouse keys every row (docs/warehouse.md, "Conventions"),
 * so such a document cannot load: it must become a rejection.
 */
export function missingKeys(expected: Expected): string[] {
  if (expected.rejected) return [];
  const out: string[] = [];
  for (const [table, rows] of expected.rows) {
    const columns = expected.columns.get(table)!;
    for (const key of tableDef(table).key) {
      const at = columns.findIndex((c) => c.name === key);
      if (at >= 0 && rows.some((row) => row[at] === null)) out.push(`${table}.${key}`);
    }
  }
  return out;
}
