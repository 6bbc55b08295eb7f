import type {
  BillingAddress,
  OrderCreate2023Request,
  OrderCreate2024Request,
  Product,
  ShippingAddress,
  Subscription,
  User,
} from '../../../schemas/index.js';
import { EMPTY_ATTRIBUTION } from './attribution.js';
import type { Customer } from './customers.js';
import { fulfillmentStatusOf } from './fulfillments.js';
import { asBilling, readAddress, readAttribution, readCode, readUser } from './inputs.js';
import { CURRENCIES, parseMinor } from './money.js';
import {
  blankOrder,
  finishOrder,
  OFFERS,
  offerDiscount,
  setShipping,
  VOUCHERS,
  voucherDiscount,
} from './order-build.js';
import { type IdSource, newLine, type OrderState, taxAt, totalsOf } from './order-state.js';
import { makeTransaction, transactionPaymentDetails } from './payments.js';
import { rngFor } from './random.js';
import type { IdCounter } from './scale.js';
import type { OrderWorld } from './seed-orders.js';
import { orderNumberOf, type SubscriptionFacts } from './seed-subscriptions.js';
import { SandboxRuleError } from './types.js';

/** Someone who ordered before: reused when a new order names the same email. */
type Shopper = Pick<Customer, 'user'> & { billing: BillingAddress | null; shipping: ShippingAddress | null };

export type CreateBody = (OrderCreate2024Request | OrderCreate2023Request) & { currency?: string };

/**
 * Builds new orders: from an order-create request body (both versions), or for a subscription (a new
 * subscription's first order, a recovered renewal). The desk numbers and keeps what this returns.
 */
export class OrderFactory {
  private byEmail: Map<string, Shopper> | null = null;

  constructor(
    private readonly world: OrderWorld,
    private readonly ids: IdSource,
    private readonly liveProducts: () => readonly Product[],
    private readonly userIds: IdCounter,
    private readonly now: () => number,
  ) {}

  private shoppers(): Map<string, Shopper> {
    this.byEmail ??= new Map(this.world.customers.map((c) => [c.user.email!.toLowerCase(), c]));
    return this.byEmail;
  }

  /** Builds a new order from a request body; `pickMissingProducts` is the 2023 rule for lines without product_id. */
  fromRequest(index: number, body: CreateBody, currency: string, pickMissingProducts: boolean): OrderState {
    if (!CURRENCIES[currency]) {
      throw new SandboxRuleError(
        400,
        'invalid',
        `currency must be one of ${Object.keys(CURRENCIES).join(', ')}`,
        'currency',
      );
    }
    const nowMs = this.now();
    const userInput = readUser(body.user, 'user');
    const known = userInput?.email ? this.shoppers().get(userInput.email.toLowerCase()) : undefined;
    // A new shopper's id (and address ids) are given only once the whole request has been accepted.
    const user: User = known
      ? { ...known.user, ...userInput }
      : {
          accepts_marketing: false,
          email: null,
          first_name: null,
          last_name: null,
          phone_number: null,
          ...userInput,
          id: null,
        };
    let shipping = readAddress(body.shipping_address, 'shipping_address', known?.shipping?.id ?? 0);
    if (!shipping && body.use_default_shipping_address && known) shipping = known.shipping;
    let billing = asBilling(readAddress(body.billing_address, 'billing_address', known?.billing?.id ?? 0));
    if (body.billing_same_as_shipping_address)
      billing = asBilling(shipping && { ...shipping, id: known?.billing?.id ?? 0 });
    else if (!billing && body.use_default_billing_address && known) billing = known.billing;
    const order = blankOrder({
      index,
      number: orderNumberOf(index),
      currency,
      atMs: nowMs,
      placedMs: body.date_placed ? Date.parse(body.date_placed) : nowMs,
      user,
      billing,
      shipping,
      attribution: readAttribution(body.attribution, 'attribution', EMPTY_ATTRIBUTION) ?? EMPTY_ATTRIBUTION,
      source: 'api',
    });
    order.metadata = body.metadata ?? {};
    order.tags = body.tags ?? [];
    order.status = body.status ?? 'open';
    this.addLines(order, body.lines, pickMissingProducts, nowMs);
    this.addDiscounts(order, body);
    let shippingPrice: number | undefined;
    if (body.shipping_price !== undefined) {
      const parsed = parseMinor(body.shipping_price, currency);
      if (parsed === null || parsed < 0) {
        throw new SandboxRuleError(
          400,
          'invalid',
          'shipping_price must be a non-negative amount',
          'shipping_price',
        );
      }
      shippingPrice = parsed;
    }
    setShipping(order, body.shipping_code ?? 'standard', shippingPrice);
    finishOrder(order, this.ids);
    this.payOnCreate(order, body, nowMs);
    order.fulfillmentStatus = fulfillmentStatusOf(order);
    if (!known) {
      const id = this.userIds.next();
      user.id = id;
      if (shipping) shipping.id = id * 2;
      if (billing) billing.id = id * 2 - 1;
      if (user.email) this.shoppers().set(user.email.toLowerCase(), { user, billing, shipping });
    }
    return order;
  }

  /** A subscription's order placed now: the first order of a new subscription, or a recovered renewal. */
  forSubscription(
    index: number,
    sub: Subscription,
    facts: SubscriptionFacts,
    billingCycle: number,
  ): OrderState {
    const nowMs = this.now();
    const order = blankOrder({
      index,
      number: orderNumberOf(index),
      currency: sub.currency!,
      atMs: nowMs,
      user: facts.customer.user,
      billing: facts.customer.billing,
      shipping: facts.customer.shipping,
      attribution: sub.attribution ?? EMPTY_ATTRIBUTION,
      source: billingCycle === 1 ? 'web' : 'subscription',
    });
    order.isTest = sub.is_test ?? false;
    order.lifecycle = billingCycle === 1 ? 'new_subscription' : 'renewal';
    order.subscriptions = [{ billing_cycle: billingCycle, id: sub.id }];
    order.tags = ['subscription'];
    const tax = taxAt(order.shipping);
    sub.lines!.forEach((line, j) => {
      const source = facts.sources[j]!;
      order.lines.push(newLine(this.ids.line(), source, line.quantity ?? 1, source.subscription, tax, nowMs));
    });
    setShipping(order, sub.shipping_code ?? 'standard');
    finishOrder(order, this.ids);
    const total = totalsOf(order).totalIncl;
    const method = facts.profile.method === 'bankcard' ? 'saved_card' : facts.profile.method;
    const details = transactionPaymentDetails(facts.profile, rngFor(this.world.seed, 'order', index));
    order.transactions.push(
      makeTransaction({
        id: this.ids.transaction(),
        amount: total,
        currency: order.currency,
        atMs: nowMs,
        type: 'sale',
        status: 'success',
        paymentMethod: method,
        details,
        isTest: order.isTest,
      }),
    );
    order.paid = total;
    order.paymentStatus = 'paid';
    order.fulfillmentStatus = fulfillmentStatusOf(order);
    return order;
  }

  private addLines(order: OrderState, lines: CreateBody['lines'], pick: boolean, nowMs: number): void {
    const tax = taxAt(order.shipping ?? order.billing);
    const products = this.liveProducts();
    const fallback = products.filter((p) => p.is_public && !this.world.catalogue.hiddenOf(p).isGiftCard);
    lines.forEach((line, i) => {
      let product: Product | undefined;
      if (line.product_id !== undefined) {
        product = this.world.catalogue.get(line.product_id);
        if (!product) {
          throw new SandboxRuleError(
            400,
            'unknown_product',
            `product ${line.product_id} does not exist`,
            `lines.${i}.product_id`,
          );
        }
      } else if (pick && fallback.length > 0) {
        // 2023 lines may omit product_id: line i gets the i-th public, non-gift-card product (docs/sandbox-data.md).
        product = fallback[i % fallback.length];
      }
      const variant = product?.variants?.[0];
      if (!product || !variant) {
        throw new SandboxRuleError(
          422,
          'no_variant',
          `product for line ${i} has no purchasable variant`,
          `lines.${i}`,
        );
      }
      const isGiftCard = this.world.catalogue.hiddenOf(product).isGiftCard;
      const source = this.world.catalogue.lineSource(product, variant, order.currency, isGiftCard);
      order.lines.push(newLine(this.ids.line(), source, line.quantity, source.price, tax, nowMs));
    });
  }

  private addDiscounts(order: OrderState, body: CreateBody): void {
    (body.vouchers ?? []).forEach((item, i) => {
      const code = readCode(item, 'code', `vouchers.${i}`).toUpperCase();
      const voucher = VOUCHERS.find((v) => v.code === code);
      if (!voucher) {
        throw new SandboxRuleError(
          400,
          'unknown_voucher',
          `voucher ${code} does not exist (try WELCOME10)`,
          `vouchers.${i}`,
        );
      }
      order.vouchers.push(voucherDiscount(order, voucher));
    });
    (body.offers ?? []).forEach((item, i) => {
      const name = readCode(item, 'name', `offers.${i}`);
      const offer = OFFERS.find((o) => o.name.toLowerCase() === name.toLowerCase());
      if (!offer) {
        const names = OFFERS.map((o) => `"${o.name}"`).join(', ');
        throw new SandboxRuleError(
          400,
          'unknown_offer',
          `offer "${name}" does not exist (one of ${names})`,
          `offers.${i}`,
        );
      }
      order.offers.push(offerDiscount(offer, order.lines));
    });
  }

  /** A payment method other than `external` is charged at once; otherwise the order waits for mark-as-paid. */
  private payOnCreate(order: OrderState, body: CreateBody, nowMs: number): void {
    const total = totalsOf(order).totalIncl;
    if (total === 0) {
      order.paymentStatus = 'paid';
      return;
    }
    if (!body.payment_method || body.payment_method === 'external') return;
    const details = (body.payment_details ?? {}) as Record<string, unknown>;
    order.transactions.push(
      makeTransaction({
        id: this.ids.transaction(),
        amount: total,
        currency: order.currency,
        atMs: nowMs,
        type: 'sale',
        status: 'success',
        paymentMethod: body.payment_method,
        details: {
          card_token: typeof details.card_token === 'string' ? details.card_token : null,
          gateway: { id: 1, name: 'Stripe', type: 'stripe' },
        },
      }),
    );
    order.paid = total;
    order.paymentStatus = 'paid';
  }
}
