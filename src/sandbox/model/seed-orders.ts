import type { Attribution, Location } from '../../../schemas/index.js';
import type { Catalogue } from './catalogue.js';
import type { Customer } from './customers.js';
import { addFulfillment, carrierFor, fulfillmentStatusOf } from './fulfillments.js';
import { convertMinor } from './money.js';
import {
  addRefund,
  blankOrder,
  finishOrder,
  OFFERS,
  offerDiscount,
  setShipping,
  VOUCHERS,
  voucherDiscount,
} from './order-build.js';
import { type IdSource, newLine, type OrderState, seededIds, taxAt, totalsOf } from './order-state.js';
import {
  drawPaymentProfile,
  makeTransaction,
  type PaymentProfile,
  transactionPaymentDetails,
} from './payments.js';
import { type Rng, rngFor, weighted } from './random.js';
import { orderNumberOf } from './seed-subscriptions.js';
import type { SubscriptionBook } from './subscriptions.js';
import { addInterval, DAY_MS, HISTORY_MS, wholeSeconds } from './time.js';

/** What lazily generated orders are built from: the seeded world as it was at the anchor. */
export interface OrderWorld {
  seed: number;
  anchorMs: number;
  catalogue: Catalogue;
  book: SubscriptionBook;
  customers: readonly Customer[];
  attributions: readonly Attribution[];
  seededLocations: readonly Location[];
  oneOffOrders: number;
  /** Seeded product ids a shopper can buy (public ones). */
  purchasable: readonly number[];
  /**
   * Status of the seeded fulfillment order of an order (by order index), filled while fulfillment orders
   * are seeded, so the order's own shipping history agrees with it.
   */
  fulfillmentOrderStatus: Map<number, string>;
}

/** The order's fulfillment_status while its fulfillment order is still being worked on. */
const OPEN_FULFILLMENT: Record<string, string> = {
  open: 'unfulfilled',
  scheduled: 'unfulfilled',
  on_hold: 'on_hold',
  in_progress: 'processing',
  processing: 'processing',
  cancelled: 'unfulfilled',
};

export const seededOrderCount = (world: OrderWorld) => world.book.renewalOrders + world.oneOffOrders;

/**
 * Seeded order `index`, built on demand (with `linesOnly`, just what a fulfillment order copies) from its own random stream: renewals of subscriptions come
 * first (each subscription's renewals are consecutive), then one-off orders in date order. Returns
 * undefined outside the seeded range.
 */
export function generateSeededOrder(
  world: OrderWorld,
  index: number,
  linesOnly = false,
): OrderState | undefined {
  if (!Number.isInteger(index) || index < 0 || index >= seededOrderCount(world)) return undefined;
  const rng = rngFor(world.seed, 'order', index);
  const ids = seededIds(index);
  const owner = world.book.ownerOfOrder(index);
  const order = owner
    ? renewal(index, rng, ids, owner, linesOnly)
    : oneOff(world, index, rng, ids, linesOnly);
  if (!linesOnly) settle(world, order, rng, ids);
  return order;
}

function renewal(
  index: number,
  rng: Rng,
  ids: IdSource,
  owner: NonNullable<ReturnType<SubscriptionBook['ownerOfOrder']>>,
  linesOnly: boolean,
): OrderState {
  const { subscription: s, facts: f } = owner.seeded;
  const k = owner.cycle;
  const cycleMs = k === 0 ? f.createdMs : addInterval(f.createdMs, f.intervalUnit, k * s.interval_count!);
  const placedMs = wholeSeconds(cycleMs + (k === 0 ? 0 : rng.int(60, 3_600) * 1000));
  const order = blankOrder({
    index,
    number: orderNumberOf(index),
    currency: s.currency!,
    atMs: placedMs,
    user: f.customer.user,
    billing: f.customer.billing,
    shipping: f.customer.shipping,
    attribution: s.attribution!,
    source: k === 0 ? 'web' : 'subscription',
  });
  order.isTest = s.is_test ?? false;
  order.lifecycle = k === 0 ? 'new_subscription' : 'renewal';
  order.subscriptions = [{ billing_cycle: k + 1, id: s.id }];
  order.tags = k === 0 ? ['subscription', 'first-order'] : ['subscription'];
  const tax = taxAt(order.shipping);
  s.lines!.forEach((line, j) => {
    const source = f.sources[j]!;
    order.lines.push(newLine(ids.line(), source, line.quantity!, source.subscription, tax, placedMs));
  });
  setShipping(order, s.shipping_code!);
  if (k === 0 && rng.chance(0.2)) order.vouchers.push(voucherDiscount(order, rng.pick(VOUCHERS)));
  finishOrder(order, ids);
  if (linesOnly) return order;
  const recovered = f.recoveredCycle === k && f.recoveryDay !== null;
  pay(order, rng, ids, f.profile, {
    method: f.profile.method === 'bankcard' ? (k === 0 ? 'card_token' : 'saved_card') : f.profile.method,
    failedAtMs: recovered ? placedMs : null,
    paidAtMs: recovered ? f.recoveryDay! * DAY_MS + 10 * 3_600_000 : placedMs,
  });
  return order;
}

const drawOneOffOutcome = weighted<'paid' | 'pending' | 'failed' | 'partial'>([
  ['paid', 93],
  ['pending', 4],
  ['failed', 2],
  ['partial', 1],
]);
const drawSource = weighted<string>([
  ['web', 80],
  ['phone', 8],
  ['api', 6],
  ['pos', 6],
]);

function oneOff(world: OrderWorld, index: number, rng: Rng, ids: IdSource, linesOnly: boolean): OrderState {
  const j = index - world.book.renewalOrders;
  const start = world.anchorMs - HISTORY_MS;
  const placedMs = wholeSeconds(start + (HISTORY_MS * (j + rng.next())) / world.oneOffOrders);
  const customer = rng.pick(world.customers);
  const order = blankOrder({
    index,
    number: orderNumberOf(index),
    currency: customer.region.currency,
    atMs: placedMs,
    user: customer.user,
    billing: customer.billing,
    shipping: customer.shipping,
    attribution: rng.pick(world.attributions)!,
    source: drawSource(rng),
  });
  order.isTest = rng.chance(0.02);
  if (rng.chance(0.1)) order.tags = [rng.pick(['vip', 'gift', 'wholesale', 'influencer'])];
  if (rng.chance(0.1)) order.metadata = { gift_message: 'Happy birthday!' };
  const tax = taxAt(order.shipping);
  const count = rng.chance(0.6) ? 1 : rng.int(2, 4);
  for (let i = 0; i < count; i++) {
    const seeded = world.catalogue.seeded[rng.pick(world.purchasable) - 1]!;
    const variant = rng.pick(seeded.product.variants!);
    const source = world.catalogue.lineSource(
      seeded.product,
      variant,
      order.currency,
      seeded.hidden.isGiftCard,
    );
    order.lines.push(
      newLine(ids.line(), source, rng.chance(0.75) ? 1 : rng.int(2, 3), source.price, tax, placedMs),
    );
  }
  if (rng.chance(0.08)) {
    const last = order.lines[order.lines.length - 1]!;
    const upsell = newLine(ids.line(), last.source, 1, last.source.price, tax, placedMs + 120_000, true);
    order.lines.push(upsell);
    order.offers.push(offerDiscount(OFFERS[1], [upsell]));
  }
  if (rng.chance(0.15)) order.vouchers.push(voucherDiscount(order, rng.pick(VOUCHERS)));
  const subtotal = order.lines.reduce((sum, l) => sum + l.unitPrice * l.quantity, 0);
  // Free shipping from 50 US dollars' worth of goods.
  const freeShipping = convertMinor(subtotal, order.currency, 'USD') >= 5_000;
  setShipping(order, rng.chance(0.1) ? 'express' : freeShipping ? 'free' : 'standard');
  finishOrder(order, ids);
  if (linesOnly) return order;
  const profile = drawPaymentProfile(rng, false);
  const outcome = drawOneOffOutcome(rng);
  if (outcome === 'pending') {
    order.paymentStatus = 'pending';
  } else {
    pay(order, rng, ids, profile, {
      method: profile.method === 'bankcard' ? 'card_token' : profile.method,
      failedAtMs: outcome === 'failed' ? placedMs : null,
      paidAtMs: outcome === 'failed' ? null : placedMs,
      partial: outcome === 'partial',
    });
  }
  return order;
}

interface PayPlan {
  method: string;
  failedAtMs: number | null;
  paidAtMs: number | null;
  partial?: boolean;
}

/** Payment history: an optional failed attempt, then a sale (or authorization + capture). */
function pay(order: OrderState, rng: Rng, ids: IdSource, profile: PaymentProfile, plan: PayPlan): void {
  const total = totalsOf(order).totalIncl;
  const details = transactionPaymentDetails(profile, rng);
  const base = { currency: order.currency, paymentMethod: plan.method, details, isTest: order.isTest };
  if (plan.failedAtMs !== null) {
    order.transactions.push(
      makeTransaction({
        ...base,
        id: ids.transaction(),
        amount: total,
        atMs: plan.failedAtMs,
        type: 'sale',
        status: 'failed',
        isInitialRetry: true,
      }),
    );
    order.paymentStatus = 'failed';
  }
  if (plan.paidAtMs === null) {
    order.status = 'canceled';
    return;
  }
  const amount = plan.partial ? Math.round(total / 2) : total;
  const disputed = rng.chance(0.01);
  if (rng.chance(0.1)) {
    const auth = makeTransaction({
      ...base,
      id: ids.transaction(),
      amount,
      atMs: plan.paidAtMs,
      type: 'authorization',
      status: 'success',
    });
    order.transactions.push(
      auth,
      makeTransaction({
        ...base,
        id: ids.transaction(),
        amount,
        atMs: plan.paidAtMs + 3_600_000,
        type: 'capture',
        status: 'success',
        parentId: auth.id,
        isDisputed: disputed,
      }),
    );
  } else {
    order.transactions.push(
      makeTransaction({
        ...base,
        id: ids.transaction(),
        amount,
        atMs: plan.paidAtMs,
        type: 'sale',
        status: 'success',
        isDisputed: disputed,
      }),
    );
  }
  order.paid = amount;
  order.paymentStatus = plan.partial ? 'partially_paid' : 'paid';
}

/** Shipping, delivery and refunds up to the anchor, for orders that were paid. */
function settle(world: OrderWorld, order: OrderState, rng: Rng, ids: IdSource): void {
  const age = world.anchorMs - order.placedMs;
  const shippable = order.lines.filter((l) => l.source.requiresShipping);
  if (shippable.length === 0) {
    order.fulfillmentStatus = 'not_required';
  } else if (order.paymentStatus !== 'paid' && order.paymentStatus !== 'partially_paid') {
    order.fulfillmentStatus = 'unfulfilled';
  } else if (OPEN_FULFILLMENT[world.fulfillmentOrderStatus.get(order.index) ?? ''] !== undefined) {
    order.fulfillmentStatus = OPEN_FULFILLMENT[world.fulfillmentOrderStatus.get(order.index)!]!;
  } else if (!world.fulfillmentOrderStatus.has(order.index) && (age <= 2 * DAY_MS || rng.chance(0.04))) {
    order.fulfillmentStatus =
      age <= 2 * DAY_MS
        ? rng.pick(['unfulfilled', 'unfulfilled', 'processing', 'on_hold'])
        : rng.pick(['on_hold', 'rejected']);
  } else {
    const stocked = shippable[0]!.source.variant.stockrecords?.[0]?.location_id ?? 1;
    const location = world.seededLocations[stocked - 1] ?? world.seededLocations[0]!;
    const split = shippable.length > 1 && rng.chance(0.15);
    const groups = split ? [shippable.slice(0, 1), shippable.slice(1)] : [shippable];
    const foIncomplete = world.fulfillmentOrderStatus.get(order.index) === 'incomplete';
    const incomplete = foIncomplete || rng.chance(0.02);
    groups.forEach((lines, g) => {
      if (incomplete && g > 0) return;
      const carrier = carrierFor(order.shipping?.country, rng);
      addFulfillment({
        order,
        ids,
        items: lines.map((line) => ({ line, quantity: line.quantity })),
        location,
        // Shipped a day or two after the order, but never after the end of the seeded history.
        createdMs: Math.max(
          order.placedMs + 60_000,
          Math.min(order.placedMs + (g + 1) * DAY_MS, world.anchorMs - 3_600_000),
        ),
        carrier,
        trackingCode: `${carrier.slice(0, 2).toUpperCase()}${rng.digits(12)}`,
        progressUntilMs: world.anchorMs,
      });
    });
    order.fulfillmentStatus =
      foIncomplete || (incomplete && groups.length > 1) ? 'incomplete' : fulfillmentStatusOf(order);
    if (age > 10 * DAY_MS && rng.chance(0.06)) refundSome(order, rng, ids, location.id);
    if (age > 60 * DAY_MS && order.fulfillmentStatus === 'fulfilled') order.status = 'archived';
  }
  const refundTimes = order.refunds.map((r) => Date.parse(r.created_at!));
  order.updatedMs = Math.max(order.placedMs, ...order.fulfillments.map((f) => f.createdMs), ...refundTimes);
}

function refundSome(order: OrderState, rng: Rng, ids: IdSource, locationId: number): void {
  const sale = order.transactions.find(
    (t) => (t.type === 'sale' || t.type === 'capture') && t.status === 'success',
  );
  const full = rng.chance(0.4);
  const items = full
    ? order.lines.map((line) => ({ line, quantity: line.quantity }))
    : [{ line: rng.pick(order.lines), quantity: 1 }];
  addRefund(order, ids, items, {
    atMs: order.placedMs + rng.int(5, 9) * DAY_MS,
    refundShipping: full,
    parentId: sale?.id ?? null,
    note: full ? 'Customer returned the order' : 'Item arrived damaged',
    locationId,
  });
}
