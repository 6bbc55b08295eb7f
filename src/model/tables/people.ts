import {
  attributionFields,
  billingAddressFields,
  bool,
  col,
  embeddedProductDetailFields,
  embeddedProductFields,
  embeddedStockrecordFields,
  flatten,
  id,
  index,
  int,
  json,
  money,
  reading,
  reportCurrency,
  shippingAddressFields,
  text,
  ts,
  unitPriceInclTax,
  userFields,
  voucherDiscountFields,
} from '../columns.js';
import type { TableDef } from '../types.js';

/** Customers, subscriptions (2.8), carts (2.3), metadata definitions (2.9) and support tickets (2.10). */

const customers: TableDef = {
  name: 'customers',
  comment:
    'One row per customer id, from every `user` object seen in orders, carts and subscriptions. The sighting ' +
    'with the latest seen_at wins; among equal times, the greatest (seen_in, seen_in_order, seen_in_id), so ' +
    'that the winner does not depend on which stream a sync read first; the same sighting or missing times ' +
    'go to the one received last.',
  key: ['_store', 'id'],
  entity: 'customer',
  // Orders, subscriptions and carts sync concurrently: an order and a subscription stamped with the same
  // second arrive in either order, and a resumed run must reproduce an uninterrupted one.
  unit: {
    key: 'id',
    version: 'seen_at',
    ties: ['seen_in', 'seen_in_order', 'seen_in_id'],
    sighted: true,
  },
  columns: [
    ...userFields(),
    ts(
      'seen_at',
      'Time of the document the winning sighting came from (order updated_at, cart created_at, subscription date_created).',
    ),
    text('seen_in', 'Kind of document the winning sighting came from: order, cart or subscription.'),
    text('seen_in_order', 'Number of that order, when the sighting came from an order.'),
    id('seen_in_id', 'Id of that cart or subscription, when the sighting came from one.'),
  ],
};

const subscriptions: TableDef = {
  name: 'subscriptions',
  comment: 'Subscriptions, from GET /subscriptions/ (incremental windows plus periodic full scans).',
  key: ['_store', 'id'],
  entity: 'subscription',
  unit: { key: 'id' },
  fullScan: true,
  created: 'date_created',
  columns: [
    id('id', 'Subscription id.'),
    text('status', 'Status.'),
    ts('date_created', 'When the subscription was created.'),
    ts('next_renewal_date', 'Next renewal.'),
    text('frequency', 'Frequency.'),
    text('interval', 'Interval.'),
    int('interval_count', 'Intervals between renewals.'),
    text('currency', 'Currency.'),
    money(
      'total',
      reading(
        "Amount of one renewal before tax: the lines' price × quantity plus shipping_price (is_tax_known says whether tax is known).",
      ),
    ),
    money(
      'shipping_price',
      reading('Shipping charged per renewal, excluding tax.') +
        ' General money, not the 2-decimal pattern of the order-create request field: ' +
        'three-decimal currencies (KWD) send e.g. 4.625.',
    ),
    text('shipping_code', 'Shipping rate code.'),
    bool('is_tax_known', 'Whether tax is known.'),
    bool('is_test', 'Whether it is a test subscription.'),
    int('num_lines', 'Number of lines.'),
    int('num_orders', 'Number of orders so far.'),
    text('cancel_reason', 'Cancellation reason.'),
    text('cancel_reason_other_message', 'Free-text cancellation reason.'),
    text('payment_method', 'Payment method.'),
    json('payment_details', 'Payment details as received (free-form; keys not given by the spec).'),
    ...flatten('billing_', 'billing_address', 'Billing address', billingAddressFields()),
    ...flatten('shipping_', 'shipping_address', 'Shipping address', shippingAddressFields()),
    ...flatten('user_', 'user', 'Customer', userFields()),
    ...flatten('attribution_', 'attribution', 'Attribution', attributionFields()),
  ],
};

const subOwner = { table: 'subscriptions', column: 'subscription_id' };

const subscriptionLines: TableDef = {
  name: 'subscription_lines',
  comment: 'Lines of subscriptions; sku comes from the embedded stockrecord (partner_sku).',
  key: ['_store', 'subscription_id', 'id'],
  entity: 'subscription',
  parent: 'subscriptions',
  owner: subOwner,
  fullScan: true,
  columns: [
    id('subscription_id', 'Subscription id.', '$.id'),
    id('id', 'Line id.'),
    int('quantity', 'Units per renewal.'),
    money(
      'price',
      reading(
        'Price of one unit per renewal (the subscription price), excluding tax: a unit price, unlike the price_* of order and cart lines; the line amounts to price × quantity.',
      ),
    ),
    text('sku', 'Stock keeping unit (stockrecord.partner_sku).', 'stockrecord.partner_sku'),
    json('metadata', 'Free-form line metadata.'),
    ...embeddedProductFields(),
    ...embeddedStockrecordFields(),
  ],
};

const subscriptionOrders: TableDef = {
  name: 'subscription_orders',
  comment: 'Orders of subscriptions with their billing cycle.',
  key: ['_store', 'subscription_id', 'index'],
  entity: 'subscription',
  parent: 'subscriptions',
  owner: subOwner,
  fullScan: true,
  columns: [
    id('subscription_id', 'Subscription id.', '$.id'),
    index(),
    text('order_number', 'Order number.'),
    int('billing_cycle', 'Billing cycle the order paid for.'),
  ],
};

const metadataDefinitions: TableDef = {
  name: 'metadata_definitions',
  comment: 'Metadata definitions, from full scans of GET /metadata/.',
  key: ['_store', 'id'],
  entity: 'metadata_definition',
  unit: { key: 'id', version: 'updated_at' },
  fullScan: true,
  columns: [
    id('id', 'Definition id.'),
    text('key', 'Metadata key.'),
    text('name', 'Name.'),
    text('object', 'Object type it applies to.'),
    text('type', 'Value type.'),
    bool('enable_export', 'Whether it is exported.'),
    bool('enable_filter', 'Whether it can be filtered on.'),
    ts('created_at', 'When it was created.'),
    ts('updated_at', 'When it last changed.'),
  ],
};

const metadataDefinitionValidations: TableDef = {
  name: 'metadata_definition_validations',
  comment: 'Validations of metadata definitions.',
  key: ['_store', 'metadata_definition_id', 'index'],
  entity: 'metadata_definition',
  parent: 'metadata_definitions',
  owner: { table: 'metadata_definitions', column: 'metadata_definition_id' },
  fullScan: true,
  columns: [
    id('metadata_definition_id', 'Definition id.', '$.id'),
    index(),
    text('type', 'Validation type (open enum).'),
    text('value', 'Validation value.'),
  ],
};

/** A cart's totals (the sandbox's carts.ts `render`), shared by the columns and their `report_` twins. */
const cartMoney = () => [
  money(
    'total_cost',
    reading(
      "Cost of goods of the cart: the sum of its lines' total_cost. What the goods cost the store, not revenue.",
    ),
  ),
  money(
    'total_discount',
    reading("Voucher discounts of the cart, excluding tax: the sum of its lines' total_discount."),
  ),
  money(
    'total_excl_tax',
    reading("Cart total excluding tax, after discounts: the sum of its lines' price_excl_tax (line totals)."),
  ),
  money(
    'total_incl_tax',
    reading(
      "Cart total including tax, after discounts: the sum of its lines' price_incl_tax. A cart with no address bears no tax: equal to total_excl_tax.",
    ),
  ),
];

/** A cart line's money (carts.ts `render`), shared by the columns and their `report_` twins. */
const cartLineMoney = () => [
  money(
    'price_excl_tax',
    reading(
      'Line total excluding tax, after discounts: unit price × quantity − total_discount. Not a unit price.',
    ),
  ),
  money(
    'price_incl_tax',
    reading(
      'Line total including tax, after discounts; equal to price_excl_tax while the cart bears no tax. Not a unit price: see unit_price_incl_tax.',
    ),
  ),
];
const cartLineCost = () => [
  money(
    'total_cost',
    reading('Cost of goods of the line: unit_cost × quantity. What the goods cost the store, not revenue.'),
  ),
  money('total_discount', reading("The line's share of the cart's voucher discounts, excluding tax.")),
  money('unit_cost', reading('Cost of goods of one unit (what it costs the store), not a selling price.')),
];

const carts: TableDef = {
  name: 'carts',
  comment: 'Carts, from cart documents (create and update responses); the last one received wins.',
  key: ['_store', 'id'],
  entity: 'cart',
  unit: { key: 'id' },
  columns: [
    id('id', 'Cart id.'),
    text('status', 'Status (open enum).'),
    bool('abandoned', 'Whether the cart was abandoned.'),
    ts('created_at', 'When the cart was created (2023-02-10: date_created).', 'created_at|date_created'),
    text('checkout_url', 'Checkout URL.'),
    text('currency', 'Currency.'),
    ...cartMoney(),
    money(
      'total_tax',
      'Tax of the cart (2023-02-10 carts only). The sandbox sends no 2023-02-10 carts, so how it adds up is unverified: check it against total_incl_tax − total_excl_tax on your store.',
    ),
    json('metadata', 'Free-form cart metadata.'),
    ...flatten('report_', 'report_values', 'In the reporting currency', [reportCurrency(), ...cartMoney()]),
    ...flatten('user_', 'user', 'Customer', userFields()),
    ...flatten('attribution_', 'attribution', 'Attribution', attributionFields()),
  ],
};

const cartOwner = { table: 'carts', column: 'cart_id' };

const cartLines: TableDef = {
  name: 'cart_lines',
  comment:
    'Lines of carts of both shapes. A 2023-02-10 line fills product_id, product_title and product_url from its ' +
    'embedded product and sku from its stockrecord, as an order line of that shape does; columns a shape ' +
    'lacks are NULL.',
  key: ['_store', 'cart_id', 'id'],
  entity: 'cart',
  parent: 'carts',
  owner: cartOwner,
  columns: [
    id('cart_id', 'Cart id.', '$.id'),
    id('id', 'Line id.'),
    id('product_id', 'Product id (2023-02-10: product.id).', 'product_id|product.id'),
    id('variant_id', 'Variant id.'),
    text('product_title', 'Product title (2023-02-10: product.title).', 'product_title|product.title'),
    text('variant_title', 'Variant title.'),
    text('product_image', 'Product image URL.'),
    text('product_url', 'Product page URL (2023-02-10: product.url).', 'product_url|product.url'),
    text('sku', 'Stock keeping unit (2023-02-10: stockrecord.partner_sku).', 'sku|stockrecord.partner_sku'),
    int('quantity', 'Units in the cart: the line totals (price_*, total_cost) are for this many units.'),
    text('interval', 'Subscription interval.'),
    int('interval_count', 'Subscription interval count.'),
    bool('is_upsell', 'Whether the line was an upsell.'),
    text('currency', 'Currency.'),
    ...cartLineMoney(),
    unitPriceInclTax(),
    ...cartLineCost(),
    json('metadata', 'Free-form line metadata.'),
    // Read by field, not by shape: a cart says no version of its own, so its shape is not known when it
    // comes bare, and the 2024-04-01 line has none of these fields.
    ...embeddedProductDetailFields(),
    ...embeddedStockrecordFields(),
    ...flatten('report_', 'report_values', 'In the reporting currency', [
      reportCurrency(),
      ...cartLineMoney(),
      ...cartLineCost(),
    ]),
  ],
};

const cartDiscounts: TableDef = {
  name: 'cart_discounts',
  comment: 'Voucher discounts of carts.',
  key: ['_store', 'cart_id', 'index'],
  entity: 'cart',
  parent: 'carts',
  owner: cartOwner,
  columns: [
    id('cart_id', 'Cart id.', '$.id'),
    index(),
    ...voucherDiscountFields(
      "Discount for the whole cart, excluding tax, spread over the lines' total_discount (their sum is carts.total_discount).",
    ),
  ],
};

const tickets: TableDef = {
  name: 'tickets',
  comment:
    'Support tickets, from ticket documents (attachment upload responses); the newest by updated_at wins.',
  key: ['_store', 'id'],
  entity: 'ticket',
  unit: { key: 'id', version: 'updated_at' },
  columns: [
    id('id', 'Ticket id.'),
    text('subject', 'Subject.'),
    text('status', 'Status (open enum).'),
    text('priority', 'Priority (open enum).'),
    text('channel', 'Channel (open enum).'),
    id('ticket_type', 'Ticket type id.'),
    text('order_number', 'Order the ticket is about (spec field `order`).', 'order'),
    id('requester', 'Id of the requester.'),
    id('assignee', 'Id of the assignee.'),
    text('from_email', 'Email the ticket came from.'),
    col('products', 'BIGINT[]', 'Ids of the products concerned.'),
    col('tags', 'VARCHAR[]', 'Tags.'),
    ts('created_at', 'When the ticket was created.'),
    ts('updated_at', 'When the ticket last changed.'),
  ],
};

const ticketOwner = { table: 'tickets', column: 'ticket_id' };

const ticketComments: TableDef = {
  name: 'ticket_comments',
  comment: 'Comments on support tickets.',
  key: ['_store', 'ticket_id', 'id'],
  entity: 'ticket',
  parent: 'tickets',
  owner: ticketOwner,
  columns: [
    id('ticket_id', 'Ticket id.', '$.id'),
    id('id', 'Comment id.'),
    id('author', 'Id of the author.'),
    text('from_email', 'Email the comment came from.'),
    text('body', 'Text.'),
    bool('is_public', 'Whether the customer sees it.'),
    ts('created_at', 'When it was written.'),
  ],
};

const ticketAttachments: TableDef = {
  name: 'ticket_attachments',
  comment: 'Files attached to ticket comments.',
  key: ['_store', 'ticket_id', 'comment_id', 'id'],
  entity: 'ticket',
  parent: 'ticket_comments',
  owner: ticketOwner,
  columns: [
    id('ticket_id', 'Ticket id.', '$.id'),
    id('comment_id', 'Comment id.', '^.id'),
    id('id', 'Attachment id.'),
    text('file_name', 'File name.'),
    text('file', 'File URL.'),
  ],
};

export const peopleTables: TableDef[] = [
  customers,
  subscriptions,
  subscriptionLines,
  subscriptionOrders,
  metadataDefinitions,
  metadataDefinitionValidations,
  carts,
  cartLines,
  cartDiscounts,
  tickets,
  ticketComments,
  ticketAttachments,
];
