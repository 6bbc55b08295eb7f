import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, ingestDocuments, type Row, tableRows, tempWarehouse } from './helpers.js';

/**
 * A value that does not fit its column no longer costs the record: the row loads with that column NULL,
 * the value stays in the row's `_extra` at its field, and `_rejected_records` gets a row of level `field`
 * naming the table, the key, the field path, the value and what was expected. Only a key or a version that
 * cannot be read, or a wrong structure, still rejects the record whole (level `record`).
 */

const order = (number: string, fields: Record<string, unknown> = {}) => ({
  number,
  updated_at: '2024-05-01T10:00:00Z',
  total_incl_tax: '10.00',
  ...fields,
});

describe('field-level rejection', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let files = 0;

  const ingest = (docs: unknown[]) => ingestDocuments(warehouse, dir, `fields-${++files}.ndjson`, docs);
  const rejections = async (key: string): Promise<Row[]> =>
    (
      await tableRows(warehouse.connection, '_rejected_records', {
        where: `key = '${key}'`,
        exclude: ['_synced_at', '_run_id', '_store', 'source', 'raw_seq'],
      })
    ).sort((a, b) => String(a.field_path).localeCompare(String(b.field_path)));
  const one = async (table: string, where: string): Promise<Row> => {
    const rows = await tableRows(warehouse.connection, table, { where });
    assert.equal(rows.length, 1, `one ${table} row where ${where}`);
    return rows[0]!;
  };

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  after(() => cleanup());

  it('a number JSON.parse cannot keep as sent is named, in _extra and in a JSON column', async () => {
    // Written by hand: JSON.stringify could not write these numbers as a store sends them.
    const file = path.join(dir, 'inexact.ndjson');
    await writeFile(
      file,
      '{"number":"N-1","updated_at":"2024-05-01T10:00:00Z","total_incl_tax":"10.00",' +
        '"zz_big":12345678901234567890,"zz_huge":1e400,"zz_fine":9007199254740991,"zz_dec":1.50,' +
        '"metadata":{"ref":123456789012345678901,"note":"x"}}\n',
    );
    await ingestPaths(warehouse, [file], { store: 'shop', runId: 'inexact', logger: silentLogger });
    const row = await one('orders', "number = 'N-1'");
    assert.equal(row.metadata, null, 'the JSON column refuses a value it would store changed');
    // Kept as JSON.parse read them, and each named: the raw landing has them as sent.
    assert.equal(
      row._extra,
      '{"zz_big":12345678901234567000,"zz_huge":null,"zz_fine":9007199254740991,"zz_dec":1.5,"metadata":{"ref":123456789012345680000,"note":"x"}}',
    );
    const rows = await rejections('N-1');
    assert.deepEqual(
      rows.map((r) => [r.level, r.field_path, r.reason]),
      [
        [
          'field',
          'metadata',
          'orders: metadata: got {"ref":123456789012345680000,"note":"x"}, expected JSON whose numbers JSON.parse keeps exactly (integers within ±2^53, none beyond ±1.8e308)',
        ],
        [
          'field',
          'zz_big',
          'orders: zz_big: got 12345678901234567000, expected numbers JSON.parse keeps exactly (integers within ±2^53, none beyond ±1.8e308)',
        ],
        [
          'field',
          'zz_huge',
          'orders: zz_huge: got Infinity, expected numbers JSON.parse keeps exactly (integers within ±2^53, none beyond ±1.8e308)',
        ],
      ],
    );
  });

  it('two such numbers are both named, even when a dot in a key makes one path read like inside the other', async () => {
    const file = path.join(dir, 'inexact-dotted.ndjson');
    await writeFile(
      file,
      '{"number":"N-2","updated_at":"2024-05-01T10:00:00Z","total_incl_tax":"10.00",' +
        '"zz":{"a":12345678901234567890,"a.":12345678901234567891}}\n',
    );
    await ingestPaths(warehouse, [file], { store: 'shop', runId: 'inexact-dotted', logger: silentLogger });
    const rows = await rejections('N-2');
    assert.deepEqual(
      rows.map((r) => r.field_path),
      ['zz.a', 'zz.a.'],
    );
  });

  it('bad money, a bad timestamp and a bad integer on a line: the line loads without them', async () => {
    await ingest([
      order('B-1', {
        lines: [
          { id: 1, quantity: 'two', price_incl_tax: '1.0001', created_at: 'yesterday', product_title: 'Tea' },
          { id: 2, quantity: 1, price_incl_tax: '3.00' },
        ],
      }),
    ]);
    const line = await one('order_lines', "order_number = 'B-1' AND id = 1");
    assert.equal(line.quantity, null);
    assert.equal(line.price_incl_tax, null);
    assert.equal(line.created_at, null);
    assert.equal(line.product_title, 'Tea', 'the values that fit are stored');
    assert.equal(line._extra, '{"quantity":"two","price_incl_tax":"1.0001","created_at":"yesterday"}');
    assert.equal((await one('order_lines', "order_number = 'B-1' AND id = 2")).price_incl_tax, '3.000');
    assert.equal(await count(warehouse.connection, 'orders', "number = 'B-1'"), 1);
    const rows = await rejections('B-1');
    assert.deepEqual(
      rows.map((r) => r.field_path),
      ['lines[0].created_at', 'lines[0].price_incl_tax', 'lines[0].quantity'],
    );
    for (const row of rows) {
      assert.equal(row.level, 'field');
      assert.equal(row.stage, 'normalize');
      assert.equal(row.stream, 'documents');
    }
    const byPath = new Map(rows.map((r) => [r.field_path, r]));
    const quantity = byPath.get('lines[0].quantity')!;
    assert.equal(quantity.reason, 'order_lines: lines[0].quantity: got "two", expected an integer');
    assert.equal(quantity.payload, '"two"', 'the payload is the refused value');
    assert.match(
      String(byPath.get('lines[0].price_incl_tax')!.reason),
      /^order_lines: lines\[0\]\.price_incl_tax: got "1\.0001", expected decimal text that fits DECIMAL\(18,3\) exactly/,
    );
  });

  it('a bad timestamp at the root, and a non-object where an address belongs: one rejection each', async () => {
    await ingest([order('B-2', { created_at: '2024/05/01 10:00', billing_address: 'x', currency: 'EUR' })]);
    const row = await one('orders', "number = 'B-2'");
    assert.equal(row.created_at, null);
    assert.equal(row.billing_line1, null);
    assert.equal(row.currency, 'EUR');
    assert.equal(row._extra, '{"created_at":"2024/05/01 10:00","billing_address":"x"}');
    assert.deepEqual(
      (await rejections('B-2')).map((r) => [r.level, r.field_path, r.reason]),
      [
        ['field', 'billing_address', 'orders: billing_address: got "x", expected an object'],
        [
          'field',
          'created_at',
          'orders: created_at: got "2024/05/01 10:00", expected an ISO 8601 date-time with a zone, e.g. 2024-05-01T10:00:00Z',
        ],
      ],
    );
  });

  it('a key or a version that cannot be read still rejects the record whole', async () => {
    await ingest([
      order('K-1', { lines: [{ id: 'one' }] }),
      order('K-2', { updated_at: 'soon' }),
      order('K-3', { fulfillments: [{ id: 5, created_at: 'never', line_items: [] }] }),
    ]);
    for (const number of ['K-1', 'K-2', 'K-3'])
      assert.equal(await count(warehouse.connection, 'orders', `number = '${number}'`), 0, number);
    assert.deepEqual(
      [...(await rejections('K-1')), ...(await rejections('K-2')), ...(await rejections('K-3'))].map((r) => [
        r.key,
        r.level,
        r.field_path,
        String(r.reason).split(', expected')[0],
      ]),
      [
        ['K-1', 'record', 'lines[0].id', 'lines[0].id: got "one"'],
        ['K-2', 'record', 'updated_at', 'updated_at: got "soon"'],
        // A fulfillment's version is coalesce(last_event_date, created_at, date_created).
        ['K-3', 'record', 'fulfillments[0].created_at', 'fulfillments[0].created_at: got "never"'],
      ],
    );
  });

  it('a wrong structure still rejects the record whole', async () => {
    await ingest([order('S-1', { lines: { id: 1 } }), order('S-2', { lines: [5] })]);
    assert.equal(await count(warehouse.connection, 'orders', "number IN ('S-1', 'S-2')"), 0);
    assert.deepEqual(
      [...(await rejections('S-1')), ...(await rejections('S-2'))].map((r) => [r.level, r.field_path]),
      [
        ['record', 'lines'],
        ['record', 'lines[0]'],
      ],
    );
  });

  it('an envelope timestamp that is not a date-time leaves _event_at NULL; the document loads', async () => {
    await ingest([
      {
        event_id: 'evt-9',
        event_type: 'order.updated',
        timestamp: 'last tuesday',
        api_version: '2024-04-01',
        data: order('E-1'),
      },
    ]);
    const row = await one('orders', "number = 'E-1'");
    assert.equal(row._event_at, null);
    assert.equal(row._event_id, 'evt-9');
    assert.equal(row._extra, null, "the envelope's fields are not the order's");
    assert.deepEqual(await rejections('E-1'), []);
  });

  it("a value refused in a user's field: the order and the customer each say so", async () => {
    // The order row reads the user's fields too (user_*): both rows lose the value, both keep it.
    await ingest([order('U-1', { user: { id: 31, email: 'u@example.com', accepts_marketing: 'yes' } })]);
    const customer = await one('customers', 'id = 31');
    assert.equal(customer.accepts_marketing, null);
    assert.equal(customer._extra, '{"accepts_marketing":"yes"}');
    assert.equal((await one('orders', "number = 'U-1'"))._extra, '{"user":{"accepts_marketing":"yes"}}');
    assert.deepEqual(
      (await rejections('U-1')).map((r) => [r.level, r.field_path, String(r.reason).split(':')[0]]),
      [
        ['field', 'user.accepts_marketing', 'customers'],
        ['field', 'user.accepts_marketing', 'orders'],
      ].sort((a, b) => a[2]!.localeCompare(b[2]!)),
    );
  });
});
