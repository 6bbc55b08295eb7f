import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityKind } from '../../src/contracts.js';
import { detectDocument } from '../../src/normalize/index.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { buildStore } from '../../src/sandbox/model/store.js';

/**
 * The bare-document rules (docs/ingest.md, "Documents, envelopes and containers") tell every resource that
 * has a table apart by its own fields: each record the sandbox generates, of every kind, over several seeds,
 * is detected as its own kind and nothing else. A subscription (which has `lines`) used to be read as an
 * order without a number, and products, locations and metadata definitions as unrecognised.
 */

const SEEDS = [7, 11, 23];
const ORDERS_PER_SEED = 150;

function detectedKinds(label: string, docs: readonly unknown[], expected: EntityKind): void {
  assert.ok(docs.length > 0, `${label}: the sandbox generated some`);
  for (const doc of docs) {
    const detection = detectDocument(JSON.parse(JSON.stringify(doc)));
    assert.deepEqual(detection.errors, [], `${label}: ${JSON.stringify(doc).slice(0, 200)}`);
    assert.deepEqual(
      detection.records.map((r) => r.entity),
      [expected],
      `${label} ${String((doc as { id?: unknown }).id)} is a ${expected}`,
    );
  }
}

describe('bare documents: each resource is detected as its own kind', () => {
  for (const seed of SEEDS) {
    it(`sandbox records of seed ${seed}`, () => {
      const parts = buildStore({ seed, scale: 300, clock: () => new Date('2026-01-15T12:00:00Z') });

      detectedKinds('subscription', parts.book.items, 'subscription');
      detectedKinds('product', parts.catalogue.items, 'product');
      detectedKinds('location', parts.locations.items, 'location');
      detectedKinds('metadata definition', parts.metadata, 'metadata_definition');
      detectedKinds('fulfillment order', parts.fulfillmentOrders.items, 'fulfillment_order');
      detectedKinds('ticket', parts.tickets, 'ticket');

      const states = Array.from({ length: ORDERS_PER_SEED }, (_, i) => parts.orders.find(orderNumberOf(i))!);
      const orders2024 = states.map(renderOrder2024);
      detectedKinds('2024-04-01 order', orders2024, 'order');
      detectedKinds('2023-02-10 order', states.map(renderOrder2023), 'order');
      const fulfillments = orders2024.flatMap((o) => o.fulfillments ?? []);
      detectedKinds('fulfillment', fulfillments, 'fulfillment');
      const events = states.flatMap((o) =>
        o.fulfillments.flatMap((f) =>
          parts.orders.eventIds(o.number, f.id).map((id) => parts.orders.event(o.number, f.id, String(id))),
        ),
      );
      detectedKinds('fulfillment event', events, 'fulfillment_event');

      const products = parts.catalogue.items.filter((p) => (p.variants?.length ?? 0) > 0);
      const carts = products.slice(0, 40).map((p, i) =>
        parts.carts.create({
          lines: [{ product_id: p.id, quantity: 1 + (i % 3) }],
          user: { email: `c${i}@example.com` },
        }),
      );
      detectedKinds('cart', carts, 'cart');
    });
  }

  it('a 2023-02-10 cart, without checkout_url or abandoned, by its date_created and lines; a 2023-02-10 product by children', () => {
    const cart2023 = {
      id: 41,
      date_created: '2023-03-01T10:00:00Z',
      currency: 'USD',
      status: 'open',
      total_incl_tax: '12.00',
      total_tax: '0.00',
      lines: [
        {
          id: 4101,
          quantity: 1,
          product: { id: 7, title: 'Tea', upc: '0001', url: 'https://shop.example/p/tea', categories: [] },
          stockrecord: { id: 70, partner_sku: 'TEA-1', price: '12.00', price_currency: 'USD' },
        },
      ],
    };
    detectedKinds('2023-02-10 cart', [cart2023], 'cart');
    const product2023 = { id: 8, title: 'Tea', date_updated: '2023-03-01T10:00:00Z', children: [] };
    detectedKinds('2023-02-10 product', [product2023], 'product');
    // The shape they show is how they are read under a label store-sync does not know.
    for (const data of [cart2023, product2023]) {
      const detection = detectDocument({ event_type: 'x.updated', api_version: 'unstable', data });
      assert.deepEqual(detection.labels, [{ label: 'unstable', readAs: '2023-02-10' }]);
      assert.equal(detection.records[0]!.apiVersion, '2023-02-10');
    }
    const cart2024 = {
      id: 42,
      created_at: '2024-05-01T10:00:00Z',
      checkout_url: 'https://s.example/c',
      lines: [],
    };
    assert.deepEqual(
      detectDocument({ event_type: 'x.updated', api_version: 'unstable', data: cart2024 }).labels,
      [{ label: 'unstable', readAs: '2024-04-01' }],
    );
    // An order without a number is still an order (refused naming the field), whatever else it has.
    const numberless = { created_at: '2024-01-01T00:00:00Z', lines: [], total_incl_tax: '1.00' };
    assert.deepEqual(
      detectDocument(numberless).records.map((r) => r.entity),
      ['order'],
    );
  });

  it('a document no rule recognises is still refused, naming the kinds it may be', () => {
    const detection = detectDocument({ id: 1, name: 'a store', domain: 'shop.example' });
    assert.equal(detection.records.length, 0);
    assert.match(
      detection.errors[0]!,
      /^unrecognised document: .*subscription, product, metadata definition or location/,
    );
  });
});
