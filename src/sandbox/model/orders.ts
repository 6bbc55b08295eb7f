import type {
  BillingAddress,
  Fulfillment,
  FulfillmentEvent,
  Order2023,
  Order2024,
  OrderCreate2023Request,
  OrderCreate2024Request,
  OrderFulfillmentCreateRequest,
  OrderPatchRequest,
  Product,
  ShippingAddress,
  Subscription,
} from '../../../schemas/index.js';
import { EMPTY_ATTRIBUTION } from './attribution.js';
import type { Customer } from './customers.js';
import { addFulfillment, fulfillmentStatusOf } from './fulfillments.js';
import { asBilling, readAddress, readAttribution, readCode, readUser } from './inputs.js';
import type { LocationBook } from './locations.js';
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
import { renderFulfillment, renderOrder2023, renderOrder2024 } from './order-render.js';
import {
  createdIds,
  type IdSource,
  type LineState,
  newLine,
  type OrderState,
  taxAt,
  totalsOf,
} from './order-state.js';
import { makeTransaction, transactionPaymentDetails } from './payments.js';
import { rngFor } from './random.js';
import type { IdCounter } from './scale.js';
import { generateSeededOrder, type OrderWorld, seededOrderCount } from './seed-orders.js';
import { ORDER_NUMBER_BASE, orderNumberOf, type SubscriptionFacts } from './seed-subscriptions.js';
import { SandboxRuleError } from './types.js';

/** Someone who ordered before: reused when a new order names the same email. */
type Shopper = Pick<Customer, 'user'> & { billing: BillingAddress | null; shipping: ShippingAddress | null };

type CreateBody = (OrderCreate2024Request | OrderCreate2023Request) & { currency?: string };

const notFound = (number: string) => new SandboxRuleError(404, 'not_found', `order ${number} does not exist`);

/**
 * Orders: seeded ones are generated on demand from their number; an order that is created or changed is
 * kept here from then on. Operations follow spec part 3 (mark-as-paid refused on a fully paid order,
 * PATCH sets fulfillment_status and status directly).
 */
export class OrderDesk {
  private readonly kept = new Map<string, OrderState>();
  private created = 0;
  readonly ids: IdSource;
  private byEmail: Map<string, Shopper> | null = null;
  /** Called for every order created through the API or a mutation (fulfillment orders hook in here). */
  onCreated: (order: OrderState) => void = () => {};

  constructor(
    private readonly world: OrderWorld,
    private readonly locations: LocationBook,
    private readonly liveProducts: () => readonly Product[],
    private readonly userIds: IdCounter,
    private readonly now: () => number,
  ) {
    this.ids = createdIds(seededOrderCount(world));
  }

  get count(): number {
    return seededOrderCount(this.world) + this.created;
  }

  /** Reads an order without keeping it (seeded ones are regenerated each time). */
  find(number: string): OrderState | undefined {
    const kept = this.kept.get(number);
    if (kept) return kept;
    const index = Number(number) - ORDER_NUMBER_BASE;
    if (orderNumberOf(index) !== number) return undefined;
    return generateSeededOrder(this.world, index);
  }

  /** An order about to change: from here on it is kept, so the change persists. */
  forWrite(number: string): OrderState {
    const order = this.find(number);
    if (!order) throw notFound(number);
    this.kept.set(number, order);
    return order;
  }

  create2024(body: OrderCreate2024Request): Order2024 {
    return renderOrder2024(this.create(body, body.currency ?? 'USD', false));
  }

  create2023(body: OrderCreate2023Request): Order2023 {
    return renderOrder2023(this.create(body, 'USD', true));
  }

  private customerByEmail(email: string): Shopper | undefined {
    if (!this.byEmail) {
      this.byEmail = new Map(this.world.customers.map((c) => [c.user.email!.toLowerCase(), c]));
    }
    return this.byEmail.get(email.toLowerCase());
  }

  /** Builds a new order from a request body; `pickMissingProducts` is the 2023 rule for lines without product_id. */
  create(body: CreateBody, currency: string, pickMissingProducts: boolean): OrderState {
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
    const known = userInput?.email ? this.customerByEmail(userInput.email) : undefined;
    if (!this.byEmail) this.customerByEmail('');
    const user = known
      ? { ...known.user, ...userInput }
      : {
          accepts_marketing: false,
          email: null,
          first_name: null,
          last_name: null,
          phone_number: null,
          ...userInput,
          id: this.userIds.next(),
        };
    const addressId = (user.id ?? 0) * 2;
    let shipping = readAddress(body.shipping_address, 'shipping_address', addressId);
    if (!shipping && body.use_default_shipping_address && known) shipping = known.shipping;
    let billing = asBilling(readAddress(body.billing_address, 'billing_address', addressId - 1));
    if (body.billing_same_as_shipping_address)
      billing = asBilling(shipping && { ...shipping, id: addressId - 1 });
    else if (!billing && body.use_default_billing_address && known) billing = known.billing;
    if (!known && user.email) this.byEmail!.set(user.email.toLowerCase(), { user, billing, shipping });
    const index = seededOrderCount(this.world) + this.created;
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
    this.created++;
    this.kept.set(order.number, order);
    this.onCreated(order);
    return order;
  }

  /** A subscription's order placed now: the first order of a new subscription, or a recovered renewal. */
  createSubscriptionOrder(sub: Subscription, facts: SubscriptionFacts, billingCycle: number): OrderState {
    const nowMs = this.now();
    const index = seededOrderCount(this.world) + this.created;
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
    this.created++;
    this.kept.set(order.number, order);
    this.onCreated(order);
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

  update(number: string, body: OrderPatchRequest): Order2024 {
    const order = this.forWrite(number);
    if (body.attribution !== undefined) {
      order.attribution =
        readAttribution(body.attribution, 'attribution', order.attribution) ?? order.attribution;
    }
    if (body.shipping_address !== undefined) {
      order.shipping = readAddress(
        body.shipping_address,
        'shipping_address',
        order.shipping?.id ?? (order.user.id ?? 0) * 2,
      );
    }
    if (body.billing_address !== undefined) {
      const id = order.billing?.id ?? (order.user.id ?? 0) * 2 - 1;
      order.billing = asBilling(readAddress(body.billing_address, 'billing_address', id));
    }
    if (body.fulfillment_status !== undefined) order.fulfillmentStatus = body.fulfillment_status;
    if (body.status !== undefined) order.status = body.status;
    if (body.metadata !== undefined) order.metadata = body.metadata ?? {};
    if (body.tags !== undefined) order.tags = [...body.tags];
    order.updatedMs = Math.max(this.now(), order.updatedMs);
    return renderOrder2024(order);
  }

  markPaid(number: string, body: { external_payment_method?: string | null }): Order2023 {
    const order = this.find(number);
    if (!order) throw notFound(number);
    const { outstanding } = totalsOf(order);
    if (outstanding === 0) {
      throw new SandboxRuleError(
        409,
        'order_already_paid',
        `order ${number} is already fully paid (payment_status "${order.paymentStatus}"); nothing is outstanding`,
      );
    }
    const kept = this.forWrite(number);
    const nowMs = this.now();
    kept.transactions.push(
      makeTransaction({
        id: this.ids.transaction(),
        amount: outstanding,
        currency: kept.currency,
        atMs: nowMs,
        type: 'sale',
        status: 'success',
        paymentMethod: body.external_payment_method ?? 'external',
        details: null,
        isExternal: true,
        isTest: kept.isTest,
      }),
    );
    kept.paid += outstanding;
    kept.paymentStatus = 'paid';
    kept.updatedMs = Math.max(nowMs, kept.updatedMs);
    return renderOrder2023(kept);
  }

  createFulfillment(number: string, body: OrderFulfillmentCreateRequest): Fulfillment {
    const order = this.find(number);
    if (!order) throw notFound(number);
    const remaining = (l: LineState) => l.quantity - l.refunded - l.fulfilled;
    let items: { line: LineState; quantity: number }[];
    if (body.lines) {
      items = body.lines.map((wanted, i) => {
        const line = order.lines.find((l) => l.id === wanted.id);
        if (!line) {
          throw new SandboxRuleError(
            422,
            'unknown_line',
            `order ${number} has no line ${wanted.id}`,
            `lines.${i}.id`,
          );
        }
        const quantity = wanted.quantity ?? remaining(line);
        if (quantity < 1 || quantity > remaining(line)) {
          const why = `line ${line.id} has ${remaining(line)} left to fulfill; cannot fulfill ${quantity}`;
          throw new SandboxRuleError(422, 'quantity_exceeds_remaining', why, `lines.${i}.quantity`);
        }
        return { line, quantity };
      });
    } else {
      items = order.lines
        .filter((l) => l.source.requiresShipping && remaining(l) > 0)
        .map((line) => ({ line, quantity: remaining(line) }));
    }
    if (items.length === 0) {
      throw new SandboxRuleError(
        409,
        'nothing_to_fulfill',
        `order ${number} has no quantities left to fulfill`,
      );
    }
    const kept = this.forWrite(number);
    const nowMs = this.now();
    const stocked = items[0]!.line.source.variant.stockrecords?.map((s) => s.location_id) ?? [];
    const location =
      stocked.map((id) => this.locations.current(id ?? 0)).find(Boolean) ?? this.locations.items[0];
    if (!location)
      throw new SandboxRuleError(409, 'no_location', 'the store has no fulfillment location to ship from');
    const carrier = body.carrier ?? 'other';
    const f = addFulfillment({
      order: kept,
      ids: this.ids,
      items,
      location,
      createdMs: nowMs,
      carrier,
      trackingCode: body.tracking_code ?? `SB${kept.number}${kept.fulfillments.length + 1}`,
      ...(body.tracking_link ? { trackingLink: body.tracking_link } : {}),
    });
    kept.fulfillmentStatus = fulfillmentStatusOf(kept);
    kept.updatedMs = Math.max(nowMs, kept.updatedMs);
    return renderFulfillment(f, kept);
  }

  /** Adds a shipment made by a fulfillment order (the FO desk calls this). */
  shipFromFulfillmentOrder(
    number: string,
    items: { lineId: number; quantity: number }[],
    locationId: number,
    tracking: { carrier: string; code: string; link?: string },
  ): Fulfillment {
    const kept = this.forWrite(number);
    const nowMs = this.now();
    const location = this.locations.known(locationId) ?? this.locations.items[0]!;
    const chosen = items.flatMap(({ lineId, quantity }) => {
      const line = kept.lines.find((l) => l.id === lineId);
      const left = line ? line.quantity - line.refunded - line.fulfilled : 0;
      return line && left > 0 ? [{ line, quantity: Math.min(quantity, left) }] : [];
    });
    const f = addFulfillment({
      order: kept,
      ids: this.ids,
      items: chosen,
      location,
      createdMs: nowMs,
      carrier: tracking.carrier,
      trackingCode: tracking.code,
      ...(tracking.link ? { trackingLink: tracking.link } : {}),
    });
    kept.fulfillmentStatus = fulfillmentStatusOf(kept);
    kept.updatedMs = Math.max(nowMs, kept.updatedMs);
    return renderFulfillment(f, kept);
  }

  event(number: string, fulfillmentId: number, eventId: string): FulfillmentEvent {
    const order = this.find(number);
    if (!order) throw notFound(number);
    const f = order.fulfillments.find((x) => x.id === fulfillmentId);
    if (!f)
      throw new SandboxRuleError(404, 'not_found', `order ${number} has no fulfillment ${fulfillmentId}`);
    const found = /^\d+$/.test(eventId) ? f.events.find((e) => e.id === Number(eventId)) : undefined;
    if (!found)
      throw new SandboxRuleError(404, 'not_found', `fulfillment ${fulfillmentId} has no event ${eventId}`);
    return found;
  }
}
