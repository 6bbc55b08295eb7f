import type { z } from 'zod';
import type { Rejection } from '../contracts.js';

/**
 * Record validation (docs/operations.md, "What a run promises": honest): a record that fails its schema
 * becomes a Rejection carrying the reason and the raw JSON, unless its only problems are values normalize
 * refuses one by one (`loadsWithFieldRejections`). It is never thrown (one bad record must not end a run)
 * and never dropped.
 */

const MAX_ISSUES = 5;

/** "lines.0.price: expected decimal text …; id: expected an integer id" */
export function issuesText(error: z.ZodError): string {
  const issues = error.issues.slice(0, MAX_ISSUES).map((issue) => {
    const path = issue.path.map(String).join('.');
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  const more = error.issues.length - MAX_ISSUES;
  return issues.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** The record's key when one can be read: its id (or order number), else null. */
export function recordKey(raw: unknown): string | null {
  if (raw === null || typeof raw !== 'object') return null;
  const { id, number } = raw as { id?: unknown; number?: unknown };
  for (const value of [id, number]) {
    if (typeof value === 'number' || (typeof value === 'string' && value !== '')) return String(value);
  }
  return null;
}

export interface Validated {
  /** Records exactly as received (unknown fields kept): the schemas only check, they do not reshape. */
  records: Record<string, unknown>[];
  rejections: Rejection[];
}

/** The fields that key a record: a bad value there leaves nothing to load it under. */
const KEY_FIELDS = new Set(['id', 'number']);

/** Types whose absence is a record of another shape, not a value that does not fit. */
const CONTAINERS = new Set(['object', 'array', 'record', 'tuple', 'map', 'set']);

type Issue = z.core.$ZodIssue;

/** `lines[0].price` */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path)
    out += typeof segment === 'number' ? `[${segment}]` : `${out === '' ? '' : '.'}${String(segment)}`;
  return out;
}

/** Whether an issue says the record's structure is not the expected one: an object or array where one was due. */
function structural(issue: Issue): boolean {
  if (issue.code === 'invalid_type') return CONTAINERS.has(issue.expected);
  if (issue.code === 'invalid_union')
    return issue.errors.some((branch) => branch.some((i) => i.path.length === 0 && structural(i)));
  return false;
}

function valueAt(record: unknown, path: readonly PropertyKey[]): unknown {
  let value = record;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/**
 * Whether a record that failed its schema still loads, its bad values refused one by one by normalize (which
 * sets the column NULL, keeps the value in `_extra` and writes a `field` rejection; docs/warehouse.md,
 * "Rejections, raw landing and rebuild"). Only a value that is there can be refused and kept: so not when an
 * issue is on the record itself, its key, its version (`versionFields`: a record that cannot be ordered
 * cannot be merged), its structure (normalize reads children from the arrays and objects the schema
 * promises), or a value that is missing or null (nothing would show the problem).
 */
function loadsWithFieldRejections(
  item: unknown,
  issues: readonly Issue[],
  versionFields: ReadonlySet<string>,
) {
  return issues.every((issue) => {
    const [top] = issue.path;
    if (top === undefined || typeof top !== 'string') return false;
    if (KEY_FIELDS.has(top) || versionFields.has(top) || structural(issue)) return false;
    const value = valueAt(item, issue.path);
    return value !== undefined && value !== null;
  });
}

/**
 * `versionFields`: the record fields its unit's version is read from (the stream's table's `unit.version`,
 * given by the pipeline, which knows the model): a bad value there rejects the record whole.
 */
export function validateRecords(
  schema: z.ZodType,
  items: readonly unknown[],
  stream: string,
  source: string,
  versionFields: readonly string[] = [],
): Validated {
  const out: Validated = { records: [], rejections: [] };
  const guarded = new Set(versionFields);
  const vouches = quickCheck(schema);
  for (const item of items) {
    if (vouches(item)) {
      out.records.push(item as Record<string, unknown>);
      continue;
    }
    const parsed = schema.safeParse(item);
    if (parsed.success || loadsWithFieldRejections(item, parsed.error.issues, guarded)) {
      out.records.push(item as Record<string, unknown>);
    } else {
      const first = parsed.error.issues[0];
      out.rejections.push({
        stream,
        key: recordKey(item),
        reason: issuesText(parsed.error),
        raw: item,
        source,
        ...(first && first.path.length > 0 ? { fieldPath: issuePath(first.path) } : {}),
      });
    }
  }
  return out;
}

/**
 * A quick check that vouches for records the schema accepts: true only when zod's safeParse would succeed,
 * so a record it vouches for is kept without zod, and every other one goes through zod, which makes every
 * decision and message. Zod's parse of a page of 100 subscriptions takes about twice what this check takes
 * (the same patterns run in both; docs/performance.md, "Issue 32 point 1"): the check reads the record once
 * and allocates nothing. It is compiled from the schema's definition for the kinds of schema the
 * resource schemas are made of (schemas/primitives.ts, schemas/resources.ts): objects that keep or strip
 * unknown keys, arrays, records of string keys, strings with regular-expression formats, integers and
 * numbers without bounds, booleans, enums, literals, optional, nullable and unknown. Any other kind, or a
 * check it does not know (a bound, a refinement, a transform), vouches for nothing below it, and zod decides.
 * test/extract/validate-quick.test.ts checks on every sandbox record and on mutations of them that it never
 * vouches for a record zod refuses.
 */
type Quick = (value: unknown) => boolean;

const NOT_SURE: Quick = () => false;
/** Deeper schemas (a recursive one, say) are left to zod. */
const MAX_SCHEMA_DEPTH = 32;
/** String formats that are exactly their pattern's test (zod's $ZodStringFormat with no check of its own). */
const PATTERN_FORMATS = new Set(['regex', 'datetime', 'date']);

const quickChecks = new WeakMap<z.ZodType, Quick>();

export function quickCheck(schema: z.ZodType): Quick {
  let quick = quickChecks.get(schema);
  if (!quick) {
    quick = compileQuick(schema, 0);
    quickChecks.set(schema, quick);
  }
  return quick;
}

interface Def {
  type: string;
  checks?: readonly { _zod: { def: Def & { check?: string; format?: string; pattern?: RegExp } } }[];
  check?: string;
  format?: string;
  pattern?: RegExp;
  innerType?: z.ZodType;
  element?: z.ZodType;
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  entries?: Record<string, unknown>;
  values?: readonly unknown[];
}

const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** The patterns a string must match, or null when one of its checks is not a plain pattern test. */
function stringPatterns(def: Def): RegExp[] | null {
  const patterns: RegExp[] = [];
  const own = def.check === undefined ? [] : [def];
  for (const check of [...own, ...(def.checks ?? []).map((c) => c._zod.def)]) {
    if (check.check !== 'string_format' || !check.pattern || !PATTERN_FORMATS.has(check.format ?? ''))
      return null;
    patterns.push(check.pattern);
  }
  return patterns;
}

function testAll(patterns: readonly RegExp[], value: string): boolean {
  for (const pattern of patterns) {
    pattern.lastIndex = 0;
    if (!pattern.test(value)) return false;
  }
  return true;
}

function compileQuick(schema: z.ZodType, depth: number): Quick {
  if (depth > MAX_SCHEMA_DEPTH) return NOT_SURE;
  const def = defOf(schema);
  const inner = (child: z.ZodType | undefined) => (child ? compileQuick(child, depth + 1) : NOT_SURE);
  const noChecks = (def.checks ?? []).length === 0 && def.check === undefined;
  switch (def.type) {
    // Anything but a missing value: zod 4 refuses an object without a required unknown or any key (an
    // undefined value as well, unless the key is there: that is left to zod).
    case 'unknown':
    case 'any':
      return (v) => v !== undefined;
    case 'boolean':
      return noChecks ? (v) => typeof v === 'boolean' : NOT_SURE;
    case 'string': {
      const patterns = stringPatterns(def);
      if (!patterns) return NOT_SURE;
      if (patterns.length === 0) return (v) => typeof v === 'string';
      return (v) => typeof v === 'string' && testAll(patterns, v);
    }
    case 'number': {
      if ((def.checks ?? []).length > 0) return NOT_SURE;
      if (def.check === undefined) return (v) => typeof v === 'number' && Number.isFinite(v);
      if (def.check === 'number_format' && def.format === 'safeint') return (v) => Number.isSafeInteger(v);
      return NOT_SURE;
    }
    case 'optional': {
      const check = inner(def.innerType);
      return noChecks ? (v) => v === undefined || check(v) : NOT_SURE;
    }
    case 'nullable': {
      const check = inner(def.innerType);
      return noChecks ? (v) => v === null || check(v) : NOT_SURE;
    }
    case 'array': {
      const check = inner(def.element);
      if (!noChecks) return NOT_SURE;
      return (v) => {
        if (!Array.isArray(v)) return false;
        for (const element of v) if (!check(element)) return false;
        return true;
      };
    }
    case 'object': {
      // Strict objects refuse unknown keys: left to zod. Stripping and loose ones accept them.
      if (!noChecks || (def.catchall !== undefined && defOf(def.catchall).type !== 'unknown'))
        return NOT_SURE;
      const fields = Object.entries(def.shape ?? {}).map(([key, child]) => [key, inner(child)] as const);
      return (v) => {
        if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
        const record = v as Record<string, unknown>;
        for (const [key, check] of fields) if (!check(record[key])) return false;
        return true;
      };
    }
    case 'record': {
      const key = def.keyType && defOf(def.keyType);
      if (!noChecks || !key || key.type !== 'string' || stringPatterns(key)?.length !== 0) return NOT_SURE;
      const check = inner(def.valueType);
      return (v) => {
        // A plain object, as zod requires; a `__proto__` key is left to zod.
        if (typeof v !== 'object' || v === null || Object.getPrototypeOf(v) !== Object.prototype)
          return false;
        if (Object.hasOwn(v, '__proto__')) return false;
        for (const value of Object.values(v)) if (!check(value)) return false;
        return true;
      };
    }
    case 'enum': {
      const allowed = new Set(Object.values(def.entries ?? {}));
      return noChecks ? (v) => allowed.has(v) : NOT_SURE;
    }
    case 'literal': {
      const allowed = new Set(def.values ?? []);
      return noChecks ? (v) => allowed.has(v) : NOT_SURE;
    }
    default:
      return NOT_SURE;
  }
}
