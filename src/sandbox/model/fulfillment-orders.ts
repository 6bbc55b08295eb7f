import type {
  AssignedFulfillmentOrdersQuery,
  Fulfillment,
  FulfillmentOrder,
  FulfillmentOrderFulfillRequest,
  FulfillmentOrderLineItem,
  FulfillmentOrderMove,
  FulfillmentOrderMoveRequest,
} from '../../../schemas/index.js';
import { allOf, dayRange, type Test } from './filters.js';
import {
  FULFILLABLE,
  type FulfillmentOrderFacts,
  MOVABLE,
  makeFulfillmentOrder,
  supportedActions,
} from './fulfillment-order-records.js';
import type { LocationBook } from './locations.js';
import type { OrderState } from './order-state.js';
import type { OrderDesk } from './orders.js';
import type { IdCounter } from './scale.js';
import { indexOfId } from './sorted.js';
import { dayNumber } from './time.js';
import { type ListView, SandboxRuleError } from './types.js';

type Row = { fo: FulfillmentOrder; f: FulfillmentOrderFacts };
type ItemRequest = { id: number; quantity: number }[] | undefined;

const remainingOf = (item: FulfillmentOrderLineItem) => Number(item.fulfillable_quantity ?? 0);
const notFound = (id: number) =>
  new SandboxRuleError(404, 'not_found', `fulfillment order ${id} does not exist`);

/**
 * Fulfillment orders in id order with their hidden facts. Changes publish new records (same id); a move
 * creates a new fulfillment order for what moved, so it shows up in date-windowed syncs.
 */
export class FulfillmentOrderDesk {
  readonly items: FulfillmentOrder[] = [];
  /** Facts by id − 1 (ids are dense and never reused). */
  private readonly facts: FulfillmentOrderFacts[] = [];

  constructor(
    seeded: { record: FulfillmentOrder; facts: FulfillmentOrderFacts }[],
    private readonly ids: IdCounter,
    private readonly lineItemIds: IdCounter,
    private readonly locations: LocationBook,
    private readonly orders: OrderDesk,
    private readonly now: () => number,
  ) {
    for (const { record, facts } of seeded) this.add(record, facts);
  }

  private add(record: FulfillmentOrder, facts: FulfillmentOrderFacts): void {
    this.facts[record.id - 1] = facts;
    this.items.push(record);
  }

  private position(id: number): number {
    return indexOfId(this.items, id);
  }

  get(id: number): FulfillmentOrder {
    const at = this.position(id);
    if (at < 0) throw notFound(id);
    return this.items[at]!;
  }

  factsOf(record: FulfillmentOrder): FulfillmentOrderFacts {
    return this.facts[record.id - 1]!;
  }

  private replace(next: FulfillmentOrder, facts: FulfillmentOrderFacts): void {
    this.facts[next.id - 1] = facts;
    this.items[this.position(next.id)] = next;
  }

  list(query: AssignedFulfillmentOrdersQuery): ListView<FulfillmentOrder> {
    const locationIds = query.location_id
      ?.split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const tests: (Test<Row> | null)[] = [
      locationIds?.length ? (r) => locationIds.includes(String(r.f.locationId)) : null,
      query.assignment_status ? (r) => r.f.assignmentStatus === query.assignment_status : null,
      dayRange(query.date_created_from, query.date_created_to, (r: Row) => r.f.createdDay),
    ];
    const test = allOf(tests);
    return {
      items: this.items,
      matches: (fo) => {
        const f = this.facts[fo.id - 1];
        return f !== undefined && test({ fo, f });
      },
    };
  }

  /** A new fulfillment order for an order's shippable lines at the location that stocks them. */
  createForOrder(order: OrderState): FulfillmentOrder | null {
    const lines = order.lines.filter(
      (l) => l.source.requiresShipping && l.quantity - l.fulfilled - l.refunded > 0,
    );
    if (lines.length === 0 || order.status === 'canceled') return null;
    const stocked = lines[0]!.source.variant.stockrecords?.map((s) => s.location_id ?? 0) ?? [];
    const location = stocked.map((id) => this.locations.current(id)).find(Boolean) ?? this.locations.items[0];
    if (!location) return null;
    const { record, facts } = makeFulfillmentOrder({
      id: this.ids.next(),
      order,
      lines: lines.map((line) => ({ line, quantity: line.quantity - line.fulfilled - line.refunded })),
      location,
      createdMs: this.now(),
      status: 'open',
      assignment: 'fulfillment_unrequested',
      nextLineItemId: () => this.lineItemIds.next(),
    });
    this.add(record, facts);
    return record;
  }

  /** Resolves requested line items (all with something left when none are named) against a record. */
  private pick(fo: FulfillmentOrder, wanted: ItemRequest, verb: string) {
    const items = fo.line_items ?? [];
    const chosen = wanted
      ? wanted.map((w, i) => {
          const item = items.find((x) => x.id === w.id);
          const field = `fulfillment_order_line_items.${i}`;
          if (!item) {
            throw new SandboxRuleError(
              422,
              'unknown_line_item',
              `fulfillment order ${fo.id} has no line item ${w.id}`,
              `${field}.id`,
            );
          }
          if (w.quantity > remainingOf(item)) {
            const why = `line item ${w.id} has ${remainingOf(item)} left; cannot ${verb} ${w.quantity}`;
            throw new SandboxRuleError(422, 'quantity_exceeds_remaining', why, `${field}.quantity`);
          }
          return { item, quantity: w.quantity };
        })
      : items.filter((x) => remainingOf(x) > 0).map((item) => ({ item, quantity: remainingOf(item) }));
    if (chosen.length === 0) {
      throw new SandboxRuleError(
        409,
        'nothing_left',
        `fulfillment order ${fo.id} has no quantities left to ${verb}`,
      );
    }
    return chosen;
  }

  /** The record after taking `taken` quantities out; it closes when nothing is left. */
  private reduced(fo: FulfillmentOrder, taken: Map<number, number>, busyStatus: string): FulfillmentOrder {
    const lineItems = (fo.line_items ?? []).map((item) => {
      const take = taken.get(item.id) ?? 0;
      return take === 0 ? item : { ...item, fulfillable_quantity: String(remainingOf(item) - take) };
    });
    const done = lineItems.every((item) => remainingOf(item) === 0);
    const status = done ? 'closed' : busyStatus;
    return {
      ...fo,
      line_items: lineItems,
      status,
      request_status: done ? 'closed' : fo.request_status,
      supported_actions: supportedActions(status),
    };
  }

  move(id: number, body: FulfillmentOrderMoveRequest): FulfillmentOrderMove {
    const fo = this.get(id);
    if (!MOVABLE.has(fo.status ?? '')) {
      throw new SandboxRuleError(
        409,
        'not_movable',
        `fulfillment order ${id} is ${fo.status}; only open, scheduled or on-hold ones can be moved`,
      );
    }
    const target = this.locations.current(body.new_location_id);
    if (!target) {
      throw new SandboxRuleError(
        422,
        'unknown_location',
        `location ${body.new_location_id} does not exist`,
        'new_location_id',
      );
    }
    const facts = this.factsOf(fo);
    if (target.id === facts.locationId) {
      throw new SandboxRuleError(
        422,
        'same_location',
        `fulfillment order ${id} is already at location ${target.id}`,
        'new_location_id',
      );
    }
    const chosen = this.pick(fo, body.fulfillment_order_line_items, 'move');
    const movedId = this.ids.next();
    const nowMs = this.now();
    const moved: FulfillmentOrder = {
      ...fo,
      assigned_location: target,
      fulfillment_holds: [],
      id: movedId,
      line_items: chosen.map(({ item, quantity }) => ({
        ...item,
        id: this.lineItemIds.next(),
        fulfillment_order_id: movedId,
        quantity,
        fulfillable_quantity: String(quantity),
      })),
      merchant_requests: [],
      request_status: 'unsubmitted',
      status: 'open',
      supported_actions: supportedActions('open'),
    };
    this.add(moved, {
      assignmentStatus: 'fulfillment_unrequested',
      createdMs: nowMs,
      createdDay: dayNumber(nowMs),
      locationId: target.id,
    });
    const original = this.reduced(
      fo,
      new Map(chosen.map(({ item, quantity }) => [item.id, quantity])),
      fo.status ?? 'open',
    );
    this.replace(original, facts);
    return { moved_fulfillment_order: moved, original_fulfillment_order: original };
  }

  close(id: number, body: { message?: string }): FulfillmentOrder {
    const fo = this.get(id);
    if (fo.status !== 'processing') {
      throw new SandboxRuleError(
        409,
        'not_processing',
        `fulfillment order ${id} is ${fo.status}; only a processing fulfillment order can be closed`,
      );
    }
    const requests = [...(fo.merchant_requests ?? [])];
    if (body.message) requests.push({ message: body.message, notify: false, type: 'close' });
    const next: FulfillmentOrder = {
      ...fo,
      status: 'incomplete',
      merchant_requests: requests,
      supported_actions: supportedActions('incomplete'),
    };
    this.replace(next, this.factsOf(fo));
    return next;
  }

  fulfill(id: number, body: FulfillmentOrderFulfillRequest): Fulfillment {
    const fo = this.get(id);
    if (!FULFILLABLE.has(fo.status ?? '')) {
      throw new SandboxRuleError(
        409,
        'not_fulfillable',
        `fulfillment order ${id} is ${fo.status}; it cannot be fulfilled`,
      );
    }
    const chosen = this.pick(fo, body.fulfillment_order_line_items, 'fulfill');
    const tracking = (body.tracking_info?.[0] ?? {}) as Record<string, unknown>;
    const text = (key: string) => (typeof tracking[key] === 'string' ? (tracking[key] as string) : undefined);
    const facts = this.factsOf(fo);
    const fulfillment = this.orders.shipFromFulfillmentOrder(
      fo.order_number!,
      chosen.map(({ item, quantity }) => ({ lineId: item.order_line_id!, quantity })),
      facts.locationId,
      {
        carrier: text('company') ?? 'other',
        code: text('number') ?? `FO${id}-${this.now()}`,
        link: text('url'),
      },
    );
    this.replace(
      this.reduced(fo, new Map(chosen.map(({ item, quantity }) => [item.id, quantity])), 'in_progress'),
      facts,
    );
    return fulfillment;
  }
}
