import type { Attribution, BillingAddress, Refund, ShippingAddress, User } from '../../../schemas/index.js';
import {
  convertMinor,
  formatMinor,
  parseMinor,
  REPORT_CURRENCY,
  reportText,
  storePrice,
  taxOn,
} from './money.js';
import {
  applyDiscounts,
  assignTaxLineIds,
  type DiscountState,
  type IdSource,
  type LineState,
  lineNet,
  type OrderState,
  taxAt,
  totalsOf,
} from './order-state.js';
import { makeTransaction } from './payments.js';
import { iso } from './time.js';

/** Building blocks shared by seeded orders and orders created through the API. */

export interface OrderHead {
  index: number;
  number: string;
  currency: string;
  atMs: number;
  placedMs?: number;
  user: User;
  billing: BillingAddress | null;
  shipping: ShippingAddress | null;
  attribution: Attribution;
  source: string;
}

export function blankOrder(head: OrderHead): OrderState {
  return {
    index: head.index,
    number: head.number,
    currency: head.currency,
    createdMs: head.atMs,
    placedMs: head.placedMs ?? head.atMs,
    updatedMs: head.atMs,
    user: head.user,
    billing: head.billing,
    shipping: head.shipping,
    attribution: head.attribution,
    isTest: false,
    metadata: {},
    tags: [],
    status: 'open',
    fulfillmentStatus: 'unfulfilled',
    paymentStatus: 'pending',
    source: head.source,
    lifecycle: null,
    subscriptions: [],
    shippingCode: 'standard',
    shippingMethod: 'Standard shipping',
    shippingPrice: 0,
    shippingTax: taxAt(head.shipping ?? head.billing),
    taxLineIds: {},
    lines: [],
    vouchers: [],
    offers: [],
    transactions: [],
    paid: 0,
    refunds: [],
    fulfillments: [],
  };
}

/** Shipping methods by code; the price is in US cents and converted like product prices. */
export const SHIPPING_METHODS: Record<string, { name: string; usdCents: number }> = {
  standard: { name: 'Standard shipping', usdCents: 499 },
  express: { name: 'Express shipping', usdCents: 1499 },
  free: { name: 'Free shipping', usdCents: 0 },
  pickup: { name: 'Store pickup', usdCents: 0 },
};

export function setShipping(order: OrderState, code: string, price?: number): void {
  const method = SHIPPING_METHODS[code];
  order.shippingCode = code;
  order.shippingMethod = method?.name ?? code;
  const usd = method?.usdCents ?? SHIPPING_METHODS.standard!.usdCents;
  order.shippingPrice = price ?? (usd === 0 ? 0 : storePrice(usd, order.currency));
}

/** Vouchers the store accepts (codes are case-insensitive). */
export const VOUCHERS = [
  { code: 'WELCOME10', name: 'Welcome 10%', percent: 10, usdCents: 0 },
  { code: 'SAVE5', name: '5 off', percent: 0, usdCents: 500 },
  { code: 'BFCM25', name: 'Black Friday 25%', percent: 25, usdCents: 0 },
  { code: 'FRIEND15', name: 'Referral 15%', percent: 15, usdCents: 0 },
] as const;
export const OFFERS = [
  { name: 'Bundle & save', description: '15% off when buying a bundle', percent: 15 },
  { name: 'Post-purchase upsell', description: '20% off the added item', percent: 20 },
] as const;
const VOUCHER_WINDOW = { startMs: Date.UTC(2023, 0, 1), endMs: Date.UTC(2027, 11, 31, 23, 59, 59) };

const discountableSubtotal = (order: OrderState) =>
  order.lines
    .filter((l) => !l.source.isGiftCard && l.source.product.is_discountable !== false)
    .reduce((sum, l) => sum + l.unitPrice * l.quantity, 0);

export function voucherDiscount(order: OrderState, voucher: (typeof VOUCHERS)[number]): DiscountState {
  const subtotal = discountableSubtotal(order);
  const amount = voucher.percent
    ? Math.round((subtotal * voucher.percent) / 100)
    : convertMinor(voucher.usdCents, 'USD', order.currency);
  return {
    name: voucher.name,
    description: voucher.percent ? `${voucher.percent}% off` : `${formatMinor(amount, order.currency)} off`,
    amount,
    voucher: { code: voucher.code, name: voucher.name, ...VOUCHER_WINDOW },
  };
}

export function offerDiscount(offer: (typeof OFFERS)[number], lines: LineState[]): DiscountState {
  const base = lines.reduce((sum, l) => sum + l.unitPrice * l.quantity, 0);
  return {
    name: offer.name,
    description: offer.description,
    amount: Math.round((base * offer.percent) / 100),
  };
}

/** Fixes discounts and tax line ids once the lines are in place. */
export function finishOrder(order: OrderState, ids: IdSource): void {
  applyDiscounts(order);
  assignTaxLineIds(order, ids);
}

/** Refunds the given line quantities (and shipping when asked), with a refund transaction. */
export function addRefund(
  order: OrderState,
  ids: IdSource,
  items: { line: LineState; quantity: number }[],
  opts: { atMs: number; refundShipping: boolean; parentId: number | null; note: string; locationId: number },
): Refund {
  const c = order.currency;
  const m = (minor: number) => formatMinor(minor, c);
  const r = (minor: number) => reportText(minor, c);
  let excl = 0;
  let incl = 0;
  const refundLines = items.map(({ line, quantity }) => {
    const net = Math.round((lineNet(line) * quantity) / line.quantity);
    const gross = net + taxOn(net, line.tax.rate);
    excl += net;
    incl += gross;
    line.refunded += quantity;
    return {
      amount_excl_tax: m(net),
      amount_incl_tax: m(gross),
      id: ids.refundLine(),
      line_item_id: line.id,
      location_id: opts.locationId,
      quantity,
      report_values: { amount_excl_tax: r(net), amount_incl_tax: r(gross), currency: REPORT_CURRENCY },
      restock_type: line.fulfilled > 0 ? 'return' : 'cancel',
    };
  });
  const shippingIncl = opts.refundShipping
    ? order.shippingPrice + taxOn(order.shippingPrice, order.shippingTax.rate)
    : 0;
  const adjustments = opts.refundShipping
    ? [
        {
          amount_excl_tax: m(order.shippingPrice),
          amount_incl_tax: m(shippingIncl),
          id: ids.adjustment(),
          report_values: {
            amount_excl_tax: r(order.shippingPrice),
            amount_incl_tax: r(shippingIncl),
            currency: REPORT_CURRENCY,
          },
          type: 'shipping_refund',
        },
      ]
    : [];
  const total = incl + shippingIncl;
  const sale = order.transactions.find((t) => t.id === opts.parentId);
  const refund: Refund = {
    adjustments,
    created_at: iso(opts.atMs),
    id: ids.refund(),
    note: opts.note,
    order_number: order.number,
    refund_line_items: refundLines,
    report_values: {
      currency: REPORT_CURRENCY,
      total_refund_amount: r(total),
      total_return_excl_tax: r(excl),
      total_return_incl_tax: r(incl),
    },
    total_refund_amount: m(total),
    total_return_excl_tax: m(excl),
    total_return_incl_tax: m(incl),
    transactions: [
      makeTransaction({
        id: ids.transaction(),
        amount: total,
        currency: c,
        atMs: opts.atMs,
        type: 'refund',
        status: 'success',
        paymentMethod: sale?.payment_method ?? 'external',
        details: sale?.payment_details ?? null,
        isTest: order.isTest,
        parentId: opts.parentId,
      }),
    ],
    user_id: order.user.id ?? null,
  };
  order.refunds.push(refund);
  order.transactions.push(refund.transactions![0]!);
  const totals = totalsOf(order);
  const refunded = order.refunds.reduce(
    (sum, rf) => sum + (parseMinor(rf.total_refund_amount ?? '0', c) ?? 0),
    0,
  );
  order.paymentStatus = refunded >= totals.totalIncl ? 'refunded' : 'partially_refunded';
  return refund;
}
