import * as z from 'zod';
import { decimalText, freeObject, integer, intId, openEnum, opt, timestamp, url } from './primitives.js';
import {
  Attribution,
  BillingAddress,
  Category,
  EmbeddedProduct,
  EmbeddedStockrecord,
  Image,
  Location,
  ShippingAddress,
  TaxLine,
  User,
  VoucherDiscount,
} from './shared.js';

/** Carts (2.3), fulfillment orders (2.4), products (2.7), subscriptions (2.8), metadata (2.9), tickets (2.10). */

export const CartLine = z.looseObject({
  currency: opt(z.string()),
  id: intId,
  interval: opt(z.string()),
  interval_count: opt(integer),
  is_upsell: opt(z.boolean()),
  metadata: opt(freeObject),
  price_excl_tax: opt(decimalText),
  price_incl_tax: opt(decimalText),
  /** 2023-02-10: the product as an object, as in 2023-02-10 order lines (2024-04-01: product_* fields). */
  product: opt(EmbeddedProduct),
  product_id: opt(intId),
  product_image: opt(url),
  product_title: opt(z.string()),
  product_url: opt(url),
  quantity: opt(integer),
  report_values: opt(
    z.looseObject({
      currency: opt(z.string()),
      price_excl_tax: opt(decimalText),
      price_incl_tax: opt(decimalText),
      total_cost: opt(decimalText),
      total_discount: opt(decimalText),
      unit_cost: opt(decimalText),
    }),
  ),
  sku: opt(z.string()),
  /** 2023-02-10: the stockrecord sold, whose partner_sku is the line's sku. */
  stockrecord: opt(EmbeddedStockrecord),
  total_cost: opt(decimalText),
  total_discount: opt(decimalText),
  unit_cost: opt(decimalText),
  variant_id: opt(intId),
  variant_title: opt(z.string()),
});

export const Cart = z.looseObject({
  abandoned: opt(z.boolean()),
  attribution: opt(Attribution),
  checkout_url: opt(url),
  created_at: opt(timestamp),
  currency: opt(z.string()),
  /** 2023-02-10 name of created_at. */
  date_created: opt(timestamp),
  id: intId,
  lines: opt(z.array(CartLine)),
  metadata: opt(freeObject),
  report_values: opt(
    z.looseObject({
      currency: opt(z.string()),
      total_cost: opt(decimalText),
      total_discount: opt(decimalText),
      total_excl_tax: opt(decimalText),
      total_incl_tax: opt(decimalText),
    }),
  ),
  status: opt(openEnum),
  total_cost: opt(decimalText),
  total_discount: opt(decimalText),
  total_excl_tax: opt(decimalText),
  total_incl_tax: opt(decimalText),
  /** 2023-02-10 only. */
  total_tax: opt(decimalText),
  user: opt(User),
  voucher_discounts: opt(z.array(VoucherDiscount)),
});

export const FulfillmentOrderLineItem = z.looseObject({
  currency: opt(z.string()),
  fulfillable_quantity: opt(decimalText),
  fulfillment_order_id: opt(intId),
  id: intId,
  order_line_id: opt(intId),
  price_excl_tax: opt(decimalText),
  price_incl_tax: opt(decimalText),
  product_id: opt(z.string()),
  product_image: opt(url),
  product_title: opt(z.string()),
  quantity: opt(integer),
  sku: opt(z.string()),
  stockrecord_id: opt(intId),
  tax_lines: opt(z.array(TaxLine)),
  total_discount: opt(decimalText),
});

export const FulfillmentHold = z.looseObject({
  created_at: opt(timestamp),
  reason: opt(openEnum),
  reason_message: opt(z.string()),
});

export const MerchantRequest = z.looseObject({
  message: opt(z.string()),
  notify: opt(z.boolean()),
  type: opt(openEnum),
});

export const FulfillmentOrder = z.looseObject({
  assigned_location: opt(Location),
  // Not in spec 2.4, but sent by servers: kept, and updated_at is the record's version.
  created_at: opt(timestamp),
  fulfillment_holds: opt(z.array(FulfillmentHold)),
  id: intId,
  line_items: opt(z.array(FulfillmentOrderLineItem)),
  merchant_requests: opt(z.array(MerchantRequest)),
  order_number: opt(z.string()),
  request_status: opt(openEnum),
  shipping_address: opt(ShippingAddress),
  shipping_method: opt(z.looseObject({ code: opt(z.string()), name: opt(z.string()) })),
  status: opt(openEnum),
  // Item type not shown (2.11): kept as it comes.
  supported_actions: opt(z.array(z.unknown())),
  updated_at: opt(timestamp),
});

export const FulfillmentOrderMove = z.looseObject({
  moved_fulfillment_order: FulfillmentOrder,
  original_fulfillment_order: FulfillmentOrder,
});

export const VariantPrice = z.looseObject({
  currency: opt(z.string()),
  price: opt(decimalText),
  retail: opt(decimalText),
  subscription: opt(decimalText),
  subscription_suggested_downsell: opt(decimalText),
});

export const VariantStockrecord = z.looseObject({
  id: intId,
  location_id: opt(intId),
  low_stock_threshold: opt(integer),
  num_allocated: opt(integer),
  num_in_stock: opt(integer),
});

export const Variant = z.looseObject({
  allow_backorders: opt(z.boolean()),
  date_created: opt(timestamp),
  date_updated: opt(timestamp),
  id: intId,
  images: opt(z.string()),
  inventory_availability: opt(openEnum),
  metadata: opt(freeObject),
  prices: opt(z.array(VariantPrice)),
  product_id: opt(intId),
  purchase_availability: opt(openEnum),
  requires_shipping: opt(z.boolean()),
  sku: opt(z.string()),
  stockrecords: opt(z.array(VariantStockrecord)),
  title: opt(z.string()),
  track_stock: opt(z.boolean()),
  unit_cost: opt(decimalText),
  upc: opt(z.string()),
  variant_attribute_values: opt(
    z.array(z.looseObject({ code: opt(z.string()), name: opt(z.string()), value: opt(z.string()) })),
  ),
});

export const Product = z.looseObject({
  categories: opt(z.array(Category)),
  /** 2023-02-10: the product's variants (2024-04-01: variants). */
  children: opt(z.array(Variant)),
  date_created: opt(timestamp),
  date_updated: opt(timestamp),
  enable_subscription: opt(z.boolean()),
  external_tax_code: opt(z.string()),
  id: intId,
  images: opt(z.array(Image)),
  interval: opt(openEnum),
  interval_counts: opt(z.array(integer)),
  is_discountable: opt(z.boolean()),
  is_public: opt(z.boolean()),
  metadata: opt(freeObject),
  ranking: opt(integer),
  rating: opt(z.number()),
  recommended_products: opt(z.array(intId)),
  slug: opt(z.string()),
  structure: opt(openEnum),
  title: opt(z.string()),
  url: opt(url),
  variant_attributes: opt(
    z.array(
      z.looseObject({ code: opt(z.string()), name: opt(z.string()), values: opt(z.array(z.string())) }),
    ),
  ),
  variants: opt(z.array(Variant)),
});

export const SubscriptionLine = z.looseObject({
  id: intId,
  metadata: opt(freeObject),
  price: opt(decimalText),
  product: opt(EmbeddedProduct),
  quantity: opt(integer),
  stockrecord: opt(EmbeddedStockrecord),
});

export const Subscription = z.looseObject({
  attribution: opt(Attribution),
  billing_address: opt(BillingAddress),
  cancel_reason: opt(z.string()),
  cancel_reason_other_message: opt(z.string()),
  currency: opt(z.string()),
  date_created: opt(timestamp),
  frequency: opt(z.string()),
  id: intId,
  interval: opt(z.string()),
  interval_count: opt(integer),
  is_tax_known: opt(z.boolean()),
  is_test: opt(z.boolean()),
  lines: opt(z.array(SubscriptionLine)),
  next_renewal_date: opt(timestamp),
  num_lines: opt(integer),
  num_orders: opt(integer),
  orders: opt(z.array(z.looseObject({ billing_cycle: opt(integer), order_number: opt(z.string()) }))),
  payment_details: opt(freeObject),
  payment_method: opt(z.string()),
  shipping_address: opt(ShippingAddress),
  shipping_code: opt(z.string()),
  shipping_price: opt(decimalText),
  status: opt(openEnum),
  total: opt(decimalText),
  user: opt(User),
});

export const METADATA_OBJECTS = [
  'attribution',
  'customer',
  'dispute',
  'line',
  'order',
  'product',
  'variant',
  'blog',
  'page',
] as const;
export const METADATA_TYPES = [
  'text',
  'integer',
  'decimal',
  'rich_text',
  'multi_text',
  'file',
  'boolean',
] as const;

export const MetadataDefinition = z.looseObject({
  created_at: opt(timestamp),
  enable_export: opt(z.boolean()),
  enable_filter: opt(z.boolean()),
  id: intId,
  key: opt(z.string()),
  name: opt(z.string()),
  // Listed values in 2.9, but response enums stay open so a new value is kept, not rejected.
  object: opt(openEnum),
  type: opt(openEnum),
  updated_at: opt(timestamp),
  validations: opt(z.array(z.looseObject({ type: opt(openEnum), value: opt(z.string()) }))),
});

export const TicketAttachment = z.looseObject({ file: opt(url), file_name: opt(z.string()), id: intId });

export const TicketComment = z.looseObject({
  attachments: opt(z.array(TicketAttachment)),
  author: opt(intId),
  body: opt(z.string()),
  created_at: opt(timestamp),
  from_email: opt(z.string()),
  id: intId,
  is_public: opt(z.boolean()),
});

export const Ticket = z.looseObject({
  assignee: opt(intId),
  channel: opt(openEnum),
  comments: opt(z.array(TicketComment)),
  created_at: opt(timestamp),
  from_email: opt(z.string()),
  id: intId,
  order: opt(z.string()),
  priority: opt(openEnum),
  products: opt(z.array(intId)),
  requester: opt(intId),
  status: opt(openEnum),
  subject: opt(z.string()),
  tags: opt(z.array(z.string())),
  ticket_type: opt(intId),
  updated_at: opt(timestamp),
});

export type CartLine = z.infer<typeof CartLine>;
export type Cart = z.infer<typeof Cart>;
export type FulfillmentOrderLineItem = z.infer<typeof FulfillmentOrderLineItem>;
export type FulfillmentOrder = z.infer<typeof FulfillmentOrder>;
export type FulfillmentOrderMove = z.infer<typeof FulfillmentOrderMove>;
export type Variant = z.infer<typeof Variant>;
export type Product = z.infer<typeof Product>;
export type SubscriptionLine = z.infer<typeof SubscriptionLine>;
export type Subscription = z.infer<typeof Subscription>;
export type MetadataDefinition = z.infer<typeof MetadataDefinition>;
export type Ticket = z.infer<typeof Ticket>;
