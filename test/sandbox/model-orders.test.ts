import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Fulfillment, FulfillmentEvent, Order2023, Order2024 } from '../../schemas/index.js';
import { parseMinor } from '../../src/sandbox/model/money.js';
import { renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { SandboxRuleError } from '../../src/sandbox/model/types.js';
import { assertValid, NOW, storeParts } from './model-helpers.js';

const rule = (status: number, code: string, field?: string) => (error: unknown) => {
  assert.ok(error instanceof SandboxRuleError, `expected a SandboxRuleError, got ${String(error)}`);
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code, error.message);
  if (field !== undefined) assert.equal(error.field, field);
  return true;
};

function setup() {
  const parts = storeParts(31);
  const { orders, catalogue } = parts;
  const product = catalogue.items.find(
    (p) => p.is_public && !catalogue.hiddenOf(p).isGiftCard && p.variants!.length > 0,
  )!;
  return { parts, orders, product };
}

describe('order create', () => {
  it('2024: prices the lines from the catalogue in the requested currency and numbers the order above all others', () => {
    const { parts, orders, product } = setup();
    const seededLast = Number(orderNumberOf(orders.count - 1));
    const order = orders.create2024({
      lines: [{ product_id: product.id, quantity: 2 }],
      currency: 'EUR',
      shipping_price: '4.50',
      tags: ['vip'],
      metadata: { channel: 'test' },
      status: 'archived',
      payment_method: 'card_token',
      user: { email: parts.customers[0]!.user.email },
      use_default_shipping_address: true,
    });
    assertValid(Order2024, order, 'created order');
    assert.ok(Number(order.number) > seededLast);
    assert.equal(Date.parse(order.created_at!) > NOW, true, 'dated by the clock');
    const eur = product.variants![0]!.prices!.find((p) => p.currency === 'EUR');
    const unit = parseMinor(eur?.price ?? '0', 'EUR')!;
    const line = order.lines![0]!;
    assert.equal(line.product_id, product.id);
    assert.equal(line.variant_id, product.variants![0]!.id);
    if (eur) assert.equal(parseMinor(line.original_price_excl_tax!, 'EUR'), unit * 2);
    assert.equal(order.shipping_excl_tax, '4.50');
    assert.deepEqual(order.tags, ['vip']);
    assert.equal(order.status, 'archived');
    assert.equal(order.user!.id, parts.customers[0]!.user.id, 'a known email reuses the customer');
    assert.deepEqual(order.shipping_address, parts.customers[0]!.shipping);
    assert.equal(order.payment_status, 'paid');
    assert.equal(order.total_outstanding, '0.00');
    assert.equal(order.transactions![0]!.amount, order.total_incl_tax);
  });

  it('2024: a new shopper, a voucher, and a fulfillment order for what needs shipping', () => {
    const { parts, orders, product } = setup();
    const order = orders.create2024({
      lines: [{ product_id: product.id, quantity: 1 }],
      vouchers: ['welcome10'],
      user: { email: 'new.person@example.com', first_name: 'New' },
      shipping_address: {
        country: 'GB',
        line1: '1 High Street',
        line4: 'London',
        postcode: 'N1 1AA',
        state: 'Greater London',
      },
    });
    assert.ok(order.user!.id! > parts.customers.length);
    assert.equal(order.voucher_discounts![0]!.voucher!.code, 'WELCOME10');
    const gross = parseMinor(order.lines![0]!.original_price_excl_tax!, 'USD')!;
    assert.equal(parseMinor(order.total_discount!, 'USD'), Math.round(gross / 10));
    assert.equal(order.tax_lines![0]!.tax_title, 'UK VAT');
    assert.equal(order.payment_status, 'pending');
    const fo = parts.fulfillmentOrders.items.at(-1)!;
    assert.equal(fo.order_number, order.number);
    assert.equal(fo.status, 'open');
    assert.equal(parts.fulfillmentOrders.factsOf(fo).assignmentStatus, 'fulfillment_unrequested');
  });

  it('2024: refuses unknown products, currencies, vouchers and offers, naming the field', () => {
    const { parts, orders, product } = setup();
    assert.throws(
      () => orders.create2024({ lines: [{ product_id: 999_999, quantity: 1 }] }),
      rule(400, 'unknown_product', 'lines.0.product_id'),
    );
    assert.throws(
      () => orders.create2024({ lines: [{ product_id: product.id, quantity: 1 }], currency: 'JPY' }),
      rule(400, 'invalid', 'currency'),
    );
    assert.throws(
      () => orders.create2024({ lines: [{ product_id: product.id, quantity: 1 }], vouchers: ['NOPE'] }),
      rule(400, 'unknown_voucher', 'vouchers.0'),
    );
    assert.throws(
      () => orders.create2024({ lines: [{ product_id: product.id, quantity: 1 }], offers: [{ name: 'x' }] }),
      rule(400, 'unknown_offer', 'offers.0'),
    );
    assert.throws(
      () =>
        orders.create2024({
          lines: [{ product_id: product.id, quantity: 1 }],
          shipping_address: { country: 'Germany' },
        }),
      rule(400, 'invalid', 'shipping_address.country'),
    );
    const user = { email: 'first.try@example.com' };
    assert.throws(
      () => orders.create2024({ lines: [{ product_id: 999_999, quantity: 1 }], user }),
      rule(400, 'unknown_product'),
    );
    const accepted = orders.create2024({
      lines: [{ product_id: product.id, quantity: 1 }],
      user,
      shipping_address: { country: 'US' },
    });
    assert.equal(accepted.user!.id, parts.customers.length + 1, 'a refused request records no shopper');
    assert.equal(accepted.shipping_address!.id, accepted.user!.id! * 2);
    assert.equal(
      orders.create2024({ lines: [{ product_id: product.id, quantity: 1 }], user }).user!.id,
      accepted.user!.id,
    );
  });

  it('2023: answers in the 2023 shape and picks products deterministically for lines without product_id', () => {
    const a = setup().orders.create2023({ lines: [{ quantity: 1 }, { quantity: 3 }] });
    const b = setup().orders.create2023({ lines: [{ quantity: 1 }, { quantity: 3 }] });
    assertValid(Order2023, a, '2023 order');
    assert.equal(a.currency, 'USD');
    const ids = a.lines!.map((l) => l.product!.id);
    assert.deepEqual(
      ids,
      b.lines!.map((l) => l.product!.id),
    );
    const { parts } = setup();
    const fallback = parts.catalogue.items.filter(
      (p) => p.is_public && !parts.catalogue.hiddenOf(p).isGiftCard,
    );
    assert.deepEqual(ids, [fallback[0]!.id, fallback[1]!.id]);
    assert.equal(a.lines![1]!.quantity, 3);
    assert.ok(a.lines![0]!.stockrecord!.partner_sku);
    assert.equal(a.report_values!.currency, 'USD');
  });
});

describe('order PATCH, mark-as-paid and fulfillments', () => {
  it('changes to a seeded order persist (it is generated on demand until it changes)', () => {
    const { parts, orders } = setup();
    const open = parts.fulfillmentOrders.items.find((fo) => fo.status === 'open')!;
    const before = orders.find(open.order_number!)!;
    assert.equal(
      before.fulfillmentStatus,
      'unfulfilled',
      'an order with an open fulfillment order is not shipped yet',
    );
    assert.equal(before.fulfillments.length, 0);
    const shipment = orders.createFulfillment(open.order_number!, {});
    const after = orders.find(open.order_number!)!;
    assert.deepEqual(
      after.fulfillments.map((f) => f.id),
      [shipment.id],
    );
    assert.ok(
      after.lines
        .filter((l) => l.source.requiresShipping)
        .every((l) => l.fulfilled === l.quantity - l.refunded),
    );
    assert.equal(after.fulfillmentStatus, 'fulfilled');
    const eventId = String(after.fulfillments[0]!.events[0]!.id);
    assert.equal(orders.event(open.order_number!, shipment.id, eventId).fulfillment, shipment.id);
    assert.throws(() => orders.createFulfillment(open.order_number!, {}), rule(409, 'nothing_to_fulfill'));
    const pending = [...Array(orders.count).keys()]
      .map(orderNumberOf)
      .find((n) => orders.find(n)!.paymentStatus === 'pending')!;
    orders.markPaid(pending, {});
    assert.equal(orders.find(pending)!.paymentStatus, 'paid');
    assert.throws(() => orders.markPaid(pending, {}), rule(409, 'order_already_paid'));
  });

  it('seeded orders agree with their fulfillment orders', () => {
    const { parts, orders } = setup();
    const expected: Record<string, string[]> = {
      open: ['unfulfilled'],
      scheduled: ['unfulfilled'],
      on_hold: ['on_hold'],
      in_progress: ['processing'],
      processing: ['processing'],
      closed: ['fulfilled', 'incomplete'],
      incomplete: ['incomplete'],
    };
    for (const fo of parts.fulfillmentOrders.items) {
      const order = orders.find(fo.order_number!)!;
      if (order.paymentStatus !== 'paid' || !expected[fo.status!]) continue;
      assert.ok(
        expected[fo.status!]!.includes(order.fulfillmentStatus),
        `order ${order.number} is ${order.fulfillmentStatus} while fulfillment order ${fo.id} is ${fo.status}`,
      );
    }
  });

  it('PATCH sets fulfillment_status and status directly, replaces tags and metadata, merges attribution', () => {
    const { orders } = setup();
    const number = orderNumberOf(10);
    const before = renderOrder2024(orders.find(number)!);
    const after = orders.update(number, {
      fulfillment_status: 'on_hold',
      status: 'waiting for stock',
      tags: ['a', 'b'],
      metadata: { note: 'x' },
      attribution: { utm_source: 'podcast' },
      billing_address: { country: 'DE', line1: 'Hauptstraße 1', line4: 'Berlin' },
    });
    assertValid(Order2024, after, 'patched');
    assert.equal(after.fulfillment_status, 'on_hold');
    assert.equal(after.status, 'waiting for stock');
    assert.deepEqual(after.tags, ['a', 'b']);
    assert.deepEqual(after.metadata, { note: 'x' });
    assert.equal(after.attribution!.utm_source, 'podcast');
    assert.equal(after.attribution!.funnel, before.attribution!.funnel, 'other attribution fields stay');
    assert.equal(after.billing_address!.country, 'DE');
    assert.equal(after.billing_address!.id, before.billing_address!.id);
    assert.ok(after.updated_at! > before.updated_at!);
    assert.equal(after.total_incl_tax, before.total_incl_tax);
    assert.equal(orders.update(number, {}).status, 'waiting for stock', 'the change persists');
    assert.throws(() => orders.update('999999999', {}), rule(404, 'not_found'));
    assert.throws(() => orders.update('abc', { status: 'x' }), rule(404, 'not_found'));
    assert.throws(
      () => orders.update(number, { shipping_address: { postcode: 12345 } }),
      rule(400, 'invalid', 'shipping_address.postcode'),
    );
  });

  it('mark-as-paid pays what is outstanding once, then refuses: already fully paid', () => {
    const { orders, product } = setup();
    const created = orders.create2024({
      lines: [{ product_id: product.id, quantity: 1 }],
      payment_method: 'external',
    });
    assert.equal(created.payment_status, 'pending');
    const paid = orders.markPaid(created.number, { external_payment_method: 'bank_transfer' });
    assertValid(Order2023, paid, 'mark-as-paid answer');
    assert.equal(paid.payment_status, 'paid');
    const txn = paid.transactions!.at(-1)!;
    assert.equal(txn.amount, created.total_incl_tax);
    assert.equal(txn.is_external, true);
    assert.equal(txn.payment_method, 'bank_transfer');
    assert.ok(!('total_outstanding' in paid), '2023 shape');
    assert.throws(() => orders.markPaid(created.number, {}), rule(409, 'order_already_paid'));
    const seededPaid = [...Array(50).keys()]
      .map(orderNumberOf)
      .find((n) => orders.find(n)!.paymentStatus === 'paid')!;
    assert.throws(
      () => orders.markPaid(seededPaid, {}),
      (e: unknown) => rule(409, 'order_already_paid')(e) && /fully paid/.test(String(e)),
    );
    assert.throws(() => orders.markPaid('1', {}), rule(404, 'not_found'));
  });

  it('fulfillment create ships what is left, records it on the order, and its first event can be read', () => {
    const { orders, product } = setup();
    const order = orders.create2024({
      lines: [{ product_id: product.id, quantity: 3 }],
      payment_method: 'card_token',
    });
    const line = order.lines![0]!;
    assert.throws(
      () => orders.createFulfillment(order.number, { lines: [{ id: line.id, quantity: 4 }] }),
      rule(422, 'quantity_exceeds_remaining', 'lines.0.quantity'),
    );
    assert.throws(
      () => orders.createFulfillment(order.number, { lines: [{ id: 1, quantity: 1 }] }),
      rule(422, 'unknown_line', 'lines.0.id'),
    );
    const first = orders.createFulfillment(order.number, {
      lines: [{ id: line.id, quantity: 1 }],
      carrier: 'ups',
      tracking_code: '1Z999',
    });
    assertValid(Fulfillment, first, 'fulfillment');
    assert.equal(first.order_number, order.number);
    assert.equal(first.line_items![0]!.quantity, 1);
    assert.equal(first.tracking_link, 'https://www.ups.com/track?tracknum=1Z999');
    assert.equal(orders.update(order.number, {}).fulfillment_status, 'processing');
    const rest = orders.createFulfillment(order.number, {});
    assert.equal(rest.line_items![0]!.quantity, 2);
    const after = orders.update(order.number, {});
    assert.equal(after.fulfillment_status, 'fulfilled');
    assert.deepEqual(
      after.fulfillments!.map((f) => f.id),
      [first.id, rest.id],
    );
    assert.throws(() => orders.createFulfillment(order.number, {}), rule(409, 'nothing_to_fulfill'));
    const eventId = String(orders.find(order.number)!.fulfillments[0]!.events[0]!.id);
    const event = orders.event(order.number, first.id, eventId);
    assertValid(FulfillmentEvent, event, 'event');
    assert.equal(event.fulfillment, first.id);
    assert.equal(event.order, order.number);
    assert.throws(() => orders.event(order.number, first.id, '424242'), rule(404, 'not_found'));
    assert.throws(() => orders.event(order.number, first.id, 'abc'), rule(404, 'not_found'));
    assert.throws(() => orders.event(order.number, 1, eventId), rule(404, 'not_found'));
    assert.throws(() => orders.event('1', first.id, eventId), rule(404, 'not_found'));
  });
});
