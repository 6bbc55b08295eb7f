import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { nested } from './support/hostile.js';

/**
 * The hostile values the fuzzers found or aim at, pinned one by one so that a regression names itself:
 * each document must load exactly or land in `_rejected_records` with a reason, and the file's other
 * documents must load either way. The ingest never throws for what is inside a document.
 */

let dir: string;
let warehouse: Warehouse;
let files = 0;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-hostile-values-'));
  warehouse = await openWarehouse(path.join(dir, 'hostile.duckdb'));
});

after(async () => {
  await warehouse?.close();
  await rm(dir, { recursive: true, force: true });
});

const order = (number: string, extra: Record<string, unknown>) => ({
  number,
  total_incl_tax: '10.00',
  updated_at: '2024-05-01T10:00:00Z',
  ...extra,
});

/**
 * Ingests the hostile document between two good ones; answers what became of the hostile one: whether it
 * loaded, and the reason and level of its rejection, if any (`field`: it loaded without the value).
 */
async function ingestBetween(
  hostileLine: string,
): Promise<{ loaded: boolean; reason: string | null; level: string | null }> {
  const store = `hostile_${++files}`;
  const input = path.join(dir, `${store}.ndjson`);
  const good = (n: string) => JSON.stringify(order(n, {}));
  await writeFile(input, `${good('GOOD-1')}\n${hostileLine}\n${good('GOOD-2')}\n`);
  await ingestPaths(warehouse, [input], { store, runId: `run-${store}`, logger: silentLogger });
  return warehouse.exclusive(async () => {
    const numbers = await warehouse.connection.runAndReadAll(
      `SELECT number FROM orders WHERE _store = '${store}' ORDER BY number`,
    );
    const good = numbers.getRows().map((r) => String(r[0]));
    assert.ok(
      good.includes('GOOD-1') && good.includes('GOOD-2'),
      `the good documents around it loaded: ${good}`,
    );
    const rejected = await warehouse.connection.runAndReadAll(
      `SELECT reason, level FROM _rejected_records WHERE _store = '${store}' AND source LIKE '%:2'`,
    );
    const [reason, level] = rejected.getRows()[0] ?? [];
    return {
      loaded: good.length === 3,
      reason: reason === undefined ? null : String(reason),
      level: level === undefined ? null : String(level),
    };
  });
}

/**
 * Each outcome is honest: loaded, loaded without a value that did not fit (a field rejection), or rejected
 * whole. What is not: loaded and rejected whole, neither, or a rejection without a reason.
 */
function assertLoadedOrRejected(outcome: { loaded: boolean; reason: string | null; level: string | null }) {
  assert.notEqual(
    outcome.loaded,
    outcome.level === 'record',
    `loaded ${outcome.loaded}, rejected (${outcome.level}) ${outcome.reason}`,
  );
  if (outcome.reason !== null) assert.ok(outcome.reason.length > 0);
}

test('ingest: money that does not fit loads the order without it, as a field rejection', async () => {
  const outcome = await ingestBetween(JSON.stringify(order('H', { total_cost: '1e5' })));
  assert.deepEqual([outcome.loaded, outcome.level], [true, 'field']);
  assert.match(String(outcome.reason), /^orders: total_cost: got "1e5", expected decimal text/);
});

const cases: [string, string][] = [
  ['an order line without an id', JSON.stringify(order('H', { lines: [{ product_id: 1, quantity: 1 }] }))],
  ['an order-level tax line without an id', JSON.stringify(order('H', { tax_lines: [{ amount: '1.00' }] }))],
  [
    'a fulfillment line item without an id',
    JSON.stringify(
      order('H', { fulfillments: [{ id: 5, created_at: '2024-01-01T00:00:00Z', line_items: [{}] }] }),
    ),
  ],
  [
    'a lone surrogate in free-form metadata',
    '{"number":"H","total_incl_tax":"1.00","metadata":{"a":"\\ud800"}}',
  ],
  ['a lone surrogate in a tag', '{"number":"H","total_incl_tax":"1.00","tags":["\\udfff"]}'],
  // Built as text: JSON.stringify itself cannot write it (V8 overflows its stack near 5,000 levels).
  [
    'metadata nested 6,000 levels deep',
    `{"number":"H","total_incl_tax":"1.00","metadata":{"junk":${'['.repeat(6000)}${']'.repeat(6000)}}}`,
  ],
  [
    'metadata nested 1,000 levels deep',
    JSON.stringify(order('H', { metadata: { junk: nested(1000, true) } })),
  ],
  ['money as "1e5"', JSON.stringify(order('H', { total_cost: '1e5' }))],
  ['money as "NaN"', JSON.stringify(order('H', { total_cost: 'NaN' }))],
  ['money as a JSON number', JSON.stringify(order('H', { total_cost: 12.5 }))],
  ['money with more decimals than the column', JSON.stringify(order('H', { total_cost: '1.0005' }))],
  ['a timestamp that is not ISO 8601', JSON.stringify(order('H', { created_at: '2024/05/01 10:00' }))],
  [
    'a timestamp on a day that does not exist',
    JSON.stringify(order('H', { created_at: '2024-02-30T00:00:00Z' })),
  ],
  ['an id beyond 2^53', '{"number":"H","total_incl_tax":"1.00","lines":[{"id":9007199254740993}]}'],
  ['an id that is text', JSON.stringify(order('H', { lines: [{ id: 'seven' }] }))],
  ['a string of 1 MB', JSON.stringify(order('H', { shipping_method: 'x'.repeat(1 << 20) }))],
];

for (const [name, line] of cases) {
  test(`ingest: ${name} loads exactly or is rejected with a reason`, async () => {
    assertLoadedOrRejected(await ingestBetween(line));
  });
}

test('ingest: a lone surrogate in a text column is not silently replaced', async () => {
  const outcome = await ingestBetween('{"number":"H","total_incl_tax":"1.00","currency":"\\ud800x"}');
  assertLoadedOrRejected(outcome);
  if (!outcome.loaded) return;
  const stored = await warehouse.exclusive(() =>
    warehouse.connection.runAndReadAll(
      `SELECT currency FROM orders WHERE _store = 'hostile_${files}' AND number = 'H'`,
    ),
  );
  assert.equal(stored.getRows()[0]?.[0], '\ud800x', 'stored exactly, or else rejected');
});
