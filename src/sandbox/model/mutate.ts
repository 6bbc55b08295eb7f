import type { Subscription } from '../../../schemas/index.js';
import { editedProduct } from './catalogue-writes.js';
import { postcodeFor } from './customers.js';
import { formatMinor, parseMinor } from './money.js';
import { subscriptionPaymentDetails } from './payments.js';
import { hash32, type Rng, rngFor, sampleIndexes } from './random.js';
import { makeProduct } from './seed-catalogue.js';
import {
  draftSubscriptionBasics,
  drawCancelReason,
  drawRecoverySource,
  frequencyText,
  type SubscriptionFacts,
} from './seed-subscriptions.js';
import type { StoreParts } from './store.js';
import { addInterval, DAY_MS, dayNumber, iso } from './time.js';
import type { MutationPlan, MutationSummary } from './types.js';
import { REGIONS, STREETS } from './vocab.js';

type Resource = 'subscriptions' | 'products' | 'fulfillment_orders' | 'locations' | 'orders';

class Changes {
  readonly summary: MutationSummary = { created: {}, changed: {}, removed: {} };
  private readonly touched = new Set<string>();

  /** Whether a record already changed in this plan (it is not picked for a second change). */
  has(resource: Resource, id: number): boolean {
    return this.touched.has(`${resource}:${id}`);
  }

  note(kind: keyof MutationSummary, resource: Resource, id: number): void {
    this.touched.add(`${resource}:${id}`);
    const ids = this.summary[kind][resource] ?? [];
    ids.push(id);
    this.summary[kind][resource] = ids;
  }
}

/** `count` records among those passing `eligible`, chosen by the plan's randomness. */
function choose<T>(
  rng: Rng,
  items: readonly T[],
  count: number | undefined,
  eligible: (item: T) => boolean,
): T[] {
  if (!count) return [];
  const candidates = items.filter(eligible);
  return sampleIndexes(rng, candidates.length, count).map((i) => candidates[i]!);
}

/**
 * Applies a mutation plan (change between syncs): everything is dated by the clock and chosen by
 * `plan.seed`, so the same plan on the same store changes the same records. Changes and removals pick
 * among records that existed before the plan; creations come last. Returns the ids touched.
 */
export function applyMutations(parts: StoreParts, plan: MutationPlan): MutationSummary {
  const rng = rngFor(parts.seed, 'mutate', hash32(plan.seed ?? 0));
  const changes = new Changes();
  const nowMs = parts.now();
  const previousHook = parts.orders.onCreated;
  parts.orders.onCreated = (order) => {
    changes.note('created', 'orders', Number(order.number));
    const fo = parts.fulfillmentOrders.createForOrder(order);
    if (fo) changes.note('created', 'fulfillment_orders', fo.id);
  };
  try {
    mutateSubscriptions(parts, plan, rng, nowMs, changes);
    mutateProducts(parts, plan, rng, nowMs, changes);
    mutateFulfillmentOrders(parts, plan, rng, changes);
    mutateLocations(parts, plan, rng, changes);
  } finally {
    parts.orders.onCreated = previousHook;
  }
  return changes.summary;
}

function publish(parts: StoreParts, next: Subscription, facts: SubscriptionFacts, changes: Changes): void {
  parts.book.replace(next, facts);
  changes.note('changed', 'subscriptions', next.id);
}

/** Appends an order placed now to a subscription's history. */
function withNewOrder(parts: StoreParts, s: Subscription, f: SubscriptionFacts) {
  const cycle = (s.num_orders ?? 0) + 1;
  const order = parts.orders.createSubscriptionOrder(s, f, cycle);
  return {
    orders: [...(s.orders ?? []), { billing_cycle: cycle, order_number: order.number }],
    num_orders: cycle,
    extraOrders: [...f.extraOrders, order.number],
  };
}

function mutateSubscriptions(
  parts: StoreParts,
  plan: MutationPlan,
  rng: Rng,
  nowMs: number,
  changes: Changes,
): void {
  const { book } = parts;
  const today = dayNumber(nowMs);
  const untouched = (s: Subscription) => !changes.has('subscriptions', s.id);
  const live = (s: Subscription) => s.status !== 'canceled' && untouched(s);
  for (const s of choose(rng, book.items, plan.cancelSubscriptions, live)) {
    const { reason, message } = drawCancelReason(rng);
    const next = {
      ...s,
      status: 'canceled',
      cancel_reason: reason,
      cancel_reason_other_message: message,
      next_renewal_date: null,
    };
    publish(parts, next, { ...book.factsOf(s), cancelDay: today, nextRenewalDay: null }, changes);
  }
  const failing = (s: Subscription) => (s.status === 'past_due' || s.status === 'retrying') && untouched(s);
  for (const s of choose(rng, book.items, plan.recoverSubscriptions, failing)) {
    const f = book.factsOf(s);
    const added = withNewOrder(parts, s, f);
    const unit = f.intervalUnit;
    const nextRenewal = addInterval(nowMs, unit, s.interval_count ?? 1);
    const next = {
      ...s,
      status: 'active',
      orders: added.orders,
      num_orders: added.num_orders,
      next_renewal_date: iso(nextRenewal),
    };
    const facts = {
      ...f,
      extraOrders: added.extraOrders,
      recoveryDay: today,
      recoverySource: drawRecoverySource(rng),
      nextRenewalDay: dayNumber(nextRenewal),
    };
    publish(parts, next, facts, changes);
  }
  for (const s of choose(
    rng,
    book.items,
    plan.failSubscriptions,
    (x) => x.status === 'active' && untouched(x),
  )) {
    const retry = nowMs + rng.int(1, 3) * DAY_MS;
    const next = { ...s, status: rng.chance(0.5) ? 'past_due' : 'retrying', next_renewal_date: iso(retry) };
    publish(parts, next, { ...book.factsOf(s), nextRenewalDay: dayNumber(retry) }, changes);
  }
  choose(rng, book.items, plan.requantifySubscriptions, (x) => live(x) && (x.lines?.length ?? 0) > 0).forEach(
    (s, i) => {
      const [line, ...rest] = s.lines!;
      const quantity = line!.quantity ?? 1;
      const delta = i % 2 === 1 && quantity > 1 ? -1 : 1;
      const currency = s.currency!;
      // A line's price is a unit price (subscription_lines.price): the renewal total moves by one unit.
      const unit = parseMinor(line!.price ?? '0', currency)!;
      const next = {
        ...s,
        lines: [{ ...line!, quantity: quantity + delta }, ...rest],
        total: formatMinor(parseMinor(s.total ?? '0', currency)! + delta * unit, currency),
      };
      publish(parts, next, book.factsOf(s), changes);
    },
  );
  for (let i = 0; i < (plan.createSubscriptions ?? 0); i++) {
    const basics = draftSubscriptionBasics(rng, parts.subscriptionDraft, nowMs);
    const id = parts.ids.subscription.next();
    const nextRenewal = addInterval(nowMs, basics.intervalUnit, basics.intervalCount);
    const draft: Subscription = {
      attribution: basics.attribution,
      billing_address: basics.customer.billing,
      cancel_reason: null,
      cancel_reason_other_message: null,
      currency: basics.currency,
      date_created: iso(nowMs),
      frequency: frequencyText(basics.intervalUnit, basics.intervalCount),
      id,
      interval: basics.intervalUnit,
      interval_count: basics.intervalCount,
      is_tax_known: true,
      is_test: false,
      lines: basics.lines,
      next_renewal_date: iso(nextRenewal),
      num_lines: basics.lines.length,
      num_orders: 0,
      orders: [],
      payment_details: subscriptionPaymentDetails(basics.profile),
      payment_method: basics.profile.method,
      shipping_address: basics.customer.shipping,
      shipping_code: basics.shippingCode,
      shipping_price: basics.shippingPrice,
      status: 'active',
      total: basics.total,
      user: basics.customer.user,
    };
    const facts: SubscriptionFacts = {
      createdMs: nowMs,
      createdDay: today,
      nextRenewalDay: dayNumber(nextRenewal),
      cancelDay: null,
      recoveryDay: null,
      recoverySource: null,
      profile: basics.profile,
      cardType: basics.profile.cardType,
      customer: basics.customer,
      intervalUnit: basics.intervalUnit,
      firstOrder: -1,
      orderCount: 0,
      extraOrders: [],
      sources: basics.sources,
      recoveredCycle: null,
    };
    const added = withNewOrder(parts, draft, facts);
    book.add(
      { ...draft, orders: added.orders, num_orders: added.num_orders },
      { ...facts, extraOrders: added.extraOrders },
    );
    changes.note('created', 'subscriptions', id);
  }
}

function mutateProducts(
  parts: StoreParts,
  plan: MutationPlan,
  rng: Rng,
  nowMs: number,
  changes: Changes,
): void {
  const { catalogue } = parts;
  for (const p of choose(rng, catalogue.items, plan.updateProducts, () => true)) {
    catalogue.replace(editedProduct(p, rng, nowMs));
    changes.note('changed', 'products', p.id);
  }
  for (const p of choose(rng, catalogue.items, plan.removeProducts, (x) => !changes.has('products', x.id))) {
    catalogue.remove(p.id);
    changes.note('removed', 'products', p.id);
  }
  for (let i = 0; i < (plan.createProducts ?? 0); i++) {
    const id = parts.ids.product.next();
    const ctx = {
      seed: parts.seed,
      ids: parts.ids,
      productCount: id,
      locations: Math.max(1, parts.locations.items.length),
      createdMs: nowMs,
      updatedMs: nowMs,
      usedSlugs: parts.usedSlugs,
    };
    const { product, hidden } = makeProduct(
      id,
      ctx,
      rngFor(parts.seed, 'new-product', hash32(id, rng.u32())),
    );
    catalogue.add(product, hidden);
    changes.note('created', 'products', id);
  }
}

function mutateFulfillmentOrders(parts: StoreParts, plan: MutationPlan, rng: Rng, changes: Changes): void {
  const { fulfillmentOrders: fos, locations, catalogue } = parts;
  for (const fo of choose(
    rng,
    fos.items,
    plan.moveFulfillmentOrders,
    (x) => x.status === 'open' || x.status === 'scheduled',
  )) {
    const from = fos.factsOf(fo).locationId;
    const targets = locations.items.filter((l) => l.id !== from);
    if (targets.length === 0) break;
    const moved = fos.move(fo.id, { new_location_id: rng.pick(targets).id }).moved_fulfillment_order;
    changes.note('changed', 'fulfillment_orders', fo.id);
    changes.note('created', 'fulfillment_orders', moved.id);
  }
  for (const fo of choose(
    rng,
    fos.items,
    plan.closeFulfillmentOrders,
    (x) => x.status === 'processing' && !changes.has('fulfillment_orders', x.id),
  )) {
    fos.close(fo.id, { message: 'Closed by the sandbox mutation plan' });
    changes.note('changed', 'fulfillment_orders', fo.id);
  }
  // A new fulfillment order comes with the new order that needs shipping.
  const shippable = catalogue.items.filter(
    (p) => p.variants?.[0]?.requires_shipping && !catalogue.hiddenOf(p).isGiftCard,
  );
  for (let i = 0; i < (plan.createFulfillmentOrders ?? 0) && shippable.length > 0; i++) {
    const customer = rng.pick(parts.customers);
    const product = rng.pick(shippable);
    parts.orders.create2024({
      lines: [{ product_id: product.id, quantity: rng.int(1, 3) }],
      currency: customer.region.currency,
      user: { email: customer.user.email },
      use_default_shipping_address: true,
      use_default_billing_address: true,
      payment_method: 'card_token',
    });
  }
}

function mutateLocations(parts: StoreParts, plan: MutationPlan, rng: Rng, changes: Changes): void {
  // The store always keeps at least one location to ship from.
  const removable = Math.min(plan.removeLocations ?? 0, parts.locations.items.length - 1);
  for (const location of choose(rng, parts.locations.items, removable, () => true)) {
    parts.locations.remove(location.id);
    changes.note('removed', 'locations', location.id);
  }
  for (let i = 0; i < (plan.createLocations ?? 0); i++) {
    const region = rng.pick(REGIONS);
    const location = parts.locations.create({
      address: {
        country: region.country,
        line1: `${rng.int(1, 400)} ${rng.pick(STREETS)}`,
        line4: region.city,
        postcode: postcodeFor(rng, region.postcode),
        state: region.state,
      },
      accept_return: rng.chance(0.5),
      name: `${region.city} Pop-up`,
    });
    changes.note('created', 'locations', location.id);
  }
}
