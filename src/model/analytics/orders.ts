import { type AnalyticsModel, exactUnit, utcDay } from './types.js';

/**
 * Orders, their lines and the daily sales built on them, over both order shapes. Every amount is in the
 * order's currency and exact (DECIMAL): these are sums and differences of the order and refund columns whose
 * meanings docs/warehouse.md ("Money") states, never conversions or divisions.
 */

const PLACED_AT = 'coalesce(o.date_placed, o.created_at)';
/** Line goods before discounts, excluding tax: the order's undiscounted total less its undiscounted shipping. */
const GROSS = '(o.original_total_excl_tax - coalesce(o.original_shipping_excl_tax, o.shipping_excl_tax))';
/** Line goods after discounts, excluding tax. */
const SUBTOTAL = '(o.total_excl_tax - o.shipping_excl_tax)';
const REFUNDS = '(coalesce(rl.amount_excl_tax, 0) + coalesce(ra.amount_excl_tax, 0))';

export const fctOrders: AnalyticsModel = {
  name: 'fct_orders',
  comment:
    'One row per order in `orders` (documents captured by ingest or the receiver, of either API shape), in the ' +
    'order currency, exact. gross = the lines before discounts, excluding tax; discounts = the line discounts, ' +
    'excluding tax (gross minus the lines after discounts); shipping = shipping charged, excluding tax; tax = ' +
    'all tax charged; refunds = what was given back, excluding tax (refunded line items plus refund ' +
    'adjustments such as refunded shipping); net = gross - discounts + shipping - refunds (= total_excl_tax - ' +
    'refunds): revenue excluding tax, after discounts and refunds. Test and canceled orders are kept: filter ' +
    'on is_test and status. Orders the store has but nobody captured are not here: see order_coverage.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'number', comment: 'Order number.' },
    { name: 'api_version', comment: 'Shape of the document the order came from: 2023-02-10 or 2024-04-01.' },
    { name: 'placed_at', comment: 'When the order was placed (date_placed; created_at when that is NULL).' },
    { name: 'placed_date', comment: 'The UTC day of placed_at.' },
    { name: 'currency', comment: 'Order currency: every amount of the row is in it.' },
    { name: 'customer_id', comment: 'Customer id (orders.user_id; see customers); NULL for a guest order.' },
    { name: 'status', comment: 'Order status (open enum: open, archived, canceled …).' },
    { name: 'payment_status', comment: 'Payment status (open enum).' },
    { name: 'is_test', comment: 'Whether it is a test order.' },
    {
      name: 'gross',
      comment:
        'Line goods before discounts, excluding tax: original_total_excl_tax - original_shipping_excl_tax ' +
        '(shipping_excl_tax when the original is NULL).',
    },
    {
      name: 'discounts',
      comment:
        'Line discounts, excluding tax: gross - (total_excl_tax - shipping_excl_tax); equal to ' +
        'orders.total_discount where the 2024-04-01 shape gives it.',
    },
    { name: 'shipping', comment: 'Shipping charged, excluding tax (after any shipping discount).' },
    { name: 'tax', comment: 'Tax charged on lines and shipping (orders.total_tax).' },
    { name: 'total_excl_tax', comment: 'gross - discounts + shipping (orders.total_excl_tax).' },
    {
      name: 'total_incl_tax',
      comment: 'What the customer was charged: total_excl_tax + tax (orders.total_incl_tax).',
    },
    {
      name: 'refunds',
      comment:
        'Given back, excluding tax: the refund lines amount_excl_tax plus the refund adjustments ' +
        'amount_excl_tax (refunded shipping); 0 when there were none.',
    },
    {
      name: 'refunds_incl_tax',
      comment: 'Given back, including tax: the refunds total_refund_amount; 0 when there were none.',
    },
    { name: 'net', comment: 'Revenue excluding tax after discounts and refunds: total_excl_tax - refunds.' },
    {
      name: 'is_first_order',
      comment:
        "Whether this is the customer's first non-test order in this warehouse (by placed_at, then number). " +
        'Only captured orders count, so an earlier order nobody captured is not seen. NULL for guest and test orders.',
    },
    {
      name: 'order_source',
      comment: 'How the order reached the warehouse: captured (a document, from ingest or the receiver).',
    },
    {
      name: 'subscription_id',
      comment:
        'The subscription the order renews (its first order_subscriptions entry); NULL for a one-off order.',
    },
    { name: 'billing_cycle', comment: 'The billing cycle of that subscription the order paid for.' },
  ],
  sql: `
WITH refund_lines AS (
  SELECT _store, order_number, sum(amount_excl_tax) AS amount_excl_tax
  FROM order_refund_lines GROUP BY _store, order_number
), refund_adjustments AS (
  SELECT _store, order_number, sum(amount_excl_tax) AS amount_excl_tax
  FROM order_refund_adjustments GROUP BY _store, order_number
), refunds AS (
  SELECT _store, order_number, sum(total_refund_amount) AS amount_incl_tax
  FROM order_refunds GROUP BY _store, order_number
), renews AS (
  SELECT _store, order_number, arg_min(subscription_id, "index") AS subscription_id,
         arg_min(billing_cycle, "index") AS billing_cycle
  FROM order_subscriptions GROUP BY _store, order_number
)
SELECT
  o._store,
  o.number,
  o.api_version,
  ${PLACED_AT} AS placed_at,
  ${utcDay(PLACED_AT)} AS placed_date,
  o.currency,
  o.user_id AS customer_id,
  o.status,
  o.payment_status,
  o.is_test,
  CAST(${GROSS} AS DECIMAL(18,3)) AS gross,
  CAST(${GROSS} - ${SUBTOTAL} AS DECIMAL(18,3)) AS discounts,
  o.shipping_excl_tax AS shipping,
  o.total_tax AS tax,
  o.total_excl_tax,
  o.total_incl_tax,
  CAST(${REFUNDS} AS DECIMAL(18,3)) AS refunds,
  CAST(coalesce(r.amount_incl_tax, 0) AS DECIMAL(18,3)) AS refunds_incl_tax,
  CAST(o.total_excl_tax - ${REFUNDS} AS DECIMAL(18,3)) AS net,
  CASE WHEN o.user_id IS NOT NULL AND o.is_test IS NOT TRUE THEN
    row_number() OVER (
      PARTITION BY o._store, o.user_id, o.is_test IS TRUE ORDER BY ${PLACED_AT} NULLS LAST, o.number
    ) = 1
  END AS is_first_order,
  'captured' AS order_source,
  s.subscription_id,
  s.billing_cycle
FROM orders o
LEFT JOIN refund_lines rl ON rl._store = o._store AND rl.order_number = o.number
LEFT JOIN refund_adjustments ra ON ra._store = o._store AND ra.order_number = o.number
LEFT JOIN refunds r ON r._store = o._store AND r.order_number = o.number
LEFT JOIN renews s ON s._store = o._store AND s.order_number = o.number`,
};

const LINE_GROSS = 'coalesce(l.original_price_excl_tax, l.price_excl_tax_excl_discounts)';

export const fctOrderLines: AnalyticsModel = {
  name: 'fct_order_lines',
  comment:
    'One row per order line of either shape, in its order currency, exact. Line totals are for all the ' +
    "line's units (price_excl_tax and price_incl_tax of order_lines); unit prices are those totals divided by " +
    'quantity where the division is exact to 3 decimals, else NULL (sum the totals, never unit price x ' +
    'quantity). 2023-02-10 lines name their product and stockrecord, not their variant: variant_id is then the ' +
    "stockrecord's variant from variant_stockrecords (NULL when the catalogue has not been synced).",
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'order_number', comment: 'Order number (see fct_orders).' },
    { name: 'line_id', comment: 'Order line id.' },
    { name: 'api_version', comment: 'Shape of the order document: 2023-02-10 or 2024-04-01.' },
    { name: 'placed_at', comment: 'When the order was placed (see fct_orders.placed_at).' },
    { name: 'placed_date', comment: 'The UTC day of placed_at.' },
    {
      name: 'currency',
      comment:
        "The order's currency, for both shapes (order_lines splits it: currency in 2024-04-01, price_currency in 2023-02-10).",
    },
    { name: 'product_id', comment: 'Product id (2023-02-10: from the embedded product).' },
    {
      name: 'variant_id',
      comment:
        "Variant id: the line's variant_id (2024-04-01), or the variant of its stockrecord (2023-02-10, via variant_stockrecords).",
    },
    { name: 'stockrecord_id', comment: 'Stockrecord id (2023-02-10 only).' },
    { name: 'sku', comment: 'Stock keeping unit (2023-02-10: the stockrecord partner_sku).' },
    { name: 'product_title', comment: 'Product title.' },
    { name: 'quantity', comment: 'Units ordered.' },
    {
      name: 'line_gross_excl_tax',
      comment:
        'Line total before discounts, excluding tax (original_price_excl_tax; 2023-02-10: price_excl_tax_excl_discounts).',
    },
    {
      name: 'discount',
      comment: "The line's discount, excluding tax: line_gross_excl_tax - line_total_excl_tax.",
    },
    {
      name: 'line_total_excl_tax',
      comment: 'Line total after discounts, excluding tax (order_lines.price_excl_tax).',
    },
    {
      name: 'line_total_incl_tax',
      comment: 'Line total after discounts, including tax (order_lines.price_incl_tax).',
    },
    {
      name: 'unit_list_price_excl_tax',
      comment:
        'Unit price before discounts, excluding tax: line_gross_excl_tax / quantity when exact, else NULL.',
    },
    {
      name: 'unit_price_excl_tax',
      comment:
        'Unit price after discounts, excluding tax: line_total_excl_tax / quantity when exact, else NULL.',
    },
    {
      name: 'unit_price_incl_tax',
      comment:
        'Unit price after discounts, including tax: line_total_incl_tax / quantity when exact, else NULL.',
    },
    {
      name: 'refunded_quantity',
      comment: "Units refunded (the line's order_refund_lines quantity); 0 when none.",
    },
    {
      name: 'refunded_excl_tax',
      comment:
        "Refunded value of the line's units, excluding tax (order_refund_lines amount_excl_tax); 0 when none.",
    },
    { name: 'net_excl_tax', comment: 'line_total_excl_tax - refunded_excl_tax.' },
    { name: 'total_cost', comment: 'Cost of goods of the line (unit_cost x quantity): not revenue.' },
    { name: 'is_gift_card', comment: 'Whether the line is a gift card.' },
    { name: 'is_test', comment: 'Whether the order is a test order.' },
  ],
  sql: `
WITH refunded AS (
  SELECT _store, order_number, line_item_id, sum(quantity) AS quantity, sum(amount_excl_tax) AS amount_excl_tax
  FROM order_refund_lines GROUP BY _store, order_number, line_item_id
), stockrecord_variants AS (
  SELECT _store, product_id, id, min(variant_id) AS variant_id
  FROM variant_stockrecords GROUP BY _store, product_id, id
)
SELECT
  l._store,
  l.order_number,
  l.id AS line_id,
  l.api_version,
  o.placed_at,
  o.placed_date,
  coalesce(o.currency, l.currency, l.price_currency) AS currency,
  l.product_id,
  coalesce(l.variant_id, sv.variant_id) AS variant_id,
  l.stockrecord_id,
  l.sku,
  l.product_title,
  l.quantity,
  ${LINE_GROSS} AS line_gross_excl_tax,
  CAST(${LINE_GROSS} - l.price_excl_tax AS DECIMAL(18,3)) AS discount,
  l.price_excl_tax AS line_total_excl_tax,
  l.price_incl_tax AS line_total_incl_tax,
  ${exactUnit(LINE_GROSS, 'l.quantity')} AS unit_list_price_excl_tax,
  ${exactUnit('l.price_excl_tax', 'l.quantity')} AS unit_price_excl_tax,
  ${exactUnit('l.price_incl_tax', 'l.quantity')} AS unit_price_incl_tax,
  CAST(coalesce(r.quantity, 0) AS BIGINT) AS refunded_quantity,
  CAST(coalesce(r.amount_excl_tax, 0) AS DECIMAL(18,3)) AS refunded_excl_tax,
  CAST(l.price_excl_tax - coalesce(r.amount_excl_tax, 0) AS DECIMAL(18,3)) AS net_excl_tax,
  l.total_cost,
  l.is_gift_card,
  o.is_test
FROM order_lines l
LEFT JOIN fct_orders o ON o._store = l._store AND o.number = l.order_number
LEFT JOIN refunded r ON r._store = l._store AND r.order_number = l.order_number AND r.line_item_id = l.id
LEFT JOIN stockrecord_variants sv
  ON l.variant_id IS NULL AND sv._store = l._store AND sv.product_id = l.product_id AND sv.id = l.stockrecord_id`,
};

export const dailySales: AnalyticsModel = {
  name: 'daily_sales',
  comment:
    'One row per store, UTC day of placement and currency with a non-test order: sums of fct_orders (so ' +
    'net sums to fct_orders.net over its non-test orders). Refunds count on the day the order was placed, ' +
    'not the day they were given, so a day is final only once its orders can no longer be refunded. Never ' +
    'sum amounts across currencies.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'day', comment: 'UTC day the orders were placed (fct_orders.placed_date).' },
    { name: 'currency', comment: 'Currency of every amount of the row.' },
    { name: 'orders', comment: 'Non-test orders placed that day in that currency.' },
    {
      name: 'units',
      comment: 'Units ordered on their lines (refunds not deducted); an order stored without lines adds 0.',
    },
    { name: 'gross', comment: 'Sum of fct_orders.gross: lines before discounts, excluding tax.' },
    { name: 'discounts', comment: 'Sum of fct_orders.discounts, excluding tax.' },
    { name: 'shipping', comment: 'Sum of fct_orders.shipping, excluding tax.' },
    { name: 'tax', comment: 'Sum of fct_orders.tax.' },
    { name: 'refunds', comment: "Sum of fct_orders.refunds (excluding tax) of that day's orders." },
    { name: 'net', comment: 'Sum of fct_orders.net: gross - discounts + shipping - refunds.' },
    {
      name: 'new_customers',
      comment: 'Customers whose first order (fct_orders.is_first_order) is among these.',
    },
    {
      name: 'returning_customers',
      comment:
        'Other customers with an order among these (customers that day minus new_customers); guests not counted.',
    },
  ],
  sql: `
WITH units AS (
  SELECT _store, order_number, sum(quantity) AS units FROM order_lines GROUP BY _store, order_number
)
SELECT
  o._store,
  o.placed_date AS day,
  o.currency,
  count(*) AS orders,
  CAST(coalesce(sum(u.units), 0) AS BIGINT) AS units,
  sum(o.gross) AS gross,
  sum(o.discounts) AS discounts,
  sum(o.shipping) AS shipping,
  sum(o.tax) AS tax,
  sum(o.refunds) AS refunds,
  sum(o.net) AS net,
  count(*) FILTER (WHERE o.is_first_order) AS new_customers,
  count(DISTINCT o.customer_id) - count(*) FILTER (WHERE o.is_first_order) AS returning_customers
FROM fct_orders o
LEFT JOIN units u ON u._store = o._store AND u.order_number = o.number
WHERE o.is_test IS NOT TRUE
GROUP BY o._store, o.placed_date, o.currency`,
};
