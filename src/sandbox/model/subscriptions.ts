import type { Subscription, SubscriptionsQuery } from '../../../schemas/index.js';
import { allOf, anyOf, dayRange, digitsOnly, equalsIgnoreCase, lower, oneOf, type Test } from './filters.js';
import { ORDER_NUMBER_BASE, type SeededSubscription, type SubscriptionFacts } from './seed-subscriptions.js';
import { indexOfId } from './sorted.js';
import type { ListView } from './types.js';

/** A subscription seen by the filters: the public record with its hidden facts. */
interface Row {
  s: Subscription;
  f: SubscriptionFacts;
}

const ATTRIBUTION_EQUALITY = [
  'utm_source',
  'utm_campaign',
  'utm_term',
  'utm_content',
  'affiliate',
  'subaffiliate1',
  'subaffiliate2',
  'subaffiliate3',
  'subaffiliate4',
  'subaffiliate5',
] as const;

/** True when `number` is one of the subscription's orders (seeded renewals or later ones). */
function hasOrder(f: SubscriptionFacts, number: string): boolean {
  const index = Number(number) - ORDER_NUMBER_BASE;
  if (
    String(ORDER_NUMBER_BASE + index) === number &&
    index >= f.firstOrder &&
    index < f.firstOrder + f.orderCount
  ) {
    return true;
  }
  return f.extraOrders.includes(number);
}

function searchText(row: Row): string {
  if (row.f.search === undefined) {
    const u = row.s.user;
    row.f.search = lower(`${row.s.id}\n${u?.email}\n${u?.first_name} ${u?.last_name}\n${u?.phone_number}`);
  }
  return row.f.search;
}

function addressText(row: Row): string {
  if (row.f.address === undefined) {
    const parts = [row.s.billing_address, row.s.shipping_address].flatMap((a) =>
      a ? [a.line1, a.line2, a.line3, a.line4, a.postcode, a.state, a.country] : [],
    );
    row.f.address = lower(parts.filter(Boolean).join('\n'));
  }
  return row.f.address;
}

/** Compiles every filter of GET /subscriptions/ (spec 4.4); the semantics are in docs/sandbox-data.md. */
export function compileSubscriptionFilter(q: SubscriptionsQuery): Test<Row> {
  const tests: (Test<Row> | null)[] = [
    q.search_text ? searchTest(q.search_text) : null,
    q.address
      ? (
          (text) => (r: Row) =>
            addressText(r).includes(text)
        )(lower(q.address))
      : null,
    q.order_number
      ? (
          (n) => (r: Row) =>
            hasOrder(r.f, n)
        )(q.order_number.trim())
      : null,
    equalsIgnoreCase(q.customer_email, (r) => r.s.user?.email),
    q.customer_phone_number ? phoneTest(q.customer_phone_number) : null,
    equalsIgnoreCase(q.cancel_reason, (r) => r.s.cancel_reason),
    dayRange(q.date_from, q.date_to, (r) => r.f.createdDay),
    dayRange(q.next_renewal_date_from, q.next_renewal_date_to, (r) => r.f.nextRenewalDay),
    dayRange(q.cancel_date_from, q.cancel_date_to, (r) => r.f.cancelDay),
    dayRange(q.recoveries_date_from, q.recoveries_date_to, (r) => r.f.recoveryDay),
    oneOf(q.status, (r) => r.s.status),
    anyOf(
      q.product,
      (r) => r.f.sources,
      (s) => s.productKey,
    ),
    anyOf(
      q.sku,
      (r) => r.f.sources,
      (s) => s.skuLower,
    ),
    q.gateway?.length ? gatewayTest(q.gateway) : null,
    oneOf(q.card_type, (r) => r.f.cardType),
    q.recoveries_source
      ? (
          (source) => (r: Row) =>
            r.f.recoverySource === source
        )(q.recoveries_source)
      : null,
    oneOf(q.funnels, (r) => r.s.attribution?.funnel),
    q.agents?.length ? agentTest(q.agents) : null,
    ...ATTRIBUTION_EQUALITY.map((field) => equalsIgnoreCase(q[field], (r: Row) => r.s.attribution?.[field])),
    q.is_test === undefined ? null : (r) => r.s.is_test === q.is_test,
    oneOf(q.payment_method, (r) => r.s.payment_method),
    q.gateway_status ? (r) => r.f.profile.gateway.status === q.gateway_status : null,
  ];
  return allOf(tests);
}

function searchTest(query: string): Test<Row> {
  const text = lower(query.trim());
  return (r) => searchText(r).includes(text) || hasOrder(r.f, text);
}

/** Phone numbers match on their digits, with or without the country code. */
function phoneTest(query: string): Test<Row> {
  const digits = digitsOnly(query);
  return (r) => digits !== '' && digitsOnly(r.s.user?.phone_number ?? '').endsWith(digits);
}

function gatewayTest(values: string[]): Test<Row> {
  const wanted = new Set(values.map(lower));
  return (r) => wanted.has(String(r.f.profile.gateway.id)) || wanted.has(lower(r.f.profile.gateway.name));
}

function agentTest(values: string[]): Test<Row> {
  const wanted = new Set(values.map(lower));
  return (r) => {
    const agent = r.s.attribution?.agent;
    return !!agent && (wanted.has(String(agent.id)) || wanted.has(lower(agent.email ?? '')));
  };
}

/**
 * The subscriptions in id order with their hidden facts. Seeded records keep their original objects in
 * `seeded` (renewal orders are built from those), and changes publish new objects in `items`.
 */
export class SubscriptionBook {
  readonly items: Subscription[];
  /** Facts by id − 1 (ids are dense and never reused); a WeakMap this size slows every GC down. */
  private readonly facts: SubscriptionFacts[] = [];
  /** First seeded order index per seeded subscription, for mapping an order back to its subscription. */
  private readonly firstOrders: Int32Array;
  readonly renewalOrders: number;

  constructor(readonly seeded: readonly SeededSubscription[]) {
    this.items = new Array(seeded.length);
    this.firstOrders = new Int32Array(seeded.length);
    let total = 0;
    seeded.forEach(({ subscription, facts }, i) => {
      this.items[i] = subscription;
      this.facts[subscription.id - 1] = facts;
      this.firstOrders[i] = facts.firstOrder;
      total = facts.firstOrder + facts.orderCount;
    });
    this.renewalOrders = total;
  }

  factsOf(subscription: Subscription): SubscriptionFacts {
    return this.facts[subscription.id - 1]!;
  }

  position(id: number): number {
    return indexOfId(this.items, id);
  }

  add(subscription: Subscription, facts: SubscriptionFacts): void {
    this.facts[subscription.id - 1] = facts;
    this.items.push(subscription);
  }

  replace(next: Subscription, facts: SubscriptionFacts): void {
    this.facts[next.id - 1] = facts;
    this.items[this.position(next.id)] = next;
  }

  /** The seeded subscription whose renewals include seeded order index `index`, if any. */
  ownerOfOrder(index: number): { seeded: SeededSubscription; cycle: number } | undefined {
    if (index < 0 || index >= this.renewalOrders) return undefined;
    let lo = 0;
    let hi = this.firstOrders.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (this.firstOrders[mid]! <= index) lo = mid;
      else hi = mid - 1;
    }
    const seeded = this.seeded[lo]!;
    return { seeded, cycle: index - seeded.facts.firstOrder };
  }

  list(query: SubscriptionsQuery): ListView<Subscription> {
    const test = compileSubscriptionFilter(query);
    const row: Row = { s: this.items[0]!, f: undefined as unknown as SubscriptionFacts };
    return {
      items: this.items,
      matches: (subscription) => {
        const facts = this.facts[subscription.id - 1];
        if (!facts) return false;
        row.s = subscription;
        row.f = facts;
        return test(row);
      },
    };
  }
}
