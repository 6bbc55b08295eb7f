import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  Cart,
  FulfillmentEvent,
  FulfillmentOrder,
  Location,
  MetadataDefinition,
  Order2023,
  Order2024,
  Product,
  Subscription,
  Ticket,
} from '../../schemas/index.js';
import { parseMinor } from '../../src/sandbox/model/money.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import type { StoreParts } from '../../src/sandbox/model/store.js';
import { assertValid, storeParts } from './model-helpers.js';

function checkLists(parts: StoreParts, step: number): number {
  const lists = [
    [Product, parts.catalogue.items],
    [Subscription, parts.book.items],
    [FulfillmentOrder, parts.fulfillmentOrders.items],
    [Location, parts.locations.items],
    [MetadataDefinition, parts.metadata],
    [Ticket, parts.tickets],
  ] as const;
  let checked = 0;
  for (const [schema, items] of lists) {
    for (let i = 0; i < items.length; i += step) {
      assertValid(schema, items[i], `${items[i]!.constructor.name} ${items[i]!.id}`);
      checked++;
    }
  }
  return checked;
}

/** Amounts must add up: lines + shipping = totals, excluding tax + tax = including tax. */
function checkTotals(order: ReturnType<typeof renderOrder2024>): void {
  const c = order.currency!;
  const m = (text: string | null | undefined) => parseMinor(text ?? '0', c)!;
  const lines = (order.lines ?? []).reduce((sum, l) => sum + m(l.price_excl_tax), 0);
  assert.equal(lines + m(order.shipping_excl_tax), m(order.total_excl_tax), `order ${order.number} excl tax`);
  assert.equal(
    m(order.total_excl_tax) + m(order.total_tax),
    m(order.total_incl_tax),
    `order ${order.number} tax`,
  );
  const taxes = (order.tax_lines ?? []).reduce((sum, t) => sum + m(t.amount), 0);
  assert.equal(taxes, m(order.total_tax), `order ${order.number} tax lines`);
  const discounts = [...(order.voucher_discounts ?? []), ...(order.offer_discounts ?? [])].reduce(
    (s, d) => s + m(d.amount),
    0,
  );
  assert.equal(discounts, m(order.total_discount), `order ${order.number} discounts`);
}

function checkOrders(parts: StoreParts, samples: number): void {
  let events = 0;
  for (let k = 0; k < samples; k++) {
    const number = orderNumberOf(Math.floor((k * parts.orders.count) / samples));
    const state = parts.orders.find(number)!;
    const order = renderOrder2024(state);
    assertValid(Order2024, order, `order ${number} (2024-04-01)`);
    assertValid(Order2023, renderOrder2023(state), `order ${number} (2023-02-10)`);
    checkTotals(order);
    for (const f of state.fulfillments) {
      for (const e of f.events) {
        const event = parts.orders.event(number, f.id, String(e.id));
        assertValid(FulfillmentEvent, event, `event ${e.id}`);
        events++;
      }
    }
  }
  assert.ok(events > 0, 'some sampled orders have fulfillment events');
}

describe('every record matches its schema', () => {
  it('small store: every list record, a spread of orders in both shapes, events, carts and tickets', () => {
    const parts = storeParts(11);
    assert.ok(checkLists(parts, 1) > 1000);
    checkOrders(parts, 1500);
    for (const id of [1, 2, 50, parts.sizes.carts]) {
      try {
        assertValid(Cart, parts.carts.update(id, { lines: [{ product_id: 1, quantity: 2 }] }), `cart ${id}`);
      } catch (error) {
        // A checked-out cart refuses changes; that refusal is tested with the rules.
        assert.match(String(error), /checked out/);
      }
    }
    const cart = parts.carts.create({ lines: [{ product_id: 2, quantity: 1 }], currency: 'KWD' });
    assertValid(Cart, cart, 'new cart');
    assert.match(cart.total_incl_tax!, /^\d+\.\d{3}$/);
  });

  it('large store: at least 100,000 subscriptions, and a sample of every resource validates', () => {
    const parts = storeParts(5, 'large');
    assert.ok(parts.book.items.length >= 100_000);
    assert.ok(checkLists(parts, 97) > 1000);
    checkOrders(parts, 300);
  });
});
