import fc from 'fast-check';
import type { z } from 'zod';
import { DECIMAL_TEXT } from '../../../schemas/index.js';

/**
 * fast-check arbitraries generated from the shared zod schemas: the fuzz tests get documents shaped like
 * the API's (every field the spec lists, nested as it nests) without restating the spec. Values lean to
 * the edges a warehouse meets: decimals too long or too precise for their column, timestamps with offsets
 * and nanoseconds, ids at the limits of a JSON number, strings with quotes, commas, NULs and emoji.
 * Hostile changes (omissions, wrong types, junk) are layered on top by hostile.ts.
 */

interface ZodDef {
  type: string;
  [key: string]: unknown;
}

const defOf = (schema: unknown): ZodDef => (schema as { _zod: { def: ZodDef } })._zod.def;

/** Characters that break naive CSV, SQL, JSON or C-string handling, mixed into ordinary text. */
const AWKWARD = ['\u0000', '\\', '"', "'", ',', '[', ']', '{', '\n', '\t', '😀', 'é', 'NULL', ' '];

export const textArb: fc.Arbitrary<string> = fc.oneof(
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }), weight: 8 },
  { arbitrary: fc.array(fc.constantFrom(...AWKWARD), { maxLength: 6 }).map((a) => a.join('')), weight: 2 },
  { arbitrary: fc.integer({ min: 1000, max: 20_000 }).map((n) => 'x'.repeat(n)), weight: 1 },
);

const digits = (min: number, max: number) =>
  fc.array(fc.constantFrom(...'0123456789'), { minLength: min, maxLength: max }).map((d) => d.join(''));

/** Decimal text as DECIMAL_TEXT allows it ("12.50", "-0.5", ".5", "1."), from tiny to far too wide. */
export const decimalArb: fc.Arbitrary<string> = fc
  .record({
    negative: fc.boolean(),
    // Most values fit their column; a few are too wide or too precise (a document with dozens of money
    // fields must still load now and then, or the exactness of loaded values goes untested).
    whole: fc.oneof(
      { arbitrary: digits(0, 4), weight: 150 },
      { arbitrary: digits(5, 15), weight: 10 },
      { arbitrary: digits(16, 20), weight: 1 },
    ),
    fraction: fc.oneof(
      { arbitrary: digits(0, 3), weight: 150 },
      { arbitrary: digits(4, 8), weight: 1 },
      // Exact despite the length: trailing zeros beyond the column's scale.
      { arbitrary: digits(1, 2).map((d) => `${d}0000`), weight: 4 },
    ),
    dot: fc.boolean(),
  })
  .map(({ negative, whole, fraction, dot }) => {
    let text = whole;
    if (fraction !== '' || dot) text += `.${fraction}`;
    if (!/\d/.test(text)) text = `0${text}`;
    return `${negative ? '-' : ''}${text}`;
  })
  .filter((text) => DECIMAL_TEXT.test(text));

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** ISO 8601 date-times with a zone, in the spellings the API and other producers use, some impossible. */
export const timestampArb: fc.Arbitrary<string> = fc
  .record({
    year: fc.oneof(
      { arbitrary: fc.integer({ min: 1990, max: 2040 }), weight: 8 },
      fc.integer({ min: 0, max: 9999 }),
    ),
    month: fc.integer({ min: 1, max: 12 }),
    day: fc.oneof(
      { arbitrary: fc.integer({ min: 1, max: 28 }), weight: 30 },
      fc.integer({ min: 29, max: 31 }),
    ),
    hour: fc.integer({ min: 0, max: 23 }),
    minute: fc.integer({ min: 0, max: 59 }),
    second: fc.integer({ min: 0, max: 59 }),
    fraction: fc.oneof(
      { arbitrary: fc.constant(''), weight: 50 },
      { arbitrary: digits(1, 6), weight: 30 },
      { arbitrary: digits(7, 9), weight: 1 },
    ),
    zone: fc.oneof(
      { arbitrary: fc.constant('Z'), weight: 6 },
      fc
        .record({
          sign: fc.constantFrom('+', '-'),
          h: fc.integer({ min: 0, max: 14 }),
          m: fc.constantFrom(0, 30, 45),
        })
        .map(({ sign, h, m }) => `${sign}${pad(h, 2)}:${pad(m, 2)}`),
    ),
  })
  .map(
    (t) =>
      `${pad(t.year, 4)}-${pad(t.month, 2)}-${pad(t.day, 2)}T${pad(t.hour, 2)}:${pad(t.minute, 2)}:` +
      `${pad(t.second, 2)}${t.fraction ? `.${t.fraction}` : ''}${t.zone}`,
  );

/** Integer ids and counts, now and then at the edges of what a JSON number carries exactly. */
export const integerArb: fc.Arbitrary<number> = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 2_000_000_000 }), weight: 12 },
  fc.constantFrom(-1, 0, 2 ** 53 - 1, -(2 ** 53 - 1), 2 ** 31, 2 ** 32 + 1),
);

export const doubleArb: fc.Arbitrary<number> = fc.oneof(
  { arbitrary: fc.integer({ min: 0, max: 100 }).map((n) => n / 100), weight: 4 },
  fc.double({ noNaN: true, noDefaultInfinity: true }),
);

const freeValue = fc.jsonValue({ maxDepth: 3, stringUnit: 'grapheme' });
const freeObjectArb = fc.dictionary(fc.string({ maxLength: 8 }), freeValue, { maxKeys: 3 });

function isOptional(schema: unknown): boolean {
  return defOf(schema).type === 'optional';
}

type CheckDef = { check?: string; pattern?: RegExp; minimum?: number };

function stringArb(def: ZodDef, mode: Mode): fc.Arbitrary<string> {
  if (def.format === 'datetime') return mode === 'tame' ? tameTimestamp : timestampArb;
  const checks = ((def.checks as { _zod: { def: CheckDef } }[] | undefined) ?? []).map((c) => c._zod.def);
  if (checks.some((c) => c.pattern?.source === DECIMAL_TEXT.source))
    return mode === 'tame' ? tameDecimal : decimalArb;
  // A required length (a non-empty order number) is kept, so clean documents stay valid.
  const min = Math.max(0, ...checks.filter((c) => c.check === 'min_length').map((c) => c.minimum ?? 0));
  return min > 0 ? textArb.map((t) => (t.length >= min ? t : t.padEnd(min, 'x'))) : textArb;
}

/**
 * `edgy` values lean to the limits (some too wide or too precise for any column); `tame` values are what
 * the API documents: money within `^-?\d{0,10}(?:\.\d{0,2})?$`, real instants to the microsecond.
 */
export type Mode = 'edgy' | 'tame';

const tameDecimal = fc
  .record({ negative: fc.boolean(), whole: digits(0, 10), fraction: digits(0, 2), dot: fc.boolean() })
  .map(({ negative, whole, fraction, dot }) => {
    const text = `${whole || '0'}${fraction || dot ? `.${fraction}` : ''}`;
    return `${negative ? '-' : ''}${text}`;
  });

const tameTimestamp = fc
  .date({ min: new Date('1990-01-01T00:00:00Z'), max: new Date('2040-12-31T23:59:59Z'), noInvalidDate: true })
  .map((d) => d.toISOString());

const caches: Record<Mode, WeakMap<object, fc.Arbitrary<unknown>>> = {
  edgy: new WeakMap(),
  tame: new WeakMap(),
};

/** An arbitrary value valid for `schema` (before any hostile change). */
export function arbitraryFor(schema: z.ZodType, mode: Mode = 'edgy'): fc.Arbitrary<unknown> {
  const cached = caches[mode].get(schema);
  if (cached) return cached;
  const made = build(schema, mode);
  caches[mode].set(schema, made);
  return made;
}

function build(schema: z.ZodType, mode: Mode): fc.Arbitrary<unknown> {
  const def = defOf(schema);
  const inner = (s: unknown) => arbitraryFor(s as z.ZodType, mode);
  switch (def.type) {
    case 'object': {
      const shape = def.shape as Record<string, z.ZodType>;
      const fields = Object.fromEntries(Object.entries(shape).map(([k, v]) => [k, inner(v)]));
      const requiredKeys = Object.keys(shape).filter((k) => !isOptional(shape[k]));
      return fc.record(fields, { requiredKeys });
    }
    case 'optional':
      return inner(def.innerType);
    case 'nullable':
      return fc.option(inner(def.innerType), { nil: null, freq: 8 });
    case 'string':
      return stringArb(def, mode);
    case 'number':
      return def.format === 'safeint' || def.format === 'int' ? integerArb : doubleArb;
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(inner(def.element), { maxLength: 3 });
    case 'record':
      return freeObjectArb;
    case 'union':
      return fc.oneof(...(def.options as z.ZodType[]).map(inner));
    case 'enum':
      return fc.constantFrom(...Object.values(def.entries as Record<string, string>));
    case 'literal':
      return fc.constantFrom(...(def.values as unknown[]));
    default:
      return freeValue;
  }
}
