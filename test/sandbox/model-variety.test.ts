import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  ASSIGNMENT_STATUSES,
  CARD_TYPES,
  METADATA_OBJECTS,
  METADATA_TYPES,
  RECOVERIES_SOURCES,
  SUBSCRIPTION_PAYMENT_METHODS,
  SUBSCRIPTION_STATUSES,
} from '../../schemas/index.js';
import { renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { storeParts } from './model-helpers.js';

const parts = storeParts(7);
const subs = parts.book.items;
const facts = subs.map((s) => parts.book.factsOf(s));
const set = <T>(values: T[]) => new Set(values.filter((v) => v !== null && v !== undefined));

describe('a seeded store has realistic variety', () => {
  it('subscriptions in every status, with cancellations, renewals and recoveries', () => {
    assert.deepEqual(set(subs.map((s) => s.status)), new Set(SUBSCRIPTION_STATUSES));
    for (const s of subs.filter((x) => x.status === 'canceled')) {
      assert.ok(s.cancel_reason, `canceled subscription ${s.id} has a reason`);
      assert.equal(s.next_renewal_date, null);
      assert.notEqual(parts.book.factsOf(s).cancelDay, null);
    }
    assert.ok(subs.some((s) => s.cancel_reason === 'other' && s.cancel_reason_other_message));
    assert.ok(
      subs.some((s) => (s.num_orders ?? 0) >= 12),
      'long-running subscriptions have many renewals',
    );
    for (const s of subs) assert.equal(s.orders?.length, s.num_orders);
    assert.deepEqual(set(facts.map((f) => f.recoverySource)), new Set(RECOVERIES_SOURCES));
    assert.ok(facts.every((f) => (f.recoveryDay === null) === (f.recoverySource === null)));
  });

  it('payments by every method, card type and gateway status', () => {
    assert.deepEqual(set(subs.map((s) => s.payment_method)), new Set(SUBSCRIPTION_PAYMENT_METHODS));
    assert.deepEqual(set(facts.map((f) => f.cardType)), new Set(CARD_TYPES));
    assert.deepEqual(set(facts.map((f) => f.profile.gateway.status)), new Set(['active', 'inactive']));
    assert.ok(set(facts.map((f) => f.profile.gateway.id)).size >= 6);
  });

  it('attribution with utm, affiliates, sub-affiliates, funnels and agents; some test records', () => {
    const attributions = subs.map((s) => s.attribution!);
    for (const field of [
      'utm_source',
      'utm_campaign',
      'utm_term',
      'utm_content',
      'affiliate',
      'funnel',
    ] as const) {
      assert.ok(set(attributions.map((a) => a[field])).size >= 3, `${field} varies`);
    }
    assert.ok(
      attributions.some((a) => a.subaffiliate5),
      'all five sub-affiliates occur',
    );
    assert.ok(attributions.some((a) => a.agent?.email));
    assert.ok(subs.some((s) => s.is_test) && subs.some((s) => !s.is_test));
  });

  it('a catalogue with variants, currencies (one with three decimals), stock, images and categories', () => {
    const products = parts.catalogue.items;
    const variants = products.flatMap((p) => p.variants ?? []);
    assert.ok(products.some((p) => (p.variants?.length ?? 0) > 1 && (p.variant_attributes?.length ?? 0) > 0));
    const prices = variants.flatMap((v) => v.prices ?? []);
    assert.deepEqual(set(prices.map((p) => p.currency)), new Set(['USD', 'EUR', 'GBP', 'KWD']));
    for (const price of prices.filter((p) => p.currency === 'KWD'))
      assert.match(price.price!, /^\d+\.\d{3}$/);
    for (const price of prices.filter((p) => p.currency === 'USD'))
      assert.match(price.price!, /^\d+\.\d{2}$/);
    const locationIds = set(variants.flatMap((v) => (v.stockrecords ?? []).map((s) => s.location_id)));
    assert.equal(locationIds.size, parts.locations.items.length, 'stock at every location');
    assert.ok(products.every((p) => (p.images?.length ?? 0) > 0 && (p.categories?.length ?? 0) > 0));
    assert.ok(products.some((p) => p.is_public === false));
    assert.ok(products.some((p) => parts.catalogue.hiddenOf(p).isGiftCard));
    assert.ok(variants.every((v) => v.variant_attribute_values !== undefined));
  });

  it('metadata definitions of every object and type, with validations', () => {
    assert.deepEqual(set(parts.metadata.map((d) => d.object)), new Set(METADATA_OBJECTS));
    assert.deepEqual(set(parts.metadata.map((d) => d.type)), new Set(METADATA_TYPES));
    assert.ok(
      parts.metadata.filter((d) => d.type !== 'boolean').every((d) => (d.validations?.length ?? 0) > 0),
    );
    assert.equal(set(parts.metadata.map((d) => d.key)).size, parts.metadata.length, 'keys are unique');
  });

  it('fulfillment orders in every assignment status and the statuses the rules need', () => {
    const fos = parts.fulfillmentOrders.items;
    const assignment = fos.map((fo) => parts.fulfillmentOrders.factsOf(fo).assignmentStatus);
    assert.deepEqual(set(assignment), new Set(ASSIGNMENT_STATUSES));
    const statuses = set(fos.map((fo) => fo.status));
    for (const status of [
      'open',
      'in_progress',
      'processing',
      'closed',
      'incomplete',
      'on_hold',
      'scheduled',
    ]) {
      assert.ok(statuses.has(status), `a fulfillment order is ${status}`);
    }
    assert.ok(fos.some((fo) => (fo.fulfillment_holds?.length ?? 0) > 0));
    assert.ok(fos.some((fo) => (fo.merchant_requests?.length ?? 0) > 1));
    assert.ok(fos.every((fo) => (fo.line_items?.length ?? 0) > 0));
  });

  it('orders with lines, taxes, both discount kinds, transactions, refunds and fulfillments with events', () => {
    const spread = (i: number) => Math.floor((i * parts.orders.count) / 1500);
    const orders = Array.from({ length: 1500 }, (_, i) =>
      renderOrder2024(parts.orders.find(orderNumberOf(spread(i)))!),
    );
    const some = (test: (o: (typeof orders)[number]) => boolean, what: string) =>
      assert.ok(orders.some(test), what);
    some((o) => (o.tax_lines?.length ?? 0) > 0 && Number(o.total_tax) > 0, 'taxed orders');
    some((o) => (o.voucher_discounts?.length ?? 0) > 0, 'voucher discounts');
    some((o) => (o.offer_discounts?.length ?? 0) > 0, 'offer discounts');
    some(
      (o) =>
        (o.refunds ?? []).some(
          (r) => (r.refund_line_items?.length ?? 0) > 0 && (r.transactions?.length ?? 0) > 0,
        ),
      'refunds',
    );
    some((o) => (o.refunds ?? []).some((r) => (r.adjustments?.length ?? 0) > 0), 'refund adjustments');
    some((o) => (o.transactions ?? []).some((t) => t.payment_details?.gateway?.name), 'payment details');
    some((o) => (o.transactions ?? []).some((t) => t.status === 'failed'), 'failed attempts');
    some((o) => (o.fulfillments ?? []).some((f) => (f.line_items?.length ?? 0) > 0), 'fulfillments');
    some((o) => o.payment_status === 'pending', 'unpaid orders to mark as paid');
    some((o) => (o.subscriptions?.length ?? 0) > 0, 'subscription renewals');
    some((o) => o.currency === 'KWD' && /\.\d{3}$/.test(o.total_incl_tax!), 'three-decimal totals');
    assert.ok(set(orders.map((o) => o.fulfillment_status)).size >= 5);
  });

  it('tickets with comments and attachments', () => {
    assert.ok(parts.tickets.every((t) => (t.comments?.length ?? 0) > 0));
    assert.ok(parts.tickets.some((t) => t.comments!.some((c) => (c.attachments?.length ?? 0) > 0)));
    assert.ok(set(parts.tickets.map((t) => t.status)).size >= 3);
  });

  it('keeps the hidden facts out of the public records', () => {
    const text = JSON.stringify([subs, parts.fulfillmentOrders.items, parts.catalogue.items]);
    for (const hidden of [
      'cardType',
      'card_type',
      'gateway_status',
      'recoveries',
      'assignment',
      'isGiftCard',
      'ranges',
    ]) {
      assert.ok(!text.includes(`"${hidden}`), `${hidden} is not served`);
    }
  });
});
