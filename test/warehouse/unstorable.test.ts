import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { MAX_NESTING, NormalizeError, Normalizer } from '../../src/normalize/index.js';
import { tableRows, tempWarehouse } from './helpers.js';

/**
 * Records the warehouse cannot store as received: a row without its key, nesting beyond MAX_NESTING (deep
 * enough that JSON.stringify itself overflows), a lone UTF-16 surrogate. Each is a rejection of its own
 * record with a precise reason; never a DuckDB error, a stack overflow, a partial parent or a silent U+FFFD.
 */

/** Arrays nested `depth` levels, built without recursion. */
function nestedArrays(depth: number): unknown {
  let value: unknown = 'bottom';
  for (let i = 0; i < depth; i++) value = [value];
  return value;
}

function refusal(record: Record<string, unknown>, entity: 'order' | 'ticket' = 'order'): string {
  const normalizer = new Normalizer();
  try {
    normalizer.normalize(record, entity, null);
  } catch (error) {
    assert.ok(error instanceof NormalizeError, `a NormalizeError, not ${String(error)}`);
    for (const rows of normalizer.tables.values())
      assert.equal(rows.length, 0, `no rows left in ${rows.name}`);
    return error.reason;
  }
  assert.fail('the record loaded');
}

describe('normalize: unstorable records are refused whole, naming the field', () => {
  const order = (extra: Record<string, unknown>) => ({ number: 'H', total_incl_tax: '10.00', ...extra });

  // An item without its id is keyed by its position (positional-ids.test.ts); one whose id is there but is
  // not an integer is still refused whole, naming the id and the value.
  const badIds: [string, Record<string, unknown>, string][] = [
    ['an order line', order({ lines: [{ id: 'L-1', quantity: 1 }] }), 'lines[0].id: got "L-1"'],
    ['an order tax line', order({ tax_lines: [{ id: 1.5, amount: '1.00' }] }), 'tax_lines[0].id: got 1.5'],
    ['a transaction', order({ transactions: [{ id: 1 }, { id: {} }] }), 'transactions[1].id: got {}'],
    [
      'a fulfillment line item',
      order({ fulfillments: [{ id: 5, line_items: [{ id: true, quantity: 1 }] }] }),
      'fulfillments[0].line_items[0].id: got true',
    ],
    [
      'a refund line',
      order({ refunds: [{ id: 3, refund_line_items: [{ id: 'r', quantity: 1 }] }] }),
      'refunds[0].refund_line_items[0].id: got "r"',
    ],
  ];
  for (const [what, record, reason] of badIds) {
    it(`${what} whose id is not an integer`, () => {
      assert.equal(refusal(record), `${reason}, expected an integer`);
    });
  }

  it('a ticket comment whose id is not an integer', () => {
    const ticket = { id: 9, subject: 's', comments: [{ id: 'c-1', body: 'hi' }] };
    assert.equal(refusal(ticket, 'ticket'), 'comments[0].id: got "c-1", expected an integer');
  });

  it('an order without its number', () => {
    assert.equal(refusal({ total_incl_tax: '1.00' }), 'number: missing, expected a string');
  });

  it('a lone surrogate in a text column, a list or a field name', () => {
    const tail = 'contains an unpaired UTF-16 surrogate, which cannot be stored as UTF-8';
    assert.match(refusal(order({ currency: '\ud800x' })), new RegExp(`^currency: ${tail}`));
    assert.match(refusal(order({ tags: ['ok', '\udfff'] })), new RegExp(`^tags\\[1\\]: ${tail}`));
    assert.match(refusal(order({ metadata: { 'k\udc00': 1 } })), /^metadata\["k\\udc00"\]: the field name/);
  });

  it('a well-formed surrogate pair is text like any other', () => {
    const normalizer = new Normalizer();
    normalizer.normalize(order({ currency: '😀' }), 'order', null);
    assert.equal(normalizer.tables.get('orders')!.length, 1);
  });

  it(`nesting up to ${MAX_NESTING} levels loads, deeper is refused, however deep`, () => {
    // The record is level 1 and `metadata` level 2, so the junk may take MAX_NESTING - 2 more levels.
    const normalizer = new Normalizer();
    normalizer.normalize(order({ metadata: { junk: nestedArrays(MAX_NESTING - 2) } }), 'order', null);
    assert.equal(normalizer.tables.get('orders')!.length, 1);
    for (const depth of [MAX_NESTING - 1, 100_000]) {
      const reason = refusal(order({ metadata: { junk: nestedArrays(depth) } }));
      assert.match(reason, new RegExp(`^metadata\\.junk\\[0\\].*: nested deeper than ${MAX_NESTING} levels`));
    }
  });
});

describe('normalize: a value that does not fit its column is refused alone', () => {
  const order = (extra: Record<string, unknown>) => ({
    number: 'H',
    updated_at: '2024-05-01T10:00:00Z',
    ...extra,
  });
  const cell = (normalizer: Normalizer, table: string, column: string, row = 0) => {
    const rows = normalizer.tables.get(table)!;
    return rows.get(
      rows.columns.findIndex((c) => c.name === column),
      row,
    );
  };

  for (const [what, fields, table, column, path, expected] of [
    [
      'money with more decimals than the column',
      { total_incl_tax: '1.0001' },
      'orders',
      'total_incl_tax',
      'total_incl_tax',
      /DECIMAL\(18,3\)/,
    ],
    [
      'a timestamp that is not ISO 8601',
      { created_at: '2024/05/01' },
      'orders',
      'created_at',
      'created_at',
      /ISO 8601/,
    ],
    [
      'an integer that is text, on a line',
      { lines: [{ id: 1, quantity: '2' }] },
      'order_lines',
      'quantity',
      'lines[0].quantity',
      /^an integer$/,
    ],
    [
      'text where an address object belongs',
      { billing_address: 'x' },
      'orders',
      'billing_line1',
      'billing_address',
      /^an object$/,
    ],
  ] as const) {
    it(`${what}: the row loads with the column NULL and the value in _extra`, () => {
      const normalizer = new Normalizer();
      const refusals = normalizer.normalize(order(fields), 'order', null);
      assert.deepEqual(
        refusals.map((r) => [r.table, r.key, r.fieldPath]),
        [[table, 'H', path]],
      );
      assert.match(refusals[0]!.expected, expected);
      assert.equal(
        refusals[0]!.reason,
        `${path}: got ${JSON.stringify(refusals[0]!.value)}, expected ${refusals[0]!.expected}`,
      );
      assert.equal(cell(normalizer, table, column), null);
      const extra = JSON.parse(String(cell(normalizer, table, '_extra')));
      const field = path.split('.').pop()!;
      assert.deepEqual(extra, { [field]: refusals[0]!.value });
    });
  }

  it('a record with no refused value gets the shared empty list', () => {
    const normalizer = new Normalizer();
    const first = normalizer.normalize(order({}), 'order', null);
    assert.equal(first.length, 0);
    assert.ok(Object.isFrozen(first));
    assert.equal(normalizer.normalize(order({ number: 'H2' }), 'order', null), first);
  });

  it("a refused record's field rejections go with it", () => {
    const normalizer = new Normalizer();
    assert.throws(
      () => normalizer.normalize(order({ total_cost: 'x', lines: [{ id: 'one' }] }), 'order', null),
      (error: unknown) => error instanceof NormalizeError && error.fieldPath === 'lines[0].id',
    );
    assert.deepEqual(normalizer.normalize(order({}), 'order', null), []);
    for (const rows of normalizer.tables.values())
      assert.equal(rows.length, rows.name === 'orders' ? 1 : 0, rows.name);
  });
});

describe('warehouse: a record too deep to serialize is a rejection, rebuilt the same', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
  });
  after(() => cleanup());

  it('commitPage lands a marker, rejects the record and commits the rest of the page', async () => {
    const deep = { id: 7, subject: 'deep', metadata: { junk: nestedArrays(20_000) } };
    assert.throws(() => JSON.stringify(deep), RangeError, 'deep enough that JSON.stringify overflows');
    const page: PageCommit = {
      store: 'shop',
      stream: 'tickets',
      entity: 'ticket',
      runId: 'run-1',
      records: [{ id: 6, subject: 'fine' }, deep, { id: 8, subject: 'fine too' }],
      rejections: [
        { stream: 'tickets', key: '9', reason: 'from extract', raw: { junk: nestedArrays(20_000) } },
      ],
      state: emptyStreamState(),
    };
    const counts = await warehouse.commitPage(page);
    assert.equal(counts.rejections, 2);
    const ids = (await tableRows(warehouse.connection, 'tickets')).map((r) => r.id);
    assert.deepEqual(ids, [6, 8]);
    const before = await tableRows(warehouse.connection, '_rejected_records', { exclude: [] });
    const normalizeStage = before.find((r) => r.key === null);
    assert.ok(normalizeStage, 'the deep record is rejected');
    assert.match(String(normalizeStage.reason), /^metadata\.junk\[0\].*: nested deeper than 1000 levels/);
    assert.match(
      String(normalizeStage.reason),
      /too deep to serialize, so the raw landing keeps only a marker/,
    );
    assert.equal(JSON.parse(String(normalizeStage.payload)).id, 7, 'the marker names the record');
    const extract = before.find((r) => r.key === '9');
    assert.ok(extract && JSON.parse(String(extract.payload)).store_sync_unserializable);

    await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.deepEqual(await tableRows(warehouse.connection, '_rejected_records', { exclude: [] }), before);
    assert.deepEqual(
      (await tableRows(warehouse.connection, 'tickets')).map((r) => r.id),
      [6, 8],
    );
  });
});

describe('document detection', () => {
  it('refuses arrays nested in arrays instead of recursing into them (no stack overflow at any depth)', async () => {
    const { detectDocument } = await import('../../src/normalize/index.js');
    let deep: unknown = { number: 'A-1' };
    for (let i = 0; i < 100_000; i++) deep = [deep];
    const detected = detectDocument(deep);
    assert.equal(detected.records.length, 0);
    assert.match(
      detected.errors[0]!,
      /^\[0\]: expected a document or an envelope, not an array inside an array/,
    );
    const enveloped = detectDocument({ api_version: '2024-04-01', data: [[{ number: 'A-1' }]] });
    assert.deepEqual(enveloped.records, []);
    assert.equal(enveloped.errors.length, 1);
    const flat = detectDocument({ api_version: '2024-04-01', data: [{ number: 'A-1', lines: [] }] });
    assert.ok(flat.records.length === 1 && flat.errors.length === 0);
  });

  it('reads an envelope whose api_version it does not know with the shape shown, and refuses one that contradicts the order shape', async () => {
    const { detectDocument } = await import('../../src/normalize/index.js');
    const order2023 = { number: 'A-1', lines: [{ id: 1, product: { id: 2 } }] };
    const order2024 = { number: 'A-2', lines: [{ id: 1, product_id: 2 }] };
    const error = (value: unknown) => {
      const detected = detectDocument(value);
      return detected.errors[0] ?? null;
    };
    // A label it does not know is read with the document's own shape, or the newest when it shows none
    // (issue 25): the label is reported, not refused.
    for (const [data, entity, readAs] of [
      [order2024, 'order', '2024-04-01'],
      [order2023, 'order', '2023-02-10'],
      [{ number: 'A-3', lines: [] }, 'order', '2024-04-01'],
      [{ checkout_url: 'x' }, 'cart', '2024-04-01'],
    ] as const) {
      const detected = detectDocument({ api_version: '2099-01-01', data });
      assert.deepEqual(detected.errors, []);
      assert.equal(detected.records[0]!.entity, entity);
      assert.equal(detected.records[0]!.apiVersion, readAs);
      assert.deepEqual(detected.labels, [{ label: '2099-01-01', readAs }]);
    }
    assert.equal(
      error({ api_version: '2024-04-01', data: order2023 }),
      'api_version: the envelope says 2024-04-01, but the order has the 2023-02-10 shape (see docs/ingest.md for the shape rules)',
    );
    assert.match(
      error({ api_version: '2023-02-10', data: [order2023, order2024] }) ?? '',
      /^data\[1\]: api_version: the envelope says 2023-02-10, but the order has the 2024-04-01 shape/,
    );
    // Agreeing labels, and orders that show no shape, keep the envelope's version.
    for (const [version, data] of [
      ['2023-02-10', order2023],
      ['2024-04-01', order2024],
      ['2023-02-10', { number: 'A-3', lines: [] }],
    ] as const) {
      const detected = detectDocument({ api_version: version, data });
      assert.deepEqual(detected.errors, [], version);
      assert.equal(detected.records[0]!.apiVersion, version);
    }
    assert.equal(
      error([1, 2]),
      '[0]: expected a JSON object (a document or an envelope {api_version, data})',
    );
    // A fulfillment records the shape it has, not the envelope's label (a 2024 record was stored as 2023).
    const fulfillment = { id: 5, order_number: 'A-1', line_items: [], tracking_carrier: 'ups' };
    for (const version of ['2023-02-10', '2024-04-01'])
      assert.equal(
        detectDocument({ api_version: version, data: fulfillment }).records[0]!.apiVersion,
        '2024-04-01',
      );
  });

  it('an order whose number is missing or not a string is refused naming the field, not as unrecognised', async () => {
    const { warehouse, dir, cleanup } = await tempWarehouse();
    try {
      const file = path.join(dir, 'numbers.ndjson');
      await writeFile(
        file,
        `${JSON.stringify({ updated_at: '2024-01-01T00:00:00Z', total_incl_tax: '1.00', lines: [] })}\n` +
          `${JSON.stringify({ number: 1001, updated_at: '2024-01-01T00:00:00Z', total_incl_tax: '1.00' })}\n` +
          `${JSON.stringify({ checkout_url: 'https://shop.example/c/9', id: 9, lines: [], total_incl_tax: '1.00' })}\n` +
          // A string number and nothing of an order: not an order (it must not be stored as one).
          `${JSON.stringify({ number: 'TCK-1', status: 'open', priority: 'high' })}\n`,
      );
      await ingestPaths(warehouse, [file], { store: 'shop', runId: 'numbers', logger: silentLogger });
      const rejected = await warehouse.connection.runAndReadAll(
        'SELECT reason FROM _rejected_records ORDER BY source',
      );
      assert.deepEqual(
        rejected.getRowsJson().map(([reason]) => String(reason).split(':')[0]),
        ['number', 'number', 'unrecognised document'],
      );
      assert.deepEqual(rejected.getRowsJson().slice(0, 2), [
        ['number: missing, expected a string'],
        ['number: got 1001, expected a string'],
      ]);
      const orders = await warehouse.connection.runAndReadAll('SELECT count(*) FROM orders');
      assert.deepEqual(orders.getRowsJson(), [['0']]);
      const carts = await warehouse.connection.runAndReadAll('SELECT count(*) FROM carts');
      assert.deepEqual(carts.getRowsJson(), [['1']], 'a cart is still a cart');
    } finally {
      await cleanup();
    }
  });

  it('a refused record of a document that holds several says which one, and every count agrees', async () => {
    // A move result with both fulfillment orders bad said "id: got 1.5 …" twice, naming neither, and the
    // file counted 1 rejection where the run counted 2.
    const { warehouse, dir, cleanup } = await tempWarehouse();
    try {
      const file = path.join(dir, 'several.ndjson');
      const fulfillmentOrder = (id: unknown) => ({ id, order_number: 'M-1', status: 'open', line_items: [] });
      await writeFile(
        file,
        `${JSON.stringify({ moved_fulfillment_order: fulfillmentOrder(1.5), original_fulfillment_order: fulfillmentOrder('x') })}\n` +
          `${JSON.stringify([{ number: 'A-1', updated_at: '2024-01-01T00:00:00Z', total_incl_tax: '1.0001' }])}\n`,
      );
      const summary = await ingestPaths(warehouse, [file], {
        store: 'shop',
        runId: 'several',
        logger: silentLogger,
      });
      const rejected = await warehouse.connection.runAndReadAll(
        "SELECT level, field_path, split_part(reason, ':', 1) AS place, split_part(reason, ':', 2) AS field FROM _rejected_records ORDER BY source, place",
      );
      // Two fulfillment orders refused whole (their key), and a total that does not fit refused alone: the
      // order loads without it (a field rejection names its table first).
      assert.deepEqual(rejected.getRowsJson(), [
        ['record', 'id', 'moved_fulfillment_order', ' id'],
        ['record', 'id', 'original_fulfillment_order', ' id'],
        ['field', 'total_incl_tax', 'orders', ' [0]'],
      ]);
      assert.equal(summary.rejections, 3);
      assert.equal(summary.files[0]!.rejections, 3);
      const ledger = await warehouse.connection.runAndReadAll('SELECT rejected FROM _ingested_files');
      assert.deepEqual(ledger.getRowsJson(), [['3']]);
    } finally {
      await cleanup();
    }
  });

  it('an item of an array that is not a document is refused alone; the documents beside it load', async () => {
    // One unrecognised item must not refuse the whole array, its valid documents with it.
    const { warehouse, dir, cleanup } = await tempWarehouse();
    try {
      const order = (n: string) => ({
        number: n,
        updated_at: '2024-01-01T00:00:00Z',
        total_incl_tax: '1.00',
      });
      const file = path.join(dir, 'mixed.ndjson');
      await writeFile(
        file,
        `${JSON.stringify({ api_version: '2024-04-01', data: [order('E-1'), { foo: 1 }, order('E-2')] })}\n` +
          `${JSON.stringify([{ bar: 1 }, order('E-3')])}\n`,
      );
      const summary = await ingestPaths(warehouse, [file], {
        store: 'shop',
        runId: 'mixed',
        logger: silentLogger,
      });
      assert.equal(summary.rejections, 2);
      const orders = await warehouse.connection.runAndReadAll('SELECT number FROM orders ORDER BY number');
      assert.deepEqual(orders.getRowsJson(), [['E-1'], ['E-2'], ['E-3']]);
      const rejected = await warehouse.connection.runAndReadAll(
        "SELECT source, split_part(reason, ':', 1) FROM _rejected_records ORDER BY source",
      );
      assert.deepEqual(rejected.getRowsJson(), [
        [`${file}:1`, 'data[1]'],
        [`${file}:2`, '[0]'],
      ]);
    } finally {
      await cleanup();
    }
  });
});
