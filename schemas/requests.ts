import * as z from 'zod';
import { freeObject, integer, intId, queryDate, requestDecimal, timestamp } from './primitives.js';
import { LocationAddress } from './shared.js';

/**
 * Request bodies (part 4) and list queries, with the limits of part 8 and the closed request enums of
 * parts 3 and 4. Nested shapes the spec does not show (4.9) are accepted as objects; the sandbox's
 * choices for them are documented in docs/sandbox.md.
 */

export const PAYMENT_METHODS = [
  'card_token',
  'saved_card',
  'apple_pay',
  'google_pay',
  'external',
  'paypal',
  'affirm',
  'bancontact',
  'giropay',
  'ideal',
  'klarna',
  'link',
  'sepa_debit',
  'sofort',
  'twint',
] as const;
export const ORDER_STATUSES = ['open', 'archived', 'canceled'] as const;
export const FULFILLMENT_STATUSES = [
  'not_required',
  'unfulfilled',
  'on_hold',
  'rejected',
  'processing',
  'fulfilled',
  'incomplete',
] as const;
export const CARRIERS = [
  'amazon',
  'asendia',
  'australia_post',
  'china_post',
  'deutsche_de',
  'dhl',
  'dhl_ecommerce',
  'fedex',
  'firstmile',
  '4px',
  'gofo_express',
  'hermesworld_uk',
  'myhermes',
  'ontrac',
  'other',
  'royal_mail',
  'speedx',
  'swiss_post',
  'ulala',
  'uniuni',
  'ups',
  'usps',
  'yunexpress',
] as const;
export const SUBSCRIPTION_STATUSES = ['active', 'past_due', 'canceled', 'retrying'] as const;
export const ASSIGNMENT_STATUSES = [
  'fulfillment_unrequested',
  'fulfillment_requested',
  'fulfillment_accepted',
  'cancellation_requested',
] as const;
export const RECOVERIES_SOURCES = [
  'account_updater',
  'dashboard',
  'email_automation',
  'other',
  'retries',
  'storefront',
] as const;
export const GATEWAY_STATUSES = ['active', 'inactive'] as const;
export const CARD_TYPES = [
  'visa',
  'mastercard',
  'american_express',
  'diners_club',
  'discover',
  'jcb',
  'maestro',
  'dankort',
] as const;
export const SUBSCRIPTION_PAYMENT_METHODS = [
  'apple_pay',
  'bankcard',
  'google_pay',
  'klarna',
  'paypal',
  'twint',
] as const;

import { METADATA_OBJECTS, METADATA_TYPES } from './resources.js';

const object = z.looseObject({});
const nullableObject = object.nullable();

const orderLineInput2024 = z.looseObject({ product_id: intId, quantity: integer.min(1) });
const orderLineInput2023 = z.looseObject({ product_id: intId.optional(), quantity: integer.min(1) });

const orderCreateFields = {
  attribution: object.optional(),
  billing_address: nullableObject.optional(),
  billing_same_as_shipping_address: z.boolean().optional(),
  date_placed: timestamp.nullable().optional(),
  metadata: freeObject.nullable().optional(),
  offers: z.array(z.unknown()).optional(),
  payment_details: nullableObject.optional(),
  payment_method: z.enum(PAYMENT_METHODS).nullable().optional(),
  send_receipt: z.boolean().optional(),
  shipping_address: nullableObject.optional(),
  shipping_code: z.string().nullable().optional(),
  shipping_price: requestDecimal.optional(),
  status: z.enum(ORDER_STATUSES).nullable().optional(),
  tags: z.array(z.string()).optional(),
  use_default_billing_address: z.boolean().optional(),
  use_default_shipping_address: z.boolean().optional(),
  user: object.optional(),
  vouchers: z.array(z.unknown()).nullable().optional(),
};

export const OrderCreate2024Request = z.looseObject({
  ...orderCreateFields,
  lines: z.array(orderLineInput2024).min(1, { message: 'expected at least one line' }),
  currency: z.string().max(3, { message: 'expected at most 3 characters' }).optional(),
});

export const OrderCreate2023Request = z.looseObject({
  ...orderCreateFields,
  lines: z.array(orderLineInput2023).min(1, { message: 'expected at least one line' }),
  currency: z.undefined({ message: 'currency is accepted only by version 2024-04-01' }).optional(),
});

export const OrderPatchRequest = z.looseObject({
  attribution: object.optional(),
  billing_address: nullableObject.optional(),
  fulfillment_status: z.enum(FULFILLMENT_STATUSES).optional(),
  metadata: freeObject.nullable().optional(),
  shipping_address: nullableObject.optional(),
  status: z.string().max(100, { message: 'expected at most 100 characters' }).optional(),
  tags: z.array(z.string()).optional(),
});

export const MarkAsPaidRequest = z.looseObject({
  // Type and values not shown (4.1): a string or null is accepted.
  external_payment_method: z.string().nullable().optional(),
});

export const OrderFulfillmentCreateRequest = z.looseObject({
  carrier: z.enum(CARRIERS).nullable().optional(),
  lines: z
    .array(z.looseObject({ id: intId, quantity: integer.min(1).optional() }))
    .nullable()
    .optional(),
  send_shipped_notification: z.boolean().nullable().optional(),
  tracking_code: z.string().nullable().optional(),
  tracking_link: z.string().nullable().optional(),
});

const cartLineInput = z.looseObject({ product_id: intId, quantity: integer.min(1) });

export const CartCreateRequest = z.looseObject({
  lines: z.array(cartLineInput),
  attribution: object.optional(),
  currency: z.string().max(3, { message: 'expected at most 3 characters' }).optional(),
  metadata: freeObject.nullable().optional(),
  user: object.optional(),
  vouchers: z.array(z.unknown()).nullable().optional(),
});

export const CartUpdateRequest = z.looseObject({
  lines: z.array(cartLineInput),
  attribution: object.optional(),
  metadata: freeObject.nullable().optional(),
  vouchers: z.array(z.unknown()).nullable().optional(),
});

export const VariantUpdateRequest = z.looseObject({
  variant_attribute_values: z.array(z.looseObject({ name: z.string(), value: z.string() })),
  allow_backorders: z.boolean().optional(),
  image: z.unknown().optional(),
  metadata: freeObject.nullable().optional(),
  prices: z.array(z.unknown()).optional(),
  requires_shipping: z.boolean().optional(),
  sku: z.string().nullable().optional(),
  track_stock: z.boolean().optional(),
  unit_cost: requestDecimal.nullable().optional(),
  upc: z.string().nullable().optional(),
});

export const FulfillmentOrderMoveRequest = z.looseObject({
  new_location_id: intId,
  fulfillment_order_line_items: z.array(z.looseObject({ id: intId, quantity: integer.min(1) })).optional(),
});

export const FulfillmentOrderCloseRequest = z.looseObject({ message: z.string().optional() });

export const FulfillmentOrderFulfillRequest = z.looseObject({
  fulfillment_order_line_items: z.array(z.looseObject({ id: intId, quantity: integer.min(1) })).optional(),
  notify: z.boolean().optional(),
  tracking_info: z.array(z.looseObject({})).optional(),
});

export const LocationCreateRequest = z.looseObject({
  address: LocationAddress,
  accept_return: z.boolean().optional(),
  callback_url: z.url({ message: 'expected an absolute URI' }).nullable().optional(),
  name: z.string().max(128, { message: 'expected at most 128 characters' }).optional(),
});

// ---- list queries: values arrive as strings; arrays repeat the parameter or separate values by commas.

type QueryValue = string | string[] | undefined;
const flatten = (value: unknown): unknown =>
  value === undefined
    ? undefined
    : (Array.isArray(value) ? value : [value]).flatMap((v) => String(v).split(','));
const single = (value: unknown): unknown => (Array.isArray(value) ? value[value.length - 1] : value);

export const queryArray = <T extends readonly [string, ...string[]]>(values?: T) =>
  z.preprocess(flatten, z.array(values ? z.enum(values) : z.string().min(1))).optional();
export const queryString = z.preprocess(single, z.string()).optional();
export const queryBool = z
  .preprocess(single, z.enum(['true', 'false'], { message: 'expected true or false' }))
  .transform((v) => v === 'true')
  .optional();
export const queryDay = z.preprocess(single, queryDate).optional();
export const queryEnum = <T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(single, z.enum(values)).optional();

const cursor = { cursor: queryString };

export const ProductsQuery = z.looseObject({
  title: queryString,
  category: queryArray(),
  range: queryArray(),
  is_public: queryBool,
  is_gift_card: queryBool,
  sku: queryArray(),
  ...cursor,
});

export const SubscriptionsQuery = z.looseObject({
  search_text: queryString,
  address: queryString,
  order_number: queryString,
  customer_email: queryString,
  customer_phone_number: queryString,
  cancel_reason: queryString,
  date_from: queryDay,
  date_to: queryDay,
  next_renewal_date_from: queryDay,
  next_renewal_date_to: queryDay,
  cancel_date_from: queryDay,
  cancel_date_to: queryDay,
  recoveries_date_from: queryDay,
  recoveries_date_to: queryDay,
  status: queryArray(SUBSCRIPTION_STATUSES),
  product: queryArray(),
  sku: queryArray(),
  gateway: queryArray(),
  card_type: queryArray(CARD_TYPES),
  recoveries_source: queryEnum(RECOVERIES_SOURCES),
  funnels: queryArray(),
  agents: queryArray(),
  utm_source: queryString,
  utm_campaign: queryString,
  utm_term: queryString,
  utm_content: queryString,
  affiliate: queryString,
  subaffiliate1: queryString,
  subaffiliate2: queryString,
  subaffiliate3: queryString,
  subaffiliate4: queryString,
  subaffiliate5: queryString,
  is_test: queryBool,
  payment_method: queryArray(SUBSCRIPTION_PAYMENT_METHODS),
  gateway_status: queryEnum(GATEWAY_STATUSES),
  ...cursor,
});

export const AssignedFulfillmentOrdersQuery = z.looseObject({
  location_id: queryString,
  assignment_status: queryEnum(ASSIGNMENT_STATUSES),
  date_created_from: queryDay,
  date_created_to: queryDay,
  ...cursor,
});

export const LocationsQuery = z.looseObject({ ...cursor });

export const MetadataQuery = z.looseObject({
  name: queryString,
  object: queryArray(METADATA_OBJECTS),
  metadata_key: queryString,
  type: queryArray(METADATA_TYPES),
  enable_export: queryBool,
  enable_filter: queryBool,
  ...cursor,
});

export type QueryInput = Record<string, QueryValue>;
export type OrderCreate2024Request = z.infer<typeof OrderCreate2024Request>;
export type OrderCreate2023Request = z.infer<typeof OrderCreate2023Request>;
export type OrderPatchRequest = z.infer<typeof OrderPatchRequest>;
export type OrderFulfillmentCreateRequest = z.infer<typeof OrderFulfillmentCreateRequest>;
export type CartCreateRequest = z.infer<typeof CartCreateRequest>;
export type CartUpdateRequest = z.infer<typeof CartUpdateRequest>;
export type VariantUpdateRequest = z.infer<typeof VariantUpdateRequest>;
export type FulfillmentOrderMoveRequest = z.infer<typeof FulfillmentOrderMoveRequest>;
export type FulfillmentOrderFulfillRequest = z.infer<typeof FulfillmentOrderFulfillRequest>;
export type LocationCreateRequest = z.infer<typeof LocationCreateRequest>;
export type ProductsQuery = z.infer<typeof ProductsQuery>;
export type SubscriptionsQuery = z.infer<typeof SubscriptionsQuery>;
export type AssignedFulfillmentOrdersQuery = z.infer<typeof AssignedFulfillmentOrdersQuery>;
export type MetadataQuery = z.infer<typeof MetadataQuery>;
