import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Warehouse } from '../../src/load/index.js';
import { count, ingestDocuments, tableRows, tempWarehouse } from './helpers.js';

/** Newest wins by updated_at: an older document changes nothing, a newer one replaces its children too. */

const line = (id: number) => ({
  id,
  product_id: id * 10,
  sku: `S-${id}`,
  quantity: 1,
  tax_lines: [{ amount: '1.00', rate: 0.1 }],
});
const order = (updated: string, total: string, lines: number[], email: string) => ({
  number: 'N-1',
  updated_at: updated,
  date_placed: '2024-05-01T00:00:00Z',
  total_incl_tax: total,
  lines: lines.map(line),
  user: { id: 5, email },
});

const V1 = order('2024-05-01T10:00:00Z', '30.00', [1, 2, 3], 'old@example.com');
const V2 = order('2024-05-02T10:00:00Z', '20.00', [1, 2], 'new@example.com');

describe('out-of-order documents', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  afterEach(() => cleanup());

  const ingest = (name: string, docs: unknown[]) => ingestDocuments(warehouse, dir, name, docs);

  async function state() {
    const [o] = await tableRows(warehouse.connection, 'orders');
    const lines = await tableRows(warehouse.connection, 'order_lines');
    const [c] = await tableRows(warehouse.connection, 'customers');
    return {
      total: o!.total_incl_tax,
      lines: lines.map((l) => l.id),
      email: c!.email,
      taxes: await count(warehouse.connection, 'order_line_tax_lines'),
    };
  }

  it('an older document after a newer one changes nothing', async () => {
    await ingest('new.ndjson', [V2]);
    const before = await tableRows(warehouse.connection, 'order_lines', { exclude: [] });
    await ingest('old.ndjson', [V1]);
    assert.deepEqual(await state(), { total: '20.000', lines: [1, 2], email: 'new@example.com', taxes: 2 });
    assert.deepEqual(
      await tableRows(warehouse.connection, 'order_lines', { exclude: [] }),
      before,
      'not even _synced_at',
    );
  });

  it('a newer document replaces the order and its children, leaving no orphans', async () => {
    await ingest('old.ndjson', [V1]);
    assert.deepEqual(await state(), {
      total: '30.000',
      lines: [1, 2, 3],
      email: 'old@example.com',
      taxes: 3,
    });
    await ingest('new.ndjson', [V2]);
    assert.deepEqual(await state(), { total: '20.000', lines: [1, 2], email: 'new@example.com', taxes: 2 });
  });

  it('within one batch the newest wins whatever the order', async () => {
    await ingest('mixed.ndjson', [V2, V1]);
    assert.deepEqual(await state(), { total: '20.000', lines: [1, 2], email: 'new@example.com', taxes: 2 });
  });

  it('on equal updated_at the one received last wins', async () => {
    const twin = { ...V2, total_incl_tax: '21.00' };
    await ingest('twins.ndjson', [V2, twin]);
    assert.equal((await state()).total, '21.000');
  });

  it('a customer seen in two documents stamped the same second gets the same row whichever came first', async () => {
    // A sync reads orders and carts concurrently: which of the two arrives last is chance, so the
    // winner must not depend on it (a resumed run and a rebuild have to pick the same one).
    const at = '2024-05-02T10:00:00Z';
    const fromOrder = { ...V2, updated_at: at, user: { id: 5, email: 'order@example.com' } };
    const fromCart = {
      id: 701,
      status: 'open',
      abandoned: false,
      checkout_url: 'https://shop.example/c/701',
      created_at: at,
      currency: 'EUR',
      total_incl_tax: '1.00',
      user: { id: 5, email: 'cart@example.com' },
      lines: [],
    };
    const customer = async () => {
      const [row] = await tableRows(warehouse.connection, 'customers');
      return { email: row!.email, seenIn: row!.seen_in, order: row!.seen_in_order, cart: row!.seen_in_id };
    };
    const results = [];
    for (const [label, batches] of [
      ['one batch, order first', [[fromOrder, fromCart]]],
      ['one batch, cart first', [[fromCart, fromOrder]]],
      ['two runs, order first', [[fromOrder], [fromCart]]],
      ['two runs, cart first', [[fromCart], [fromOrder]]],
    ] as const) {
      await warehouse.connection.run('DELETE FROM customers; DELETE FROM orders; DELETE FROM carts');
      for (const [i, docs] of batches.entries()) await ingest(`${label}-${i}.ndjson`, [...docs]);
      results.push(await customer());
    }
    assert.equal(await count(warehouse.connection, '_rejected_records'), 0);
    // seen_in 'order' > 'cart': the order's sighting, every time.
    for (const result of results)
      assert.deepEqual(result, { email: 'order@example.com', seenIn: 'order', order: 'N-1', cart: null });
  });

  it("a customer's sighting columns come from the document it was seen in, never from a same-named user field", async () => {
    // Read both ways: the byte-scanning fast path (orders) and the object path (the switch turned off).
    for (const fastPath of ['1', '0']) {
      await warehouse.connection.run('DELETE FROM customers; DELETE FROM orders; DELETE FROM carts');
      const fromOrder = { ...V2, user: { id: 6, email: 'o@example.com', seen_in_id: 999 } };
      const fromCart = {
        id: 702,
        status: 'open',
        abandoned: false,
        checkout_url: 'https://shop.example/c/702',
        created_at: '2024-05-02T10:00:00Z',
        currency: 'EUR',
        total_incl_tax: '1.00',
        user: { id: 7, email: 'c@example.com', seen_in_order: 'N-999' },
        lines: [],
      };
      const previous = process.env.STORE_SYNC_FAST_PATH;
      process.env.STORE_SYNC_FAST_PATH = fastPath;
      try {
        await ingest(`sightings-${fastPath}.ndjson`, [fromOrder, fromCart]);
      } finally {
        if (previous === undefined) delete process.env.STORE_SYNC_FAST_PATH;
        else process.env.STORE_SYNC_FAST_PATH = previous;
      }
      const rows = (await tableRows(warehouse.connection, 'customers')).map((r) => [
        r.id,
        r.seen_in,
        r.seen_in_order,
        r.seen_in_id,
      ]);
      assert.deepEqual(
        rows,
        [
          [6, 'order', V2.number, null],
          [7, 'cart', null, 702],
        ],
        `fast path ${fastPath}`,
      );
    }
  });

  it('on equal versions the 2024-04-01 shape wins over the 2023-02-10 one, whichever came first', async () => {
    // Mark-as-paid answers in the 2023-02-10 shape, with the order's fulfillments as summaries (no line items,
    // location or origin); fulfillment create answered with the full 2024-04-01 fulfillment at the same
    // last_event_date. The summary must not replace the full record, nor take its line items with it.
    const at = '2024-05-04T10:00:00Z';
    const full = {
      id: 54,
      order_number: 'N-2',
      status: 'pending',
      created_at: at,
      last_event_date: at,
      location_id: 3,
      tracking_carrier: 'ups',
      origin_address: { line1: 'Warehouse 3', country: 'DE' },
      line_items: [{ id: 55, order_line_id: 12, quantity: 1, tax_lines: [{ amount: '2.55', rate: 0.19 }] }],
    };
    const paid = {
      api_version: '2023-02-10',
      data: {
        number: 'N-2',
        updated_at: at,
        lines: [
          { id: 12, quantity: 1, product: { id: 7, title: 'Tea' }, stockrecord: { partner_sku: 'T-1' } },
        ],
        fulfillments: [
          { id: 54, carrier: 'ups', date_created: at, last_event_date: at, lines: '12:1', status: 'pending' },
        ],
      },
    };
    const order2024 = {
      api_version: '2024-04-01',
      data: { number: 'N-2', updated_at: at, lines: [line(12)] },
    };
    const results = [];
    for (const [label, batches] of [
      ['one batch, full first', [[full, order2024, paid]]],
      ['one batch, summary first', [[paid, full, order2024]]],
      ['two runs, full first', [[full, order2024], [paid]]],
      ['two runs, summary first', [[paid], [full, order2024]]],
    ] as const) {
      for (const table of [
        'fulfillments',
        'fulfillment_line_items',
        'fulfillment_line_item_tax_lines',
        'orders',
        'order_lines',
      ])
        await warehouse.connection.run(`DELETE FROM ${table}`);
      for (const [i, docs] of batches.entries()) await ingest(`${label}-${i}.ndjson`, [...docs]);
      const [f] = await tableRows(warehouse.connection, 'fulfillments');
      const [o] = await tableRows(warehouse.connection, 'orders');
      const [l] = await tableRows(warehouse.connection, 'order_lines');
      results.push({
        label,
        fulfillment: f!.api_version,
        location: f!.location_id,
        items: await count(warehouse.connection, 'fulfillment_line_items'),
        itemTaxes: await count(warehouse.connection, 'fulfillment_line_item_tax_lines'),
        order: o!.api_version,
        sku: l!.sku,
      });
    }
    assert.equal(await count(warehouse.connection, '_rejected_records'), 0);
    for (const { label, ...result } of results)
      assert.deepEqual(
        result,
        { fulfillment: '2024-04-01', location: 3, items: 1, itemTaxes: 1, order: '2024-04-01', sku: 'S-12' },
        label,
      );
  });

  it('an order whose shape is not shown ranks below one whose shape is, at equal versions', async () => {
    // DuckDB orders a NULL field of a struct above every value: the unshaped order would win either way.
    const at = '2024-05-04T10:00:00Z';
    const unshaped = { number: 'N-3', updated_at: at, total_incl_tax: '5.00', lines: [] };
    const shaped = {
      api_version: '2024-04-01',
      data: {
        number: 'N-3',
        updated_at: at,
        total_incl_tax: '5.00',
        total_outstanding: '0.00',
        lines: [line(31)],
      },
    };
    for (const [label, docs] of [
      ['unshaped first', [unshaped, shaped]],
      ['shaped first', [shaped, unshaped]],
    ] as const) {
      await warehouse.connection.run(
        'DELETE FROM orders; DELETE FROM order_lines; DELETE FROM order_line_tax_lines',
      );
      for (const [i, doc] of docs.entries()) await ingest(`${label}-${i}.ndjson`, [doc]);
      const [o] = await tableRows(warehouse.connection, 'orders');
      assert.equal(o!.api_version, '2024-04-01', label);
      assert.equal(await count(warehouse.connection, 'order_lines'), 1, label);
    }
  });

  it('fulfillment events and tickets follow the same rule', async () => {
    const event = (updated: string, status: string) => ({
      id: 9,
      fulfillment: 1,
      happened_at: updated,
      updated_at: updated,
      status,
    });
    await ingest('events.ndjson', [
      event('2024-05-03T00:00:00Z', 'delivered'),
      event('2024-05-02T00:00:00Z', 'in_transit'),
    ]);
    const [row] = await tableRows(warehouse.connection, 'fulfillment_events');
    assert.equal(row!.status, 'delivered');
  });
});
