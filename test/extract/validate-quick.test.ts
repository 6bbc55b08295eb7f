import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as z from 'zod';
import {
  FulfillmentOrder,
  Location,
  MetadataDefinition,
  Order2023,
  Order2024,
  Product,
  Subscription,
  Ticket,
} from '../../schemas/index.js';
import { quickCheck, validateRecords } from '../../src/extract/validate.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { storeParts } from '../sandbox/model-helpers.js';

/**
 * The quick check before zod (validate.ts) may only vouch for records zod accepts: checked on sandbox records
 * as the API sends them (JSON) and on every value of them replaced by values of other kinds and shapes.
 */

const parts = storeParts(3);
const asReceived = (value: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(value));
const orders = [0, 1, 2].map((k) => parts.orders.find(orderNumberOf(k))!);
const samples: [string, z.ZodType, Record<string, unknown>[]][] = [
  ['Product', Product, parts.catalogue.items.slice(0, 3).map(asReceived)],
  ['Subscription', Subscription, parts.book.items.slice(0, 3).map(asReceived)],
  ['FulfillmentOrder', FulfillmentOrder, parts.fulfillmentOrders.items.slice(0, 3).map(asReceived)],
  ['Location', Location, parts.locations.items.slice(0, 3).map(asReceived)],
  ['MetadataDefinition', MetadataDefinition, parts.metadata.slice(0, 3).map(asReceived)],
  ['Ticket', Ticket, parts.tickets.slice(0, 3).map(asReceived)],
  ['Order2024', Order2024, orders.map((o) => asReceived(renderOrder2024(o)))],
  ['Order2023', Order2023, orders.map((o) => asReceived(renderOrder2023(o)))],
];

const REPLACEMENTS: unknown[] = [
  undefined,
  null,
  0,
  -1,
  1.5,
  2 ** 60,
  '',
  'x',
  '12.50',
  '1e5',
  '2026-01-15T12:00:00Z',
  '2026-02-30T12:00:00Z',
  '2026-01-15',
  true,
  [],
  [1],
  {},
  { id: 'x' },
];

/** Every path to a value inside `value` (objects' keys, arrays' indexes), the record itself excluded. */
function paths(value: unknown, prefix: PropertyKey[] = []): PropertyKey[][] {
  if (typeof value !== 'object' || value === null) return [];
  const keys = Array.isArray(value) ? value.map((_, i) => i) : Object.keys(value);
  return keys.flatMap((key) => {
    const path = [...prefix, key];
    return [path, ...paths((value as Record<PropertyKey, unknown>)[key], path)];
  });
}

function replaced(record: Record<string, unknown>, path: PropertyKey[], with_: unknown): unknown {
  const copy = structuredClone(record);
  let at: Record<PropertyKey, unknown> = copy;
  for (const key of path.slice(0, -1)) at = at[key] as Record<PropertyKey, unknown>;
  const last = path[path.length - 1]!;
  if (with_ === undefined && !Array.isArray(at)) delete at[last];
  else at[last] = with_;
  return copy;
}

test('the quick check vouches for the records the API sends (zod is the rare path)', () => {
  for (const [name, schema, records] of samples) {
    assert.ok(records.length > 0, `${name}: sandbox records`);
    for (const record of records) {
      assert.ok(schema.safeParse(record).success, `${name} ${record.id}: zod accepts it`);
      // Orders carry a union (lines of several shapes): zod decides for them, the check must stay sound.
      if (!name.startsWith('Order'))
        assert.ok(quickCheck(schema)(record), `${name} ${record.id}: vouched for`);
    }
  }
});

test('the quick check never vouches for a record zod refuses', () => {
  let refused = 0;
  let vouched = 0;
  for (const [name, schema, records] of samples) {
    const quick = quickCheck(schema);
    // One record of each: every value of it is replaced by each of the values above.
    for (const record of records.slice(0, 1))
      for (const path of paths(record))
        for (const value of REPLACEMENTS) {
          const candidate = replaced(record, path, value);
          const accepted = schema.safeParse(candidate).success;
          if (quick(candidate)) {
            vouched++;
            assert.ok(
              accepted,
              `${name}: vouched for ${path.join('.')} = ${JSON.stringify(value)}, zod refuses`,
            );
          }
          if (!accepted) refused++;
        }
  }
  // The mutations reach both sides: zod refuses many, the check vouches for many.
  assert.ok(refused > 1000, `refused ${refused}`);
  assert.ok(vouched > 1000, `vouched ${vouched}`);
});

test('schemas the check does not know are left to zod, with the same decisions and messages', () => {
  const schema = z.looseObject({
    id: z.int().min(3),
    s: z.string().refine((v) => v !== 'no', { message: 'not no' }),
    strict: z.strictObject({ a: z.string() }).nullish(),
  });
  const quick = quickCheck(schema);
  const items = [
    { id: 5, s: 'yes' },
    { id: 1, s: 'yes' },
    { id: 6, s: 'no' },
    { id: 7, s: 'yes', strict: { a: 'x', b: 1 } },
  ];
  for (const item of items) assert.equal(quick(item), false, JSON.stringify(item));
  const out = validateRecords(schema, items, 'toy', 'GET /toy/');
  // A bad key rejects the record whole; bad values that are there load, refused one by one by normalize.
  assert.deepEqual(
    out.records.map((r) => r.id),
    [5, 6, 7],
  );
  assert.deepEqual(
    out.rejections.map((r) => [r.key, r.reason]),
    [['1', 'id: Too small: expected number to be >=3']],
  );
  // A required unknown or any field must be there: zod refuses a record without it, so the check must not
  // vouch for one.
  const loose = z.looseObject({ id: z.int(), raw: z.unknown(), any: z.any() });
  const present = { id: 2, raw: null, any: 0 };
  assert.equal(quickCheck(loose)({ id: 1 }), false);
  assert.equal(quickCheck(loose)(present), true);
  const checked = validateRecords(loose, [{ id: 1 }, present], 'toy', 'GET /toy/');
  assert.deepEqual(checked.records, [present]);
  assert.deepEqual(
    checked.rejections.map((r) => [r.key, r.reason]),
    [
      [
        '1',
        'raw: Invalid input: expected nonoptional, received undefined; any: Invalid input: expected nonoptional, received undefined',
      ],
    ],
  );
});
