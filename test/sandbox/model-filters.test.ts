import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AssignedFulfillmentOrdersQuery,
  MetadataQuery,
  ProductsQuery,
  type Subscription,
  SubscriptionsQuery,
} from '../../schemas/index.js';
import { createStore } from '../../src/sandbox/model/index.js';
import type { SubscriptionFacts } from '../../src/sandbox/model/seed-subscriptions.js';
import type { ListView } from '../../src/sandbox/model/types.js';
import { dayOf, dayText, storeParts } from './model-helpers.js';

const parts = storeParts(21);
const store = createStore({ seed: 21, scale: 'small' });
const subs = parts.book.items;
const factsOf = (s: Subscription) => parts.book.factsOf(s);

/** The view must select exactly what `expected` selects, and that must be some but not all records. */
function assertSelects<T extends { id: number }>(
  view: ListView<T>,
  expected: (item: T) => boolean,
  label: string,
) {
  const got = view.items.filter((item) => view.matches(item)).map((x) => x.id);
  const want = view.items.filter(expected).map((x) => x.id);
  assert.deepEqual(got, want, label);
  assert.ok(want.length > 0, `${label}: some records match`);
  assert.ok(want.length < view.items.length, `${label}: some records do not match`);
}

const subsWhere = (
  raw: Record<string, string>,
  expected: (s: Subscription, f: SubscriptionFacts) => boolean,
) =>
  assertSelects(
    store.listSubscriptions(SubscriptionsQuery.parse(raw)),
    (s) => expected(s, factsOf(s)),
    JSON.stringify(raw),
  );

describe('subscription filters', () => {
  const sample = subs.find(
    (s) => s.status === 'canceled' && s.attribution?.affiliate && (s.num_orders ?? 0) > 2,
  )!;
  const user = sample.user!;

  it('search_text, address, order_number, customer email and phone, cancel_reason', () => {
    subsWhere({ search_text: user.email!.toUpperCase() }, (s) => s.user?.email === user.email);
    subsWhere({ search_text: user.last_name! }, (s) =>
      `${s.id}\n${s.user?.email}\n${s.user?.first_name} ${s.user?.last_name}\n${s.user?.phone_number}`
        .toLowerCase()
        .includes(user.last_name!.toLowerCase()),
    );
    const order = sample.orders![1]!.order_number!;
    subsWhere(
      { search_text: order },
      (s) => s.orders!.some((o) => o.order_number === order) || String(s.id).includes(order),
    );
    subsWhere({ order_number: order }, (s) => s.orders!.some((o) => o.order_number === order));
    const street = sample.shipping_address!.line1!;
    subsWhere({ address: street.toLowerCase() }, (s) =>
      [s.billing_address, s.shipping_address].some((a) =>
        a?.line1?.toLowerCase().includes(street.toLowerCase()),
      ),
    );
    subsWhere({ customer_email: user.email! }, (s) => s.user?.email === user.email);
    const local = user.phone_number!.slice(-8);
    subsWhere({ customer_phone_number: local }, (s) => (s.user?.phone_number ?? '').endsWith(local));
    subsWhere({ cancel_reason: sample.cancel_reason! }, (s) => s.cancel_reason === sample.cancel_reason);
  });

  it('each date pair is an inclusive range of UTC days', () => {
    const created = dayOf(sample.date_created!);
    subsWhere({ date_from: dayText(created), date_to: dayText(created) }, (_, f) => f.createdDay === created);
    subsWhere({ date_from: dayText(created + 1) }, (_, f) => f.createdDay > created);
    subsWhere({ date_to: dayText(created) }, (_, f) => f.createdDay <= created);
    const renewal = subs.find((s) => s.next_renewal_date)!;
    const next = dayOf(renewal.next_renewal_date!);
    subsWhere(
      { next_renewal_date_from: dayText(next), next_renewal_date_to: dayText(next + 3) },
      (_, f) => f.nextRenewalDay !== null && f.nextRenewalDay >= next && f.nextRenewalDay <= next + 3,
    );
    const cancel = factsOf(sample).cancelDay!;
    subsWhere(
      { cancel_date_from: dayText(cancel), cancel_date_to: dayText(cancel) },
      (_, f) => f.cancelDay === cancel,
    );
    subsWhere(
      { cancel_date_from: dayText(cancel - 30) },
      (_, f) => f.cancelDay !== null && f.cancelDay >= cancel - 30,
    );
    const recovered = subs.map(factsOf).find((f) => f.recoveryDay !== null)!;
    const day = recovered.recoveryDay!;
    subsWhere(
      { recoveries_date_from: dayText(day - 60), recoveries_date_to: dayText(day) },
      (_, f) => f.recoveryDay !== null && f.recoveryDay >= day - 60 && f.recoveryDay <= day,
    );
  });

  it('status, product, sku, gateway, card_type, recoveries_source, payment_method, gateway_status', () => {
    subsWhere({ status: 'past_due,retrying' }, (s) => s.status === 'past_due' || s.status === 'retrying');
    subsWhere({ status: 'canceled' }, (s) => s.status === 'canceled');
    const line = sample.lines![0]!;
    const productId = String(line.product!.id);
    subsWhere({ product: productId }, (s) => s.lines!.some((l) => String(l.product!.id) === productId));
    const sku = line.stockrecord!.partner_sku!;
    subsWhere({ sku: sku.toLowerCase() }, (s) => s.lines!.some((l) => l.stockrecord!.partner_sku === sku));
    subsWhere({ gateway: '5' }, (_, f) => f.profile.gateway.id === 5);
    subsWhere({ gateway: 'paypal,Braintree' }, (_, f) =>
      ['PayPal', 'Braintree'].includes(f.profile.gateway.name),
    );
    subsWhere(
      { card_type: 'american_express,jcb' },
      (_, f) => f.cardType === 'american_express' || f.cardType === 'jcb',
    );
    subsWhere({ recoveries_source: 'retries' }, (_, f) => f.recoverySource === 'retries');
    subsWhere(
      { payment_method: 'paypal,klarna' },
      (s) => s.payment_method === 'paypal' || s.payment_method === 'klarna',
    );
    subsWhere({ gateway_status: 'inactive' }, (_, f) => f.profile.gateway.status === 'inactive');
    subsWhere({ gateway_status: 'active' }, (_, f) => f.profile.gateway.status === 'active');
  });

  it('attribution filters, is_test, and every filter at once', () => {
    const a = sample.attribution!;
    subsWhere({ funnels: `${a.funnel},nope` }, (s) => s.attribution?.funnel === a.funnel);
    const withAgent = subs.find((s) => s.attribution?.agent)!.attribution!.agent!;
    subsWhere({ agents: String(withAgent.id) }, (s) => s.attribution?.agent?.id === withAgent.id);
    subsWhere(
      { agents: withAgent.email!.toUpperCase() },
      (s) => s.attribution?.agent?.email === withAgent.email,
    );
    const text = ['utm_source', 'utm_campaign', 'affiliate'] as const;
    for (const field of text) subsWhere({ [field]: a[field]! }, (s) => s.attribution?.[field] === a[field]);
    for (const field of [
      'utm_term',
      'utm_content',
      'subaffiliate1',
      'subaffiliate2',
      'subaffiliate3',
      'subaffiliate4',
      'subaffiliate5',
    ] as const) {
      const value = subs.find((s) => s.attribution?.[field])!.attribution![field]!;
      subsWhere({ [field]: value }, (s) => s.attribution?.[field] === value);
    }
    subsWhere({ is_test: 'true' }, (s) => s.is_test === true);
    subsWhere({ is_test: 'false' }, (s) => s.is_test === false);
    const all = store.listSubscriptions(
      SubscriptionsQuery.parse({
        customer_email: user.email!,
        status: 'canceled',
        affiliate: a.affiliate!,
        date_to: dayText(dayOf(sample.date_created!)),
        is_test: String(sample.is_test),
      }),
    );
    assert.deepEqual(
      all.items.filter(all.matches).map((s) => s.id),
      subs
        .filter(
          (s) =>
            s.user?.email === user.email &&
            s.status === 'canceled' &&
            s.attribution?.affiliate === a.affiliate &&
            s.date_created! <= sample.date_created! &&
            s.is_test === sample.is_test,
        )
        .map((s) => s.id),
    );
    assert.ok(all.items.filter(all.matches).some((s) => s.id === sample.id));
  });
});

describe('product filters', () => {
  const products = parts.catalogue.items;
  const list = (raw: Record<string, string>) => store.listProducts(ProductsQuery.parse(raw));
  const hidden = (id: number) => parts.catalogue.hiddenOf(parts.catalogue.get(id)!);

  it('title contains, category by id or slug, range by id or slug', () => {
    const word = products[0]!.title!.split(' ')[1]!;
    assertSelects(
      list({ title: word.toUpperCase() }),
      (p) => p.title!.toLowerCase().includes(word.toLowerCase()),
      'title',
    );
    const category = products[3]!.categories![0]!;
    const inCategory = (p: (typeof products)[number]) => p.categories!.some((c) => c.id === category.id);
    assertSelects(list({ category: String(category.id) }), inCategory, 'category id');
    assertSelects(list({ category: `${category.slug},no-such-slug` }), inCategory, 'category slug');
    assertSelects(list({ range: '1' }), (p) => hidden(p.id).ranges.includes(1), 'range id');
    assertSelects(
      list({ range: 'clearance,holiday' }),
      (p) => hidden(p.id).ranges.some((r) => r === 5 || r === 4),
      'range slug',
    );
  });

  it('is_public, is_gift_card and sku', () => {
    assertSelects(list({ is_public: 'false' }), (p) => p.is_public === false, 'is_public');
    assertSelects(list({ is_gift_card: 'true' }), (p) => hidden(p.id).isGiftCard, 'is_gift_card');
    assertSelects(list({ is_gift_card: 'false' }), (p) => !hidden(p.id).isGiftCard, 'not gift cards');
    const sku = products[5]!.variants!.at(-1)!.sku!;
    assertSelects(list({ sku: `${sku},XX-0` }), (p) => p.variants!.some((v) => v.sku === sku), 'sku');
  });
});

describe('assigned fulfillment order filters', () => {
  const list = (raw: Record<string, string>) =>
    store.listAssignedFulfillmentOrders(AssignedFulfillmentOrdersQuery.parse(raw));
  const facts = (id: number) => parts.fulfillmentOrders.factsOf(parts.fulfillmentOrders.get(id));

  it('location_id, assignment_status and the created-date window', () => {
    assertSelects(list({ location_id: '2' }), (fo) => fo.assigned_location?.id === 2, 'location');
    assertSelects(
      list({ location_id: '1,3' }),
      (fo) => [1, 3].includes(fo.assigned_location!.id),
      'locations',
    );
    for (const status of [
      'fulfillment_unrequested',
      'fulfillment_requested',
      'fulfillment_accepted',
      'cancellation_requested',
    ]) {
      assertSelects(
        list({ assignment_status: status }),
        (fo) => facts(fo.id).assignmentStatus === status,
        status,
      );
    }
    const day = facts(40).createdDay;
    assertSelects(
      list({ date_created_from: dayText(day), date_created_to: dayText(day + 20) }),
      (fo) => {
        const d = facts(fo.id).createdDay;
        return d >= day && d <= day + 20;
      },
      'created window',
    );
  });
});

describe('metadata filters and locations', () => {
  const list = (raw: Record<string, string>) => store.listMetadata(MetadataQuery.parse(raw));

  it('name, object, metadata_key, type, enable_export, enable_filter', () => {
    const d = parts.metadata[4]!;
    assertSelects(
      list({ name: d.name!.slice(0, 4).toLowerCase() }),
      (x) => x.name!.toLowerCase().includes(d.name!.slice(0, 4).toLowerCase()),
      'name',
    );
    assertSelects(
      list({ object: 'order,line' }),
      (x) => x.object === 'order' || x.object === 'line',
      'object',
    );
    assertSelects(list({ metadata_key: d.key! }), (x) => x.key === d.key, 'key');
    assertSelects(list({ type: 'file' }), (x) => x.type === 'file', 'type');
    assertSelects(list({ enable_export: 'true' }), (x) => x.enable_export === true, 'export');
    assertSelects(list({ enable_filter: 'false' }), (x) => x.enable_filter === false, 'filter');
  });

  it('lists every location in id order', () => {
    const view = store.listLocations();
    assert.deepEqual(
      view.items.filter(view.matches).map((l) => l.id),
      [1, 2, 3, 4, 5],
    );
  });
});
