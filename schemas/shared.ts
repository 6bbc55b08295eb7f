import * as z from 'zod';
import { decimalText, freeObject, integer, intId, openEnum, opt, timestamp, url } from './primitives.js';

/** Shared objects of spec 2.1. */

export const BillingAddress = z.looseObject({
  country: opt(z.string()),
  first_name: opt(z.string()),
  id: opt(intId),
  last_name: opt(z.string()),
  line1: opt(z.string()),
  line2: opt(z.string()),
  line3: opt(z.string()),
  line4: opt(z.string()),
  phone_number: opt(z.string()),
  postcode: opt(z.string()),
  state: opt(z.string()),
});

export const ShippingAddress = BillingAddress.extend({ notes: opt(z.string()) });

export const LocationAddress = z.looseObject({
  country: opt(z.string()),
  line1: opt(z.string()),
  line2: opt(z.string()),
  line3: opt(z.string()),
  line4: opt(z.string()),
  phone_number: opt(z.string()),
  postcode: opt(z.string()),
  state: opt(z.string()),
});

export const Agent = z.looseObject({
  email: opt(z.string()),
  first_name: opt(z.string()),
  id: opt(intId),
  last_name: opt(z.string()),
});

export const Attribution = z.looseObject({
  affiliate: opt(z.string()),
  agent: opt(Agent),
  funnel: opt(z.string()),
  gclid: opt(z.string()),
  metadata: opt(freeObject),
  subaffiliate1: opt(z.string()),
  subaffiliate2: opt(z.string()),
  subaffiliate3: opt(z.string()),
  subaffiliate4: opt(z.string()),
  subaffiliate5: opt(z.string()),
  utm_campaign: opt(z.string()),
  utm_content: opt(z.string()),
  utm_medium: opt(z.string()),
  utm_source: opt(z.string()),
  utm_term: opt(z.string()),
});

export const User = z.looseObject({
  accepts_marketing: opt(z.boolean()),
  email: opt(z.string()),
  first_name: opt(z.string()),
  id: opt(intId),
  ip: opt(z.string()),
  language: opt(z.string()),
  last_name: opt(z.string()),
  phone_number: opt(z.string()),
  user_agent: opt(z.string()),
});

export const ReportAmount = z.looseObject({ amount: opt(decimalText), currency: opt(z.string()) });

/** Tax line on order lines, fulfillment line items and shipping. */
export const TaxLine = z.looseObject({
  amount: opt(decimalText),
  currency: opt(z.string()),
  rate: opt(z.number()),
  report_values: opt(ReportAmount),
  source: opt(z.string()),
  tax_id: opt(intId),
  tax_title: opt(z.string()),
});

/** Order-level tax line: has `id`, no `tax_id`. */
export const OrderTaxLine = z.looseObject({
  amount: opt(decimalText),
  currency: opt(z.string()),
  id: intId,
  rate: opt(z.number()),
  report_values: opt(ReportAmount),
  source: opt(z.string()),
  tax_title: opt(z.string()),
});

export const Voucher = z.looseObject({
  code: opt(z.string()),
  end_datetime: opt(timestamp),
  name: opt(z.string()),
  start_datetime: opt(timestamp),
});

export const VoucherDiscount = z.looseObject({
  amount: opt(decimalText),
  description: opt(z.string()),
  name: opt(z.string()),
  voucher: opt(Voucher),
});

export const OfferDiscount = z.looseObject({
  amount: opt(decimalText),
  description: opt(z.string()),
  name: opt(z.string()),
});

export const Gateway = z.looseObject({ id: opt(intId), name: opt(z.string()), type: opt(z.string()) });

export const PaymentDetails = z.looseObject({
  bankcard_first_six: opt(z.string()),
  bankcard_last_four: opt(z.string()),
  card_token: opt(z.string()),
  gateway: opt(Gateway),
  is_3ds: opt(z.boolean()),
  optimized_3ds: opt(z.boolean()),
  paypal_vault_id: opt(z.string()),
  sca_flow: opt(z.string()),
});

export const Transaction = z.looseObject({
  amount: opt(decimalText),
  auth_code: opt(z.string()),
  currency: opt(z.string()),
  date_created: opt(timestamp),
  external_id: opt(z.string()),
  id: intId,
  is_disputed: opt(z.boolean()),
  is_external: opt(z.boolean()),
  is_initial_retry: opt(z.boolean()),
  is_test: opt(z.boolean()),
  network_transaction_id: opt(z.string()),
  parent_id: opt(intId),
  payment_details: opt(PaymentDetails),
  payment_method: opt(z.string()),
  report_values: opt(ReportAmount),
  response_code: opt(integer),
  statement_descriptor: opt(z.string()),
  status: opt(openEnum),
  type: opt(openEnum),
});

const RefundAmounts = z.looseObject({
  amount_excl_tax: opt(decimalText),
  amount_incl_tax: opt(decimalText),
  currency: opt(z.string()),
});

export const RefundAdjustment = z.looseObject({
  amount_excl_tax: opt(decimalText),
  amount_incl_tax: opt(decimalText),
  id: intId,
  report_values: opt(RefundAmounts),
  type: opt(openEnum),
});

export const RefundLineItem = z.looseObject({
  amount_excl_tax: opt(decimalText),
  amount_incl_tax: opt(decimalText),
  id: intId,
  line_item_id: opt(intId),
  location_id: opt(intId),
  quantity: opt(integer),
  report_values: opt(RefundAmounts),
  restock_type: opt(openEnum),
});

export const Refund = z.looseObject({
  adjustments: opt(z.array(RefundAdjustment)),
  created_at: opt(timestamp),
  id: intId,
  note: opt(z.string()),
  order_number: opt(z.string()),
  refund_line_items: opt(z.array(RefundLineItem)),
  report_values: opt(
    z.looseObject({
      currency: opt(z.string()),
      total_refund_amount: opt(decimalText),
      total_return_excl_tax: opt(decimalText),
      total_return_incl_tax: opt(decimalText),
    }),
  ),
  total_refund_amount: opt(decimalText),
  total_return_excl_tax: opt(decimalText),
  total_return_incl_tax: opt(decimalText),
  transactions: opt(z.array(Transaction)),
  user_id: opt(intId),
});

export const Image = z.looseObject({
  attachment: opt(z.string()),
  caption: opt(z.string()),
  display_order: opt(integer),
  file_name: opt(z.string()),
  id: intId,
  src: opt(url),
});

export const Category = z.looseObject({ id: intId, name: opt(z.string()), slug: opt(z.string()) });

/** Stockrecord embedded in 2023-02-10 order lines and subscription lines. */
export const EmbeddedStockrecord = z.looseObject({
  id: intId,
  low_stock_threshold: opt(integer),
  num_allocated: opt(integer),
  num_in_stock: opt(integer),
  partner_sku: opt(z.string()),
  price: opt(decimalText),
  price_currency: opt(z.string()),
  price_retail: opt(decimalText),
});

export const Location = z.looseObject({
  accept_return: opt(z.boolean()),
  address: opt(LocationAddress),
  callback_url: opt(url),
  id: intId,
  name: opt(z.string()),
});

/** Product as embedded in 2023-02-10 order lines and subscription lines. */
export const EmbeddedProduct = z.looseObject({
  categories: opt(z.array(Category)),
  id: intId,
  images: opt(z.array(Image)),
  title: opt(z.string()),
  upc: opt(z.string()),
  url: opt(url),
});

export type BillingAddress = z.infer<typeof BillingAddress>;
export type ShippingAddress = z.infer<typeof ShippingAddress>;
export type LocationAddress = z.infer<typeof LocationAddress>;
export type Attribution = z.infer<typeof Attribution>;
export type User = z.infer<typeof User>;
export type TaxLine = z.infer<typeof TaxLine>;
export type OrderTaxLine = z.infer<typeof OrderTaxLine>;
export type VoucherDiscount = z.infer<typeof VoucherDiscount>;
export type OfferDiscount = z.infer<typeof OfferDiscount>;
export type PaymentDetails = z.infer<typeof PaymentDetails>;
export type Transaction = z.infer<typeof Transaction>;
export type Refund = z.infer<typeof Refund>;
export type RefundAdjustment = z.infer<typeof RefundAdjustment>;
export type RefundLineItem = z.infer<typeof RefundLineItem>;
export type Image = z.infer<typeof Image>;
export type Category = z.infer<typeof Category>;
export type EmbeddedStockrecord = z.infer<typeof EmbeddedStockrecord>;
export type EmbeddedProduct = z.infer<typeof EmbeddedProduct>;
export type Location = z.infer<typeof Location>;
