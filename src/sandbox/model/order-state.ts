import type {
  Attribution,
  BillingAddress,
  FulfillmentEvent,
  LocationAddress,
  Refund,
  ShippingAddress,
  Transaction,
  User,
} from '../../../schemas/index.js';
import type { LineSource } from './catalogue.js';
import { allocate, taxOn } from './money.js';
import { REGIONS } from './vocab.js';

/**
 * The sandbox keeps one internal order and renders either API shape from it (2.2), so an order created
 * in one version and read back in the other always agrees. Money is in minor units of `currency`.
 */

export interface TaxInfo {
  id: number;
  title: string;
  rate: number;
  source: string;
}

export interface LineState {
  id: number;
  source: LineSource;
  quantity: number;
  /** Unit price excluding tax, before discounts. */
  unitPrice: number;
  /** Discount on the whole line. */
  discount: number;
  tax: TaxInfo;
  isUpsell: boolean;
  metadata: Record<string, unknown>;
  createdMs: number;
  updatedMs: number;
  fulfilled: number;
  refunded: number;
}

export interface FulfillmentState {
  id: number;
  createdMs: number;
  status: string;
  deliveryStatus: string | null;
  locationId: number;
  originAddress: LocationAddress;
  carrier: string;
  trackingCode: string;
  trackingLink: string;
  shippingMethod: string;
  items: { id: number; line: LineState; quantity: number }[];
  events: FulfillmentEvent[];
}

export interface DiscountState {
  name: string;
  description: string;
  amount: number;
  /** Lines the discount applies to (an upsell offer covers its own line); all discountable lines when absent. */
  lineIds?: number[];
  voucher?: { code: string; name: string; startMs: number; endMs: number };
}

export interface OrderState {
  index: number;
  number: string;
  currency: string;
  createdMs: number;
  placedMs: number;
  updatedMs: number;
  user: User;
  billing: BillingAddress | null;
  shipping: ShippingAddress | null;
  attribution: Attribution;
  isTest: boolean;
  metadata: Record<string, unknown>;
  tags: string[];
  status: string;
  fulfillmentStatus: string;
  paymentStatus: string;
  source: string;
  lifecycle: string | null;
  subscriptions: { billing_cycle: number; id: number }[];
  shippingCode: string;
  shippingMethod: string;
  shippingPrice: number;
  shippingTax: TaxInfo;
  /** Id of the order-level tax line for each tax id, fixed when the order is built. */
  taxLineIds: Record<number, number>;
  lines: LineState[];
  vouchers: DiscountState[];
  offers: DiscountState[];
  transactions: Transaction[];
  /** Amount captured so far (sales and captures that succeeded). */
  paid: number;
  refunds: Refund[];
  fulfillments: FulfillmentState[];
}

/** Where an order's nested records get their ids. */
export interface IdSource {
  line(): number;
  taxLine(): number;
  transaction(): number;
  refund(): number;
  refundLine(): number;
  adjustment(): number;
  fulfillment(): number;
  fulfillmentLine(): number;
  event(): number;
}

/**
 * Seeded order n owns the id block n·16+1 … n·16+16 for each kind of nested record, so a lazily
 * regenerated order always gets the same ids; events hang off their fulfillment (id·8+1 …).
 */
export const ID_STRIDE = 16;
export const EVENT_STRIDE = 8;

export function seededIds(index: number): IdSource {
  return new SeededIds(index);
}

/** Methods rather than closures: one of these is made per generated order, and closures cost more to create. */
class SeededIds implements IdSource {
  private readonly slots = new Map<string, number>();
  private fulfillmentId = 0;
  private eventSlot = 0;

  constructor(private readonly index: number) {}

  private take(kind: string): number {
    const slot = (this.slots.get(kind) ?? 0) + 1;
    if (slot > ID_STRIDE) throw new Error(`seeded order ${this.index} ran out of ${kind} ids`);
    this.slots.set(kind, slot);
    return this.index * ID_STRIDE + slot;
  }

  line(): number {
    return this.take('line');
  }
  taxLine(): number {
    return this.take('tax');
  }
  transaction(): number {
    return this.take('transaction');
  }
  refund(): number {
    return this.take('refund');
  }
  refundLine(): number {
    return this.take('refundLine');
  }
  adjustment(): number {
    return this.take('adjustment');
  }
  fulfillmentLine(): number {
    return this.take('fulfillmentLine');
  }
  fulfillment(): number {
    this.fulfillmentId = this.take('fulfillment');
    this.eventSlot = 0;
    return this.fulfillmentId;
  }
  event(): number {
    this.eventSlot += 1;
    return this.fulfillmentId * EVENT_STRIDE + this.eventSlot;
  }
}

/** Ids for records created after seeding: one counter per kind, starting above every seeded id. */
export function createdIds(seededOrders: number): IdSource {
  const base = (seededOrders + 1) * ID_STRIDE;
  const counters: Record<string, number> = {};
  const next = (kind: string, start: number) => () => {
    counters[kind] = (counters[kind] ?? start) + 1;
    return counters[kind];
  };
  return {
    line: next('line', base),
    taxLine: next('tax', base),
    transaction: next('transaction', base),
    refund: next('refund', base),
    refundLine: next('refundLine', base),
    adjustment: next('adjustment', base),
    fulfillment: next('fulfillment', base),
    fulfillmentLine: next('fulfillmentLine', base),
    event: next('event', base * EVENT_STRIDE),
  };
}

const NO_TAX: TaxInfo = { id: 900, title: 'Tax exempt', rate: 0, source: 'exemption' };

/** The tax that applies at an address: state match first, then country, else none. */
export function taxAt(address: { country?: string | null; state?: string | null } | null): TaxInfo {
  if (!address?.country) return NO_TAX;
  const region =
    REGIONS.find((r) => r.country === address.country && r.state === address.state) ??
    REGIONS.find((r) => r.country === address.country);
  return region
    ? { id: region.taxId, title: region.taxTitle, rate: region.taxRate, source: 'tax_table' }
    : NO_TAX;
}

export function newLine(
  id: number,
  source: LineSource,
  quantity: number,
  unitPrice: number,
  tax: TaxInfo,
  atMs: number,
  isUpsell = false,
): LineState {
  return {
    id,
    source,
    quantity,
    unitPrice,
    discount: 0,
    // Gift cards are a means of payment, not a sale of goods: never taxed.
    tax: source.isGiftCard ? NO_TAX : tax,
    isUpsell,
    metadata: {},
    createdMs: atMs,
    updatedMs: atMs,
    fulfilled: 0,
    refunded: 0,
  };
}

/** Spreads each discount over the discountable lines it covers, in proportion to their value. */
export function applyDiscounts(order: OrderState): void {
  const discountable = order.lines.filter(
    (l) => !l.source.isGiftCard && l.source.product.is_discountable !== false,
  );
  for (const line of order.lines) line.discount = 0;
  for (const d of [...order.vouchers, ...order.offers]) {
    const lines = d.lineIds ? discountable.filter((l) => d.lineIds!.includes(l.id)) : discountable;
    const room = lines.reduce((sum, l) => sum + lineGross(l) - l.discount, 0);
    d.amount = Math.min(d.amount, room);
    const shares = allocate(
      d.amount,
      lines.map((l) => lineGross(l) - l.discount),
    );
    lines.forEach((line, i) => {
      line.discount += shares[i]!;
    });
  }
  // A discount with nothing left to reduce is not shown at all.
  order.vouchers = order.vouchers.filter((d) => d.amount > 0);
  order.offers = order.offers.filter((d) => d.amount > 0);
}

export const lineGross = (l: LineState) => l.unitPrice * l.quantity;
export const lineNet = (l: LineState) => lineGross(l) - l.discount;
export const lineTax = (l: LineState) => taxOn(lineNet(l), l.tax.rate);
export const lineOriginalTax = (l: LineState) => taxOn(lineGross(l), l.tax.rate);

export interface OrderTotals {
  linesNet: number;
  linesGross: number;
  linesTax: number;
  linesOriginalTax: number;
  shippingTax: number;
  discount: number;
  cost: number;
  totalExcl: number;
  totalTax: number;
  totalIncl: number;
  originalExcl: number;
  originalIncl: number;
  outstanding: number;
  taxes: Map<number, { info: TaxInfo; amount: number }>;
}

export function totalsOf(order: OrderState): OrderTotals {
  let linesNet = 0;
  let linesGross = 0;
  let linesTax = 0;
  let linesOriginalTax = 0;
  let discount = 0;
  let cost = 0;
  const taxes = new Map<number, { info: TaxInfo; amount: number }>();
  const addTax = (info: TaxInfo, amount: number) => {
    const entry = taxes.get(info.id) ?? { info, amount: 0 };
    entry.amount += amount;
    taxes.set(info.id, entry);
  };
  for (const line of order.lines) {
    const tax = lineTax(line);
    linesNet += lineNet(line);
    linesGross += lineGross(line);
    linesTax += tax;
    linesOriginalTax += lineOriginalTax(line);
    discount += line.discount;
    cost += line.source.unitCost * line.quantity;
    addTax(line.tax, tax);
  }
  const shippingTax = taxOn(order.shippingPrice, order.shippingTax.rate);
  addTax(order.shippingTax, shippingTax);
  const totalExcl = linesNet + order.shippingPrice;
  const totalTax = linesTax + shippingTax;
  const totalIncl = totalExcl + totalTax;
  const originalExcl = linesGross + order.shippingPrice;
  const originalIncl = originalExcl + linesOriginalTax + shippingTax;
  return {
    linesNet,
    linesGross,
    linesTax,
    linesOriginalTax,
    shippingTax,
    discount,
    cost,
    totalExcl,
    totalTax,
    totalIncl,
    originalExcl,
    originalIncl,
    outstanding: Math.max(0, totalIncl - order.paid),
    taxes,
  };
}

/** Gives every tax the order charges an order-level tax line id (lines first, then shipping). */
export function assignTaxLineIds(order: OrderState, ids: IdSource): void {
  for (const info of [...order.lines.map((l) => l.tax), order.shippingTax]) {
    if (order.taxLineIds[info.id] === undefined) order.taxLineIds[info.id] = ids.taxLine();
  }
}
