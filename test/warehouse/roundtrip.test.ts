import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FormData } from 'undici';
import { ingestPaths } from '../../pipelines/ingest.js';
import { ApiClient } from '../../src/extract/index.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { type ColumnDef, sourceFor, tableDef } from '../../src/model/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { tableRows, tempWarehouse } from './helpers.js';

/**
 * Round trip: documents the sandbox returns from its write operations (order create in both versions,
 * mark-as-paid, fulfillment create, cart create and update, ticket upload), ingested, and every plain
 * field of the warehouse rows compared with the document it came from.
 */

type Doc = Record<string, unknown>;

/** A column's value in the document, for sources that are plain paths in the item. */
function documentValue(item: Doc, column: ColumnDef, shape: string | null): { value: unknown } | null {
  const source = column.source === undefined ? null : sourceFor(column.source, shape);
  if (!source || /^[$^#=@]|\|/.test(source)) return null;
  let value: unknown = item;
  for (const part of source.split('.'))
    value = value === null || value === undefined ? undefined : (value as Doc)[part];
  return { value: value ?? null };
}

const scaled = (text: string) => {
  const [whole = '', fraction = ''] = text.replace('-', '').split('.');
  return (text.startsWith('-') ? -1n : 1n) * BigInt(`${whole || '0'}${fraction.padEnd(6, '0')}`);
};

/** Compares every plain-sourced column of a warehouse row with the document item it came from. */
function compare(table: string, row: Doc, item: Doc, shape: string | null): number {
  let compared = 0;
  for (const column of tableDef(table).columns) {
    const expected = documentValue(item, column, shape);
    if (!expected) continue;
    const actual = row[column.name];
    const where = `${table}.${column.name}`;
    compared++;
    if (expected.value === null) {
      assert.equal(actual, null, where);
    } else if (column.type.startsWith('DECIMAL')) {
      assert.equal(scaled(String(actual)), scaled(String(expected.value)), where);
    } else if (column.type === 'TIMESTAMPTZ') {
      assert.equal(
        Date.parse(String(actual).replace(' ', 'T').replace(/\+00$/, 'Z')),
        Date.parse(String(expected.value)),
        where,
      );
    } else if (column.type === 'JSON') {
      assert.deepEqual(JSON.parse(String(actual)), expected.value, where);
    } else {
      assert.deepEqual(actual, expected.value, where);
    }
  }
  return compared;
}

describe('round trip of sandbox documents', () => {
  let sandbox: Sandbox;
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  const docs: { api_version: string; data: Doc }[] = [];

  before(async () => {
    sandbox = await startSandbox({ seed: 11, rateLimit: 0 });
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    const client = new ApiClient({
      baseUrl: sandbox.baseUrl,
      token: 'sandbox-token',
      rateLimit: 0,
      logger: silentLogger,
    });
    try {
      const products = (
        await client.listPage('listProducts', client.operationUrl('listProducts', {}, {}).toString())
      ).results as Doc[];
      const ids = products
        .filter((p) => (p.variants as unknown[] | undefined)?.length)
        .map((p) => p.id as number);
      const user = { email: 'round@example.com', first_name: 'Round', last_name: 'Trip' };
      const lines = [
        { product_id: ids[0], quantity: 2 },
        { product_id: ids[1], quantity: 1 },
      ];
      const keep = (api_version: string, data: unknown) => {
        docs.push({ api_version, data: data as Doc });
        return data as Doc;
      };
      const o24 = keep(
        '2024-04-01',
        await client.callRaw('createOrder', {
          body: { lines, user, currency: 'EUR', shipping_price: '4.95', tags: ['rt'] },
        }),
      );
      const o23 = keep(
        '2023-02-10',
        await client.callRaw('createOrder2023', { body: { lines, user, shipping_price: '3.50' } }),
      );
      keep(
        '2023-02-10',
        await client.callRaw('markOrderPaid', { params: { number: o23.number as string }, body: {} }),
      );
      const lineIds = (o24.lines as Doc[]).map((l) => ({ id: l.id as number }));
      keep(
        '2024-04-01',
        await client.callRaw('createOrderFulfillment', {
          params: { number: o24.number as string },
          body: { carrier: 'dhl', tracking_code: 'RT1', lines: lineIds },
        }),
      );
      const cart = keep(
        '2024-04-01',
        await client.callRaw('createCart', {
          body: { lines: [{ product_id: ids[2], quantity: 1 }], currency: 'EUR', user },
        }),
      );
      keep(
        '2024-04-01',
        await client.callRaw('updateCart', {
          params: { id: cart.id as number },
          body: { lines: [{ product_id: ids[3], quantity: 3 }] },
        }),
      );
      const form = new FormData();
      form.append('files', new Blob([Buffer.from('round trip')], { type: 'text/plain' }), 'note.txt');
      keep('2024-04-01', await client.callRaw('attachTicketFiles', { body: form }));
    } finally {
      await client.close();
    }
    // Bare documents: ingest detects each one's kind and shape itself.
    const file = path.join(dir, 'captured.ndjson');
    await writeFile(file, docs.map((d) => JSON.stringify(d.data)).join('\n'));
    const summary = await ingestPaths(warehouse, [file], { store: 'rt', runId: 'rt', logger: silentLogger });
    assert.equal(summary.rejections, 0);
    assert.equal(summary.documents, 7);
  });
  after(async () => {
    await cleanup();
    await sandbox.close();
  });

  /** The last document received for a key is the one the warehouse holds (the same or newer updated_at). */
  const latest = (match: (d: Doc) => boolean) => docs.filter((d) => match(d.data)).at(-1)!;

  it('orders of both shapes, with their lines and taxes, carry every field of the newest document', async () => {
    const orders = await tableRows(warehouse.connection, 'orders');
    assert.equal(orders.length, 2);
    let fields = 0;
    for (const row of orders) {
      const doc = latest((d) => d.number === row.number);
      assert.equal(row.api_version, doc.api_version, 'the shape is detected from the document');
      fields += compare('orders', row, doc.data, doc.api_version);
      const lines = await tableRows(warehouse.connection, 'order_lines', {
        where: `order_number = '${row.number}'`,
      });
      assert.equal(lines.length, (doc.data.lines as Doc[]).length);
      for (const line of lines) {
        const item = (doc.data.lines as Doc[]).find((l) => l.id === line.id)!;
        fields += compare('order_lines', line, item, doc.api_version);
        const taxes = await tableRows(warehouse.connection, 'order_line_tax_lines', {
          where: `line_id = ${line.id}`,
        });
        (item.tax_lines as Doc[] | undefined)?.forEach((tax, i) => {
          fields += compare('order_line_tax_lines', taxes[i]!, tax, doc.api_version);
        });
      }
      for (const t of (doc.data.transactions as Doc[] | undefined) ?? []) {
        const [row2] = await tableRows(warehouse.connection, 'order_transactions', { where: `id = ${t.id}` });
        fields += compare('order_transactions', row2!, t, doc.api_version);
      }
    }
    assert.ok(fields > 80, `${fields} fields compared`);
  });

  it('the 2023-02-10 line maps product and stockrecord onto the shared columns', async () => {
    const doc = docs.find((d) => d.api_version === '2023-02-10')!.data;
    const line = (doc.lines as Doc[])[0]!;
    const [row] = await tableRows(warehouse.connection, 'order_lines', { where: `id = ${line.id}` });
    assert.equal(row!.product_id, (line.product as Doc).id);
    assert.equal(row!.product_title, (line.product as Doc).title);
    assert.equal(row!.sku, (line.stockrecord as Doc).partner_sku);
    assert.equal(row!.current_quantity, null, 'a column the shape lacks stays NULL');
  });

  it('fulfillments, carts and tickets carry every field of their documents', async () => {
    const fulfillment = latest((d) => 'tracking_code' in d && 'line_items' in d);
    const [f] = await tableRows(warehouse.connection, 'fulfillments', {
      where: `id = ${fulfillment.data.id}`,
    });
    compare('fulfillments', f!, fulfillment.data, '2024-04-01');
    for (const item of fulfillment.data.line_items as Doc[]) {
      const [row] = await tableRows(warehouse.connection, 'fulfillment_line_items', {
        where: `id = ${item.id}`,
      });
      compare('fulfillment_line_items', row!, item, '2024-04-01');
    }
    const cart = latest((d) => 'checkout_url' in d);
    const carts = await tableRows(warehouse.connection, 'carts');
    assert.equal(carts.length, 1, 'the update replaced the created cart');
    compare('carts', carts[0]!, cart.data, null);
    const cartLines = await tableRows(warehouse.connection, 'cart_lines');
    assert.deepEqual(
      cartLines.map((l) => l.id),
      (cart.data.lines as Doc[]).map((l) => l.id),
      "the updated cart's lines replaced the first ones",
    );
    for (const [i, row] of cartLines.entries())
      compare('cart_lines', row, (cart.data.lines as Doc[])[i]!, null);
    const ticket = latest((d) => 'comments' in d);
    const [t] = await tableRows(warehouse.connection, 'tickets');
    compare('tickets', t!, ticket.data, null);
    const comments = await tableRows(warehouse.connection, 'ticket_comments');
    assert.equal(comments.length, (ticket.data.comments as Doc[]).length);
    for (const row of comments) {
      compare('ticket_comments', row, (ticket.data.comments as Doc[]).find((c) => c.id === row.id)!, null);
    }
    const attachments = await tableRows(warehouse.connection, 'ticket_attachments');
    assert.ok(attachments.some((a) => a.file_name === 'note.txt'));
  });
});
