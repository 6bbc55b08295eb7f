import * as z from 'zod';
import { decimalText, freeObject, integer, intId, openEnum, opt, timestamp, url } from './primitives.js';
import {
  Attribution,
  BillingAddress,
  EmbeddedProduct,
  EmbeddedStockrecord,
  LocationAddress,
  OfferDiscount,
  OrderTaxLine,
  Refund,
  ShippingAddress,
  TaxLine,
  Transaction,
  User,
  VoucherDiscount,
} from './shared.js';

/** Orders (2.2), fulfillments (2.5) and fulfillment events (2.6). */

export const API_VERSION_2023 = '2023-02-10';
export const API_VERSION_2024 = '2024-04-01';
export const API_VERSIONS = [API_VERSION_2023, API_VERSION_2024] as const;
export type ApiVersion = (typeof API_VERSIONS)[number];

export const FulfillmentLineItem = z.looseObject({
  currency: opt(z.string()),
  fulfilled_quantity: opt(decimalText),
  fulfillment_service: opt(z.string()),
  id: intId,
  order_line_id: opt(intId),
  price_excl_tax: opt(decimalText),
  price_incl_tax: opt(decimalText),
  product_id: opt(intId),
  product_image: opt(url),
  product_title: opt(z.string()),
  quantity: opt(integer),
  requires_shipping: opt(z.boolean()),
  returnable_quantity: opt(decimalText),
  returned_quantity: opt(decimalText),
  sku: opt(z.string()),
  tax_lines: opt(z.array(TaxLine)),
  total_discount: opt(decimalText),
});

/** Fulfillment, 2024-04-01 shape (2.5). */
export const Fulfillment = z.looseObject({
  created_at: opt(timestamp),
  delivery_status: opt(openEnum),
  id: intId,
  last_event_date: opt(timestamp),
  line_items: opt(z.array(FulfillmentLineItem)),
  location_id: opt(intId),
  order_number: opt(z.string()),
  origin_address: opt(LocationAddress),
  requires_shipping: opt(z.boolean()),
  shipping_method: opt(z.string()),
  status: opt(openEnum),
  tracking_carrier: opt(z.string()),
  tracking_carriers: opt(z.string()),
  tracking_code: opt(z.string()),
  tracking_codes: opt(z.string()),
  tracking_link: opt(z.string()),
  tracking_links: opt(url),
});

/** Fulfillment as embedded in a 2023-02-10 order. */
export const Fulfillment2023 = z.looseObject({
  carrier: opt(z.string()),
  date_created: opt(timestamp),
  id: intId,
  last_event_date: opt(timestamp),
  lines: opt(z.string()),
  reference: opt(z.string()),
  requires_shipping: opt(z.boolean()),
  status: opt(openEnum),
  tracking_code: opt(z.string()),
  tracking_link: opt(z.string()),
});

export const FulfillmentEvent = z.looseObject({
  city: opt(z.string()),
  country: opt(z.string()),
  created_at: opt(timestamp),
  estimated_delivery_at: opt(timestamp),
  fulfillment: opt(intId),
  happened_at: opt(timestamp),
  id: intId,
  latitude: opt(z.number()),
  line1: opt(z.string()),
  line2: opt(z.string()),
  longitude: opt(z.number()),
  message: opt(z.string()),
  order: opt(z.string()),
  postcode: opt(z.string()),
  state: opt(z.string()),
  status: opt(openEnum),
  updated_at: opt(timestamp),
});

const LineReportValues = z.looseObject({
  currency: opt(z.string()),
  original_price_excl_tax: opt(decimalText),
  original_price_incl_tax: opt(decimalText),
  original_total_discount: opt(decimalText),
  price_excl_tax: opt(decimalText),
  price_incl_tax: opt(decimalText),
  total_cost: opt(decimalText),
  total_discount: opt(decimalText),
  unit_cost: opt(decimalText),
});

export const OrderLine2024 = z.looseObject({
  created_at: opt(timestamp),
  currency: opt(z.string()),
  current_quantity: opt(integer),
  editable_quantity: opt(integer),
  fulfillable_quantity: opt(integer),
  id: intId,
  is_gift_card: opt(z.boolean()),
  is_upsell: opt(z.boolean()),
  metadata: opt(freeObject),
  original_price_excl_tax: opt(decimalText),
  original_price_incl_tax: opt(decimalText),
  original_total_discount: opt(decimalText),
  price_excl_tax: opt(decimalText),
  price_incl_tax: opt(decimalText),
  product_id: opt(intId),
  product_image: opt(url),
  product_title: opt(z.string()),
  product_url: opt(url),
  quantity: opt(integer),
  report_values: opt(LineReportValues),
  requires_shipping: opt(z.boolean()),
  sku: opt(z.string()),
  tax_lines: opt(z.array(TaxLine)),
  total_cost: opt(decimalText),
  total_discount: opt(decimalText),
  unit_cost: opt(decimalText),
  updated_at: opt(timestamp),
  variant_id: opt(intId),
  variant_title: opt(z.string()),
});

export const OrderLine2023 = z.looseObject({
  created_at: opt(timestamp),
  id: intId,
  is_gift_card: opt(z.boolean()),
  is_upsell: opt(z.boolean()),
  metadata: opt(freeObject),
  price_currency: opt(z.string()),
  price_excl_tax: opt(decimalText),
  price_excl_tax_excl_discounts: opt(decimalText),
  price_incl_tax: opt(decimalText),
  price_incl_tax_excl_discounts: opt(decimalText),
  product: opt(EmbeddedProduct),
  quantity: opt(integer),
  stockrecord: opt(EmbeddedStockrecord),
  tax_lines: opt(z.array(TaxLine)),
  total_cost: opt(decimalText),
  unit_cost: opt(decimalText),
  updated_at: opt(timestamp),
});

const reportValueFields2023 = {
  currency: opt(z.string()),
  original_shipping_excl_tax: opt(decimalText),
  original_shipping_incl_tax: opt(decimalText),
  original_total_excl_tax: opt(decimalText),
  original_total_incl_tax: opt(decimalText),
  shipping_excl_tax: opt(decimalText),
  shipping_incl_tax: opt(decimalText),
  total_cost: opt(decimalText),
  total_excl_tax: opt(decimalText),
  total_incl_tax: opt(decimalText),
};

/** Fields common to both order shapes. */
const orderCommon = {
  attribution: opt(Attribution),
  billing_address: opt(BillingAddress),
  created_at: opt(timestamp),
  date_placed: opt(timestamp),
  updated_at: opt(timestamp),
  currency: opt(z.string()),
  display_taxes: opt(z.string()),
  fulfillment_status: opt(openEnum),
  is_test: opt(z.boolean()),
  metadata: opt(freeObject),
  number: z.string().min(1, { message: 'expected a non-empty order number' }),
  offer_discounts: opt(z.array(OfferDiscount)),
  order_status_url: opt(url),
  original_shipping_excl_tax: opt(decimalText),
  original_shipping_incl_tax: opt(decimalText),
  original_total_excl_tax: opt(decimalText),
  original_total_incl_tax: opt(decimalText),
  payment_status: opt(openEnum),
  refunds: opt(z.array(Refund)),
  shipping_address: opt(ShippingAddress),
  shipping_code: opt(z.string()),
  shipping_method: opt(z.string()),
  source: opt(z.string()),
  status: opt(openEnum),
  subscription_lifecycle: opt(openEnum),
  shipping_excl_tax: opt(decimalText),
  shipping_incl_tax: opt(decimalText),
  shipping_tax: opt(decimalText),
  shipping_tax_lines: opt(z.array(TaxLine)),
  subscriptions: opt(z.array(z.looseObject({ billing_cycle: opt(integer), id: intId }))),
  supports_post_purchase_upsells: opt(z.boolean()),
  tags: opt(z.array(z.string())),
  tax_lines: opt(z.array(OrderTaxLine)),
  total_cost: opt(decimalText),
  total_excl_tax: opt(decimalText),
  total_incl_tax: opt(decimalText),
  total_tax: opt(decimalText),
  transactions: opt(z.array(Transaction)),
  user: opt(User),
  voucher_discounts: opt(z.array(VoucherDiscount)),
};

export const Order2024 = z.looseObject({
  ...orderCommon,
  fulfillments: opt(z.array(Fulfillment)),
  lines: opt(z.array(OrderLine2024)),
  original_total_discount: opt(decimalText),
  total_discount: opt(decimalText),
  total_outstanding: opt(decimalText),
  report_values: opt(
    z.looseObject({
      ...reportValueFields2023,
      original_total_discount: opt(decimalText),
      total_discount: opt(decimalText),
    }),
  ),
});

export const Order2023 = z.looseObject({
  ...orderCommon,
  fulfillments: opt(z.array(Fulfillment2023)),
  lines: opt(z.array(OrderLine2023)),
  report_values: opt(z.looseObject(reportValueFields2023)),
});

export type FulfillmentLineItem = z.infer<typeof FulfillmentLineItem>;
export type Fulfillment = z.infer<typeof Fulfillment>;
export type Fulfillment2023 = z.infer<typeof Fulfillment2023>;
export type FulfillmentEvent = z.infer<typeof FulfillmentEvent>;
export type OrderLine2024 = z.infer<typeof OrderLine2024>;
export type OrderLine2023 = z.infer<typeof OrderLine2023>;
export type Order2024 = z.infer<typeof Order2024>;
export type Order2023 = z.infer<typeof Order2023>;
export type Order = Order2023 | Order2024;
