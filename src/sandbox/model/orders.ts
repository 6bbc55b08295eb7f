import type {
  Fulfillment,
  FulfillmentEvent,
  Order2023,
  Order2024,
  OrderCreate2023Request,
  OrderCreate2024Request,
  OrderFulfillmentCreateRequest,
  OrderPatchRequest,
  Product,
  Subscription,
} from '../../../schemas/index.js';
import { addFulfillment, fulfillmentStatusOf } from './fulfillments.js';
import { asBilling, readAddress, readAttribution } from './inputs.js';
import type { LocationBook } from './locations.js';
import { type CreateBody, OrderFactory } from './order-create.js';
import { renderFulfillment, renderOrder2023, renderOrder2024 } from './order-render.js';
import { createdIds, type IdSource, type LineState, type OrderState, totalsOf } from './order-state.js';
import { makeTransaction } from './payments.js';
import type { IdCounter } from './scale.js';
import { generateSeededOrder, type OrderWorld, seededOrderCount } from './seed-orders.js';
import { ORDER_NUMBER_BASE, orderNumberOf, type SubscriptionFacts } from './seed-subscriptions.js';
import { SandboxRuleError } from './types.js';

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
  private readonly factory: OrderFactory;
  /** Called for every order created through the API or a mutation (fulfillment orders hook in here). */
  onCreated: (order: OrderState) => void = () => {};

  constructor(
    private readonly world: OrderWorld,
    private readonly locations: LocationBook,
    liveProducts: () => readonly Product[],
    userIds: IdCounter,
    private readonly now: () => number,
  ) {
    this.ids = createdIds(seededOrderCount(world));
    this.factory = new OrderFactory(world, this.ids, liveProducts, userIds, now);
  }

  /** Numbers, keeps and announces a newly built order. */
  private register(build: (index: number) => OrderState): OrderState {
    const order = build(seededOrderCount(this.world) + this.created);
    this.created++;
    this.kept.set(order.number, order);
    this.onCreated(order);
    return order;
  }

  create(body: CreateBody, currency: string, pickMissingProducts: boolean): OrderState {
    return this.register((index) => this.factory.fromRequest(index, body, currency, pickMissingProducts));
  }

  createSubscriptionOrder(sub: Subscription, facts: SubscriptionFacts, billingCycle: number): OrderState {
    return this.register((index) => this.factory.forSubscription(index, sub, facts, billingCycle));
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
    return this.keep(order);
  }

  /**
   * Keeps this very object: a seeded order is regenerated on every `find`, so a change must be made to
   * the copy that is kept, never to one read earlier.
   */
  private keep(order: OrderState): OrderState {
    this.kept.set(order.number, order);
    return order;
  }

  create2024(body: OrderCreate2024Request): Order2024 {
    return renderOrder2024(this.create(body, body.currency ?? 'USD', false));
  }

  create2023(body: OrderCreate2023Request): Order2023 {
    return renderOrder2023(this.create(body, 'USD', true));
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
    const kept = this.keep(order);
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
    const kept = this.keep(order);
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
      return line ? [{ line, quantity }] : [];
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
    const f = this.fulfillmentOf(number, fulfillmentId);
    const found = /^\d+$/.test(eventId) ? f.events.find((e) => e.id === Number(eventId)) : undefined;
    if (!found)
      throw new SandboxRuleError(404, 'not_found', `fulfillment ${fulfillmentId} has no event ${eventId}`);
    return found;
  }

  eventIds(number: string, fulfillmentId: number): number[] {
    return this.fulfillmentOf(number, fulfillmentId).events.map((e) => e.id);
  }

  private fulfillmentOf(number: string, fulfillmentId: number) {
    const order = this.find(number);
    if (!order) throw notFound(number);
    const f = order.fulfillments.find((x) => x.id === fulfillmentId);
    if (!f)
      throw new SandboxRuleError(404, 'not_found', `order ${number} has no fulfillment ${fulfillmentId}`);
    return f;
  }
}
