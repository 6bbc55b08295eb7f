import type {
  Fulfillment,
  Fulfillment2023,
  Order2023,
  Order2024,
  OrderLine2023,
  OrderLine2024,
  OrderTaxLine,
  TaxLine,
} from '../../../schemas/index.js';
import { formatMinor, REPORT_CURRENCY, reportText, taxOn } from './money.js';
import {
  type FulfillmentState,
  type LineState,
  lineGross,
  lineNet,
  lineOriginalTax,
  lineTax,
  type OrderState,
  type TaxInfo,
  totalsOf,
} from './order-state.js';
import { iso } from './time.js';
import { STORE_ORIGIN } from './vocab.js';

/** Renders the internal order as either API shape (2.2). Every call builds fresh objects. */

function taxLine(info: TaxInfo, amount: number, currency: string): TaxLine {
  return {
    amount: formatMinor(amount, currency),
    currency,
    rate: info.rate,
    report_values: { amount: reportText(amount, currency), currency: REPORT_CURRENCY },
    source: info.source,
    tax_id: info.id,
    tax_title: info.title,
  };
}

const lineTaxLines = (l: LineState, currency: string) => [taxLine(l.tax, lineTax(l), currency)];

function line2024(l: LineState, currency: string): OrderLine2024 {
  const m = (minor: number) => formatMinor(minor, currency);
  const r = (minor: number) => reportText(minor, currency);
  const net = lineNet(l);
  const gross = lineGross(l);
  const cost = l.source.unitCost * l.quantity;
  const current = l.quantity - l.refunded;
  return {
    created_at: iso(l.createdMs),
    currency,
    current_quantity: current,
    editable_quantity: Math.max(0, current - l.fulfilled),
    fulfillable_quantity: Math.max(0, current - l.fulfilled),
    id: l.id,
    is_gift_card: l.source.isGiftCard,
    is_upsell: l.isUpsell,
    metadata: l.metadata,
    original_price_excl_tax: m(gross),
    original_price_incl_tax: m(gross + lineOriginalTax(l)),
    original_total_discount: m(l.discount),
    price_excl_tax: m(net),
    price_incl_tax: m(net + lineTax(l)),
    product_id: l.source.product.id,
    product_image: l.source.image,
    product_title: l.source.product.title,
    product_url: l.source.product.url,
    quantity: l.quantity,
    report_values: {
      currency: REPORT_CURRENCY,
      original_price_excl_tax: r(gross),
      original_price_incl_tax: r(gross + lineOriginalTax(l)),
      original_total_discount: r(l.discount),
      price_excl_tax: r(net),
      price_incl_tax: r(net + lineTax(l)),
      total_cost: r(cost),
      total_discount: r(l.discount),
      unit_cost: r(l.source.unitCost),
    },
    requires_shipping: l.source.requiresShipping,
    sku: l.source.variant.sku ?? '',
    tax_lines: lineTaxLines(l, currency),
    total_cost: m(cost),
    total_discount: m(l.discount),
    unit_cost: m(l.source.unitCost),
    updated_at: iso(l.updatedMs),
    variant_id: l.source.variant.id,
    variant_title: l.source.variant.title,
  };
}

function line2023(l: LineState, currency: string): OrderLine2023 {
  const m = (minor: number) => formatMinor(minor, currency);
  const net = lineNet(l);
  const gross = lineGross(l);
  return {
    created_at: iso(l.createdMs),
    id: l.id,
    is_gift_card: l.source.isGiftCard,
    is_upsell: l.isUpsell,
    metadata: l.metadata,
    price_currency: currency,
    price_excl_tax: m(net),
    price_excl_tax_excl_discounts: m(gross),
    price_incl_tax: m(net + lineTax(l)),
    price_incl_tax_excl_discounts: m(gross + lineOriginalTax(l)),
    product: l.source.embedProduct,
    quantity: l.quantity,
    stockrecord: l.source.embedStockrecord,
    tax_lines: lineTaxLines(l, currency),
    total_cost: m(l.source.unitCost * l.quantity),
    unit_cost: m(l.source.unitCost),
    updated_at: iso(l.updatedMs),
  };
}

const lastEventMs = (f: FulfillmentState) =>
  f.events.length > 0 ? Date.parse(f.events[f.events.length - 1]!.happened_at!) : f.createdMs;

export function renderFulfillment(f: FulfillmentState, order: OrderState): Fulfillment {
  const currency = order.currency;
  return {
    created_at: iso(f.createdMs),
    delivery_status: f.deliveryStatus,
    id: f.id,
    last_event_date: iso(lastEventMs(f)),
    line_items: f.items.map(({ id, line, quantity }) => {
      const share = (minor: number) => Math.round((minor * quantity) / line.quantity);
      const net = share(lineNet(line));
      return {
        currency,
        fulfilled_quantity: String(quantity),
        fulfillment_service: 'manual',
        id,
        order_line_id: line.id,
        price_excl_tax: formatMinor(net, currency),
        price_incl_tax: formatMinor(net + taxOn(net, line.tax.rate), currency),
        product_id: line.source.product.id,
        product_image: line.source.image,
        product_title: line.source.product.title,
        quantity,
        requires_shipping: line.source.requiresShipping,
        returnable_quantity: String(Math.max(0, quantity - line.refunded)),
        returned_quantity: String(Math.min(quantity, line.refunded)),
        sku: line.source.variant.sku ?? '',
        tax_lines: [taxLine(line.tax, taxOn(net, line.tax.rate), currency)],
        total_discount: formatMinor(share(line.discount), currency),
      };
    }),
    location_id: f.locationId,
    order_number: order.number,
    origin_address: f.originAddress,
    requires_shipping: f.items.some((i) => i.line.source.requiresShipping),
    shipping_method: f.shippingMethod,
    status: f.status,
    tracking_carrier: f.carrier,
    tracking_carriers: f.carrier,
    tracking_code: f.trackingCode,
    tracking_codes: f.trackingCode,
    tracking_link: f.trackingLink,
    tracking_links: f.trackingLink,
  };
}

function fulfillment2023(f: FulfillmentState): Fulfillment2023 {
  return {
    carrier: f.carrier,
    date_created: iso(f.createdMs),
    id: f.id,
    last_event_date: iso(lastEventMs(f)),
    // A text field in this shape (2.2): "<order line id> x <quantity>" per item.
    lines: f.items.map((i) => `${i.line.id} x ${i.quantity}`).join(', '),
    reference: `F-${f.id}`,
    requires_shipping: f.items.some((i) => i.line.source.requiresShipping),
    status: f.status,
    tracking_code: f.trackingCode,
    tracking_link: f.trackingLink,
  };
}

/** Fields both shapes share, with the money fields both carry. */
function common(order: OrderState) {
  const t = totalsOf(order);
  const c = order.currency;
  const m = (minor: number) => formatMinor(minor, c);
  const r = (minor: number) => reportText(minor, c);
  const taxLines: OrderTaxLine[] = [...t.taxes.values()].map(({ info, amount }) => ({
    amount: m(amount),
    currency: c,
    id: order.taxLineIds[info.id]!,
    rate: info.rate,
    report_values: { amount: r(amount), currency: REPORT_CURRENCY },
    source: info.source,
    tax_title: info.title,
  }));
  const shippingIncl = order.shippingPrice + t.shippingTax;
  const fields = {
    attribution: order.attribution,
    billing_address: order.billing,
    created_at: iso(order.createdMs),
    date_placed: iso(order.placedMs),
    updated_at: iso(order.updatedMs),
    currency: c,
    display_taxes: order.shipping?.country === 'US' ? 'excluding' : 'including',
    fulfillment_status: order.fulfillmentStatus,
    is_test: order.isTest,
    metadata: order.metadata,
    number: order.number,
    offer_discounts: order.offers.map((o) => ({
      amount: m(o.amount),
      description: o.description,
      name: o.name,
    })),
    order_status_url: `${STORE_ORIGIN}/orders/${order.number}/status/`,
    original_shipping_excl_tax: m(order.shippingPrice),
    original_shipping_incl_tax: m(shippingIncl),
    original_total_excl_tax: m(t.originalExcl),
    original_total_incl_tax: m(t.originalIncl),
    payment_status: order.paymentStatus,
    refunds: [...order.refunds],
    shipping_address: order.shipping,
    shipping_code: order.shippingCode,
    shipping_method: order.shippingMethod,
    source: order.source,
    status: order.status,
    subscription_lifecycle: order.lifecycle,
    shipping_excl_tax: m(order.shippingPrice),
    shipping_incl_tax: m(shippingIncl),
    shipping_tax: m(t.shippingTax),
    shipping_tax_lines: [taxLine(order.shippingTax, t.shippingTax, c)],
    subscriptions: order.subscriptions.map((sub) => ({ ...sub })),
    supports_post_purchase_upsells: order.source === 'web',
    tags: [...order.tags],
    tax_lines: taxLines,
    total_cost: m(t.cost),
    total_excl_tax: m(t.totalExcl),
    total_incl_tax: m(t.totalIncl),
    total_tax: m(t.totalTax),
    transactions: [...order.transactions],
    user: order.user,
    voucher_discounts: order.vouchers.map((v) => ({
      amount: m(v.amount),
      description: v.description,
      name: v.name,
      voucher: v.voucher
        ? {
            code: v.voucher.code,
            end_datetime: iso(v.voucher.endMs),
            name: v.voucher.name,
            start_datetime: iso(v.voucher.startMs),
          }
        : null,
    })),
  };
  const report = {
    currency: REPORT_CURRENCY,
    original_shipping_excl_tax: r(order.shippingPrice),
    original_shipping_incl_tax: r(shippingIncl),
    original_total_excl_tax: r(t.originalExcl),
    original_total_incl_tax: r(t.originalIncl),
    shipping_excl_tax: r(order.shippingPrice),
    shipping_incl_tax: r(shippingIncl),
    total_cost: r(t.cost),
    total_excl_tax: r(t.totalExcl),
    total_incl_tax: r(t.totalIncl),
  };
  return { t, fields, report, m, r };
}

export function renderOrder2024(order: OrderState): Order2024 {
  const { t, fields, report, m, r } = common(order);
  return {
    ...fields,
    fulfillments: order.fulfillments.map((f) => renderFulfillment(f, order)),
    lines: order.lines.map((l) => line2024(l, order.currency)),
    original_total_discount: m(t.discount),
    total_discount: m(t.discount),
    total_outstanding: m(t.outstanding),
    report_values: { ...report, original_total_discount: r(t.discount), total_discount: r(t.discount) },
  };
}

export function renderOrder2023(order: OrderState): Order2023 {
  const { fields, report } = common(order);
  return {
    ...fields,
    fulfillments: order.fulfillments.map(fulfillment2023),
    lines: order.lines.map((l) => line2023(l, order.currency)),
    report_values: report,
  };
}
