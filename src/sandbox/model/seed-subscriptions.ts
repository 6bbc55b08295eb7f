import type { Subscription, SubscriptionLine } from '../../../schemas/index.js';
import type { Catalogue, LineSource } from './catalogue.js';
import type { Customer } from './customers.js';
import { formatMinor, storePrice } from './money.js';
import {
  type CardType,
  drawPaymentProfile,
  type PaymentProfile,
  subscriptionPaymentDetails,
} from './payments.js';
import { type Rng, rngFor, weighted } from './random.js';
import { addInterval, DAY_MS, dayNumber, HISTORY_MS, type Interval, iso, wholeSeconds } from './time.js';
import { CANCEL_OTHER_MESSAGES, CANCEL_REASONS } from './vocab.js';

export const ORDER_NUMBER_BASE = 100_001;
export const orderNumberOf = (index: number) => String(ORDER_NUMBER_BASE + index);

/** What the subscriptions list filters on beyond the public record, plus what lazily built renewals need. */
export interface SubscriptionFacts {
  createdMs: number;
  createdDay: number;
  nextRenewalDay: number | null;
  cancelDay: number | null;
  recoveryDay: number | null;
  recoverySource: string | null;
  profile: PaymentProfile;
  cardType: CardType | null;
  customer: Customer;
  intervalUnit: Interval;
  /** Seeded renewal orders are order indexes firstOrder … firstOrder + orderCount − 1. */
  firstOrder: number;
  orderCount: number;
  /** Orders created later (recoveries, API) by number. */
  extraOrders: readonly string[];
  /** Line sources in the subscription currency, for renewal orders. */
  sources: LineSource[];
  /** Index in the order sequence of the renewal that was recovered, if any. */
  recoveredCycle: number | null;
  search?: string;
  address?: string;
}

/** The `orders` array of a subscription whose renewals are seeded orders first … first + count − 1. */
export function renewalList(first: number, count: number): { billing_cycle: number; order_number: string }[] {
  const orders = new Array(count);
  for (let k = 0; k < count; k++)
    orders[k] = { billing_cycle: k + 1, order_number: orderNumberOf(first + k) };
  return orders;
}

export interface SeededSubscription {
  subscription: Subscription;
  facts: SubscriptionFacts;
}

export type SubscriptionStatus = 'active' | 'past_due' | 'canceled' | 'retrying';
const drawStatus = weighted<SubscriptionStatus>([
  ['active', 55],
  ['canceled', 30],
  ['past_due', 8],
  ['retrying', 7],
]);
export const drawRecoverySource = weighted<string>([
  ['retries', 35],
  ['email_automation', 25],
  ['account_updater', 15],
  ['storefront', 10],
  ['dashboard', 10],
  ['other', 5],
]);
const drawShipping = weighted<['standard' | 'free' | 'express', number]>([
  [['standard', 499], 60],
  [['free', 0], 30],
  [['express', 1499], 10],
]);
export const drawCancelReason = (rng: Rng) => {
  const reason = rng.pick(CANCEL_REASONS);
  return { reason, message: reason === 'other' ? rng.pick(CANCEL_OTHER_MESSAGES) : '' };
};

/** When renewal `k` of a subscription falls (k = 0 is its creation). */
export const renewalAt = (createdMs: number, unit: Interval, every: number, k: number) =>
  addInterval(createdMs, unit, k * every);

export interface SubscriptionDraftContext {
  catalogue: Catalogue;
  subscribable: readonly number[];
  customers: readonly Customer[];
  attributions: readonly Subscription['attribution'][];
  anchorMs: number;
  nextLineId: () => number;
}

const frequencies = new Map<string, string>();
export function frequencyText(interval: Interval, count: number): string {
  const key = `${interval}${count}`;
  let text = frequencies.get(key);
  if (text === undefined) {
    text = count === 1 ? `every ${interval}` : `every ${count} ${interval}s`;
    frequencies.set(key, text);
  }
  return text;
}

/** Subscription lines carry no metadata in the seeded store; one frozen object serves them all. */
const NO_METADATA = Object.freeze({}) as Record<string, unknown>;

/** Lines, currency, customer and payment of a new subscription: shared by seeding and mutations. */
export function draftSubscriptionBasics(rng: Rng, ctx: SubscriptionDraftContext, createdMs: number) {
  const customer = rng.pick(ctx.customers);
  const currency = customer.region.currency;
  const lineCount = rng.chance(0.7) ? 1 : rng.chance(0.75) ? 2 : 3;
  const sources: LineSource[] = [];
  const lines: SubscriptionLine[] = [];
  let subtotal = 0;
  for (let i = 0; i < lineCount; i++) {
    const seeded = ctx.catalogue.seeded[rng.pick(ctx.subscribable) - 1]!;
    const variant = rng.pick(seeded.product.variants!);
    const source = ctx.catalogue.lineSource(seeded.product, variant, currency, false);
    const quantity = rng.chance(0.8) ? 1 : rng.int(2, 3);
    sources.push(source);
    subtotal += source.subscription * quantity;
    lines.push({
      id: ctx.nextLineId(),
      metadata: NO_METADATA,
      price: formatMinor(source.subscription, currency),
      product: source.embedProduct,
      quantity,
      stockrecord: source.embedStockrecord,
    });
  }
  const first = sources[0]!.product;
  const intervalUnit = (first.interval === 'week' ? 'week' : 'month') as Interval;
  const intervalCount = rng.pick(first.interval_counts?.length ? first.interval_counts : [1]);
  const [shippingCode, shippingUsd] = drawShipping(rng);
  const shipping = shippingUsd === 0 ? 0 : storePrice(shippingUsd, currency);
  const startedInFirstYear = createdMs < ctx.anchorMs - HISTORY_MS / 2;
  const profile = drawPaymentProfile(rng, startedInFirstYear);
  return {
    customer,
    currency,
    sources,
    lines,
    intervalUnit,
    intervalCount,
    shippingCode,
    shippingPrice: formatMinor(shipping, currency),
    total: formatMinor(subtotal + shipping, currency),
    profile,
    attribution: rng.pick(ctx.attributions),
  };
}

/**
 * Seeds the subscriptions: ids 1..count in order of creation, spread over two years with more of them
 * recently (a growing store). Each one's history (renewals, a failure, a cancellation, a recovery) is
 * simulated up to the anchor; renewal orders are only numbered here and built lazily on request.
 */
export function seedSubscriptions(
  seed: number,
  count: number,
  ctx: SubscriptionDraftContext,
): SeededSubscription[] {
  const rng = rngFor(seed, 'subscriptions');
  const start = ctx.anchorMs - HISTORY_MS;
  const out: SeededSubscription[] = new Array(count);
  let nextOrder = 0;
  for (let i = 0; i < count; i++) {
    const id = i + 1;
    const createdMs = wholeSeconds(start + HISTORY_MS * Math.sqrt((i + rng.next()) / count));
    const basics = draftSubscriptionBasics(rng, ctx, createdMs);
    const { intervalUnit: unit, intervalCount: every } = basics;
    let status = drawStatus(rng);
    let cycles = 1;
    while (renewalAt(createdMs, unit, every, cycles) < ctx.anchorMs) cycles++;
    // A failing subscription needs a renewal to have failed; a brand-new one is simply active.
    if ((status === 'past_due' || status === 'retrying') && cycles < 2) status = 'active';
    let cancelMs: number | null = null;
    let orderCount = cycles;
    if (status === 'canceled') {
      cancelMs = wholeSeconds(createdMs + 3_600_000 + rng.next() * (ctx.anchorMs - createdMs - 3_600_000));
      orderCount = 1;
      while (orderCount < cycles && renewalAt(createdMs, unit, every, orderCount) < cancelMs) orderCount++;
    } else if (status !== 'active') {
      orderCount = cycles - 1;
    }
    let recoveredCycle: number | null = null;
    let recoveryMs: number | null = null;
    let recoverySource: string | null = null;
    if (orderCount >= 2 && rng.chance(status === 'active' || status === 'canceled' ? 0.14 : 0.05)) {
      recoveredCycle = rng.int(1, orderCount - 1);
      recoveryMs = wholeSeconds(renewalAt(createdMs, unit, every, recoveredCycle) + rng.int(1, 5) * DAY_MS);
      if (recoveryMs >= (cancelMs ?? ctx.anchorMs))
        recoveryMs = renewalAt(createdMs, unit, every, recoveredCycle) + 3_600_000;
      recoverySource = drawRecoverySource(rng);
    }
    const nextRenewalMs =
      status === 'canceled'
        ? null
        : status === 'active'
          ? renewalAt(createdMs, unit, every, cycles)
          : ctx.anchorMs + rng.int(1, 7) * DAY_MS;
    const cancel = status === 'canceled' ? drawCancelReason(rng) : null;
    const firstOrder = nextOrder;
    const subscription: Subscription = {
      attribution: basics.attribution,
      billing_address: basics.customer.billing,
      cancel_reason: cancel?.reason ?? null,
      cancel_reason_other_message: cancel?.message ?? null,
      currency: basics.currency,
      date_created: iso(createdMs),
      frequency: frequencyText(basics.intervalUnit, basics.intervalCount),
      id,
      interval: basics.intervalUnit,
      interval_count: basics.intervalCount,
      is_tax_known: rng.chance(0.95),
      is_test: rng.chance(0.02),
      lines: basics.lines,
      next_renewal_date: nextRenewalMs === null ? null : iso(nextRenewalMs),
      num_lines: basics.lines.length,
      num_orders: orderCount,
      orders: renewalList(firstOrder, orderCount),
      payment_details: subscriptionPaymentDetails(basics.profile),
      payment_method: basics.profile.method,
      shipping_address: basics.customer.shipping,
      shipping_code: basics.shippingCode,
      shipping_price: basics.shippingPrice,
      status,
      total: basics.total,
      user: basics.customer.user,
    };
    out[i] = {
      subscription,
      facts: {
        createdMs,
        createdDay: dayNumber(createdMs),
        nextRenewalDay: nextRenewalMs === null ? null : dayNumber(nextRenewalMs),
        cancelDay: cancelMs === null ? null : dayNumber(cancelMs),
        recoveryDay: recoveryMs === null ? null : dayNumber(recoveryMs),
        recoverySource,
        profile: basics.profile,
        cardType: basics.profile.cardType,
        customer: basics.customer,
        intervalUnit: basics.intervalUnit,
        firstOrder: nextOrder,
        orderCount,
        extraOrders: [],
        sources: basics.sources,
        recoveredCycle,
      },
    };
    nextOrder += orderCount;
  }
  return out;
}
