import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { emptyStreamState } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import type { SchemaContract } from '../../src/normalize/index.js';
import { count, ndjson, tableRows, tempWarehouse } from './helpers.js';

/**
 * Fields the model does not map are kept, not dropped: each row's `_extra` holds those of its own item (in
 * document order, nested unknown objects whole, inside mapped objects only the unknown part), and
 * `_schema_changes` names each path per table. The schema contract decides otherwise: `freeze` refuses the
 * record, `discard` keeps nothing but still names the paths.
 */

const order = (number: string, fields: Record<string, unknown> = {}) => ({
  number,
  updated_at: '2024-05-01T10:00:00Z',
  total_incl_tax: '10.00',
  ...fields,
});

/** An order with unknown fields at the root, on a line, on its tax line and inside its billing address. */
const unknownEverywhere = (number: string) =>
  order(number, {
    zz_root: 'r',
    billing_address: { line1: '1 Main St', zz_addr: { floor: 3, wing: ['east'] } },
    lines: [
      {
        id: 1,
        quantity: 1,
        price_incl_tax: '10.00',
        zz_line: 42,
        tax_lines: [{ amount: '1.00', rate: 0.1, zz_tax: true }],
      },
    ],
    zz_object: { nested: { deeper: [1, 2] } },
  });

describe('_extra: unknown fields kept on the row of their level', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let files = 0;

  const ingest = async (docs: unknown[], contract?: SchemaContract) => {
    const file = path.join(dir, `extra-${++files}.ndjson`);
    await writeFile(file, ndjson(docs));
    return ingestPaths(warehouse, [file], {
      store: 'shop',
      runId: `run-${files}`,
      logger: silentLogger,
      ...(contract ? { contract } : {}),
    });
  };
  const extraOf = async (table: string, where: string) =>
    (await tableRows(warehouse.connection, table, { where })).map((r) => r._extra);
  const changes = async (where = 'true') =>
    (
      await warehouse.connection.runAndReadAll(
        `SELECT "table", field_path, example, count FROM _schema_changes WHERE ${where} ORDER BY "table", field_path`,
      )
    ).getRowsJson();

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  after(() => cleanup());

  it('keeps unknowns at the root, on a line, on a tax line and inside a mapped object, in document order', async () => {
    const summary = await ingest([unknownEverywhere('X-1')]);
    assert.equal(summary.rejections, 0, 'unknown fields are no rejection');
    assert.deepEqual(await extraOf('orders', "number = 'X-1'"), [
      '{"zz_root":"r","billing_address":{"zz_addr":{"floor":3,"wing":["east"]}},"zz_object":{"nested":{"deeper":[1,2]}}}',
    ]);
    assert.deepEqual(await extraOf('order_lines', "order_number = 'X-1'"), ['{"zz_line":42}']);
    assert.deepEqual(await extraOf('order_line_tax_lines', "order_number = 'X-1'"), ['{"zz_tax":true}']);
    // The mapped values are stored as ever.
    const [row] = await tableRows(warehouse.connection, 'orders', { where: "number = 'X-1'" });
    assert.equal(row!.billing_line1, '1 Main St');
    assert.equal(row!.total_incl_tax, '10.000');
  });

  it('names every unknown path per table in _schema_changes, never the line trail', async () => {
    assert.deepEqual(await changes(), [
      ['order_line_tax_lines', 'zz_tax', 'true', '1'],
      ['order_lines', 'zz_line', '42', '1'],
      ['orders', 'billing_address.zz_addr', '{"floor":3,"wing":["east"]}', '1'],
      ['orders', 'zz_object', '{"nested":{"deeper":[1,2]}}', '1'],
      ['orders', 'zz_root', '"r"', '1'],
    ]);
    // Counted per row: two more orders carrying zz_root, one of them on two lines carrying zz_line.
    await ingest([
      order('X-2', { zz_root: 'second' }),
      order('X-3', {
        zz_root: 'third',
        lines: [
          { id: 1, zz_line: 1 },
          { id: 2, zz_line: 2 },
        ],
      }),
    ]);
    assert.deepEqual(await changes(`field_path IN ('zz_root', 'zz_line')`), [
      ['order_lines', 'zz_line', '42', '3'],
      ['orders', 'zz_root', '"r"', '3'],
    ]);
  });

  it('a row whose fields are all mapped has _extra NULL', async () => {
    await ingest([order('X-4', { lines: [{ id: 1, quantity: 2 }] })]);
    assert.deepEqual(await extraOf('orders', "number = 'X-4'"), [null]);
    assert.deepEqual(await extraOf('order_lines', "order_number = 'X-4'"), [null]);
  });

  it('keeps a field named __proto__ as a field', async () => {
    // Written as text: an object literal's __proto__ would set the prototype, not a field.
    const file = path.join(dir, 'proto.ndjson');
    await writeFile(
      file,
      '{"number":"X-5","updated_at":"2024-05-01T10:00:00Z","__proto__":{"polluted":true},"lines":[{"id":1,"__proto__":1}]}\n',
    );
    await ingestPaths(warehouse, [file], { store: 'shop', runId: 'proto', logger: silentLogger });
    assert.deepEqual(await extraOf('orders', "number = 'X-5'"), ['{"__proto__":{"polluted":true}}']);
    assert.deepEqual(await extraOf('order_lines', "order_number = 'X-5'"), ['{"__proto__":1}']);
    assert.equal(({} as Record<string, unknown>).polluted, undefined, 'no prototype was touched');
  });

  it("keeps a skipped user's unknown fields on the parent row, under user", async () => {
    // A user without an id is no customer (no row); what the model does not map of it is still kept.
    await ingest([order('X-6', { user: { email: 'a@example.com', zz_user: { vip: true } } })]);
    assert.equal(await count(warehouse.connection, 'customers', "email = 'a@example.com'"), 0);
    const [row] = await tableRows(warehouse.connection, 'orders', { where: "number = 'X-6'" });
    assert.equal(row!.user_email, 'a@example.com');
    assert.equal(row!._extra, '{"user":{"zz_user":{"vip":true}}}');
    assert.deepEqual(await changes(`field_path = 'user.zz_user'`), [
      ['orders', 'user.zz_user', '{"vip":true}', '1'],
    ]);
    // A user with an id is a customer: its unknown fields are the customer row's.
    await ingest([order('X-7', { user: { id: 77, email: 'b@example.com', zz_user: 1 } })]);
    assert.deepEqual(await extraOf('customers', 'id = 77'), ['{"zz_user":1}']);
    assert.deepEqual(await extraOf('orders', "number = 'X-7'"), [null]);
  });

  it('keeps unknown fields of the records a sync commits', async () => {
    await warehouse.commitPage({
      store: 'shop',
      stream: 'products',
      entity: 'product',
      runId: 'sync-1',
      records: [{ id: 1, title: 'Tea', zz_badge: 'new', variants: [{ id: 10, zz_colour: 'green' }] }],
      rejections: [],
      state: emptyStreamState(),
    });
    assert.deepEqual(await extraOf('products', 'id = 1'), ['{"zz_badge":"new"}']);
    assert.deepEqual(await extraOf('variants', 'id = 10'), ['{"zz_colour":"green"}']);
  });

  it('freeze: a record carrying an unknown field is rejected whole, naming the field', async () => {
    const summary = await ingest(
      [order('F-1', { lines: [{ id: 1, zz: 1 }] }), order('F-2', { lines: [{ id: 1 }] })],
      'freeze',
    );
    assert.equal(summary.rejections, 1);
    assert.equal(await count(warehouse.connection, 'orders', "number = 'F-1'"), 0);
    assert.equal(await count(warehouse.connection, 'orders', "number = 'F-2'"), 1, 'a clean record loads');
    const rejected = await tableRows(warehouse.connection, '_rejected_records', { where: "key = 'F-1'" });
    assert.deepEqual(
      rejected.map((r) => [r.level, r.field_path, r.reason]),
      [['record', 'lines[0].zz', 'lines[0].zz: unknown field (schema contract freeze)']],
    );
    assert.deepEqual(await changes(`field_path = 'zz'`), [], 'a rejected record names no new field');
  });

  it('discard: unknown fields are not kept, but still named in _schema_changes', async () => {
    const summary = await ingest(
      [order('D-1', { zz_dropped: 'x', lines: [{ id: 1, price_incl_tax: 'ten', zz_line_dropped: 1 }] })],
      'discard',
    );
    assert.equal(summary.rejections, 1, 'the price that does not fit is a field rejection');
    assert.deepEqual(await extraOf('orders', "number = 'D-1'"), [null]);
    // A refused value is kept whatever the contract: it is no unknown field.
    assert.deepEqual(await extraOf('order_lines', "order_number = 'D-1'"), ['{"price_incl_tax":"ten"}']);
    assert.deepEqual(await changes(`field_path IN ('zz_dropped', 'zz_line_dropped', 'price_incl_tax')`), [
      ['order_lines', 'zz_line_dropped', '1', '1'],
      ['orders', 'zz_dropped', '"x"', '1'],
    ]);
  });
});
