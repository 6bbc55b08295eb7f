import fc from 'fast-check';

/**
 * Hostile changes to a well-formed document: a field dropped or nulled, an extra field, a value of the
 * wrong type, an extreme number, money written as "1e5" or "NaN", a timestamp that is not ISO 8601, a
 * long string or deeply nested junk. Each change names a node by its position in a depth-first walk, so
 * fast-check shrinks a failing case to the few changes that matter.
 */

export type Change =
  | { kind: 'drop'; at: number }
  | { kind: 'null'; at: number }
  | { kind: 'extra'; at: number; key: string; value: unknown }
  | { kind: 'replace'; at: number; value: unknown };

/** Junk nested `depth` levels deep, as arrays or objects. */
export function nested(depth: number, asObjects: boolean): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = asObjects ? { deeper: value } : [value];
  return value;
}

/** Values that look like what a column wants but are not, or are at the edge of it. */
export const JUNK_TEXT = [
  '1e5',
  'NaN',
  'Infinity',
  '-Infinity',
  '1,000.00',
  ' 12.5',
  '12.5 ',
  '0x1F',
  '',
  '-',
  '.',
  'null',
  'true',
  '2024/01/01',
  'yesterday',
  '1700000000',
  '2024-13-45T25:61:61Z',
  '2024-02-30T00:00:00Z',
  '2024-05-01T10:00:00',
  '2024-05-01',
  '99999999999999999999.99',
];

export const JUNK_NUMBERS = [
  1e21,
  2 ** 53 + 2,
  -1,
  0.5,
  -0,
  1e-7,
  123456789012345680000,
  Number.MAX_VALUE,
  Number.MIN_VALUE,
  -(2 ** 63),
];

export const junkArb: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: fc.constantFrom(...JUNK_TEXT), weight: 6 },
  { arbitrary: fc.constantFrom(...JUNK_NUMBERS), weight: 4 },
  fc.boolean(),
  fc.constant({}),
  fc.constant([]),
  fc.string({ unit: 'grapheme', maxLength: 6 }),
  fc.double({ noNaN: true, noDefaultInfinity: true }),
  fc.jsonValue({ maxDepth: 2, stringUnit: 'grapheme' }),
  fc.integer({ min: 1000, max: 20_000 }).map((n) => '9'.repeat(n)),
  fc
    .record({ depth: fc.integer({ min: 20, max: 1500 }), asObjects: fc.boolean() })
    .map((d) => nested(d.depth, d.asObjects)),
);

export const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.record({ kind: fc.constant('drop' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('null' as const), at: fc.nat() }),
  fc.record({
    kind: fc.constant('extra' as const),
    at: fc.nat(),
    key: fc.string({ minLength: 1, maxLength: 10 }),
    value: fc.jsonValue({ maxDepth: 2 }),
  }),
  {
    arbitrary: fc.record({ kind: fc.constant('replace' as const), at: fc.nat(), value: junkArb }),
    weight: 3,
  },
);

type Container = Record<string, unknown> | unknown[];
interface Slot {
  holder: Container;
  key: string | number;
}

const isContainer = (v: unknown): v is Container => typeof v === 'object' && v !== null;

/** Every value below the root, depth first: where a change can land (never inside injected junk). */
function slots(root: Container, junk: WeakSet<object>): Slot[] {
  const out: Slot[] = [];
  const walk = (holder: Container) => {
    const keys = Array.isArray(holder) ? holder.map((_, i) => i) : Object.keys(holder);
    for (const key of keys) {
      out.push({ holder, key });
      const value = (holder as Record<string | number, unknown>)[key];
      if (isContainer(value) && !junk.has(value)) walk(value);
    }
  };
  walk(root);
  return out;
}

/** A copy of `doc` with the changes applied in order (the root itself stays an object). */
export function applyChanges<T extends Record<string, unknown>>(doc: T, changes: readonly Change[]): T {
  const copy = structuredClone(doc);
  const junk = new WeakSet<object>();
  for (const change of changes) {
    const all = slots(copy, junk);
    if (change.kind === 'extra') {
      const objects: Record<string, unknown>[] = [
        copy,
        ...all
          .map((s) => (s.holder as Record<string | number, unknown>)[s.key])
          .filter((v): v is Record<string, unknown> => isContainer(v) && !Array.isArray(v)),
      ];
      const target = objects[change.at % objects.length]!;
      target[`x_${change.key}`] = change.value;
      if (isContainer(change.value)) junk.add(change.value);
      continue;
    }
    if (all.length === 0) continue;
    const { holder, key } = all[change.at % all.length]!;
    if (change.kind === 'drop') {
      if (Array.isArray(holder)) holder.splice(key as number, 1);
      else delete holder[key as string];
    } else {
      const value = change.kind === 'null' ? null : change.value;
      if (isContainer(value)) junk.add(value);
      (holder as Record<string | number, unknown>)[key] = value;
    }
  }
  return copy;
}
