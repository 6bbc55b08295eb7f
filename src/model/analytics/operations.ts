import type { AnalyticsModel } from './types.js';

/** Stock, the fulfillment backlog, and what `orders` does not hold. */

export const inventoryLevels: AnalyticsModel = {
  name: 'inventory_levels',
  comment:
    'One row per stockrecord (a variant at a location) of products not deleted: units in stock, allocated to ' +
    'orders not yet shipped, and available (in stock - allocated). below_threshold follows the stockrecord ' +
    'rule the API inherits its fields from: available < low_stock_threshold.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'product_id', comment: 'Product id.' },
    { name: 'variant_id', comment: 'Variant id.' },
    { name: 'stockrecord_id', comment: 'Stockrecord id.' },
    { name: 'product_title', comment: 'Product title.' },
    { name: 'variant_title', comment: 'Variant title.' },
    { name: 'sku', comment: 'Stock keeping unit of the variant.' },
    { name: 'location_id', comment: 'Location id.' },
    { name: 'location_name', comment: 'Location name (NULL when the location is not in locations).' },
    { name: 'in_stock', comment: 'Units in stock at the location (num_in_stock).' },
    { name: 'allocated', comment: 'Units set aside for orders not yet shipped (num_allocated).' },
    { name: 'available', comment: 'in_stock - allocated: units that can still be sold from the location.' },
    { name: 'low_stock_threshold', comment: 'Low-stock threshold, in units.' },
    { name: 'below_threshold', comment: 'available < low_stock_threshold.' },
    { name: 'out_of_stock', comment: 'available <= 0.' },
    {
      name: 'track_stock',
      comment: 'Whether the variant tracks stock (an untracked variant sells regardless).',
    },
    { name: 'allow_backorders', comment: 'Whether the variant sells when out of stock.' },
  ],
  sql: `
SELECT
  sr._store,
  sr.product_id,
  sr.variant_id,
  sr.id AS stockrecord_id,
  p.title AS product_title,
  v.title AS variant_title,
  v.sku,
  sr.location_id,
  loc.name AS location_name,
  sr.num_in_stock AS in_stock,
  sr.num_allocated AS allocated,
  sr.num_in_stock - sr.num_allocated AS available,
  sr.low_stock_threshold,
  sr.num_in_stock - sr.num_allocated < sr.low_stock_threshold AS below_threshold,
  sr.num_in_stock - sr.num_allocated <= 0 AS out_of_stock,
  v.track_stock,
  v.allow_backorders
FROM variant_stockrecords sr
LEFT JOIN variants v ON v._store = sr._store AND v.product_id = sr.product_id AND v.id = sr.variant_id
LEFT JOIN products p ON p._store = sr._store AND p.id = sr.product_id
LEFT JOIN locations loc ON loc._store = sr._store AND loc.id = sr.location_id
WHERE sr._deleted_at IS NULL`,
};

/** Fulfillment-order statuses after which nothing is left to ship (docs/sandbox-data.md lists the others). */
export const FINISHED_FULFILLMENT_STATUSES = [
  'closed',
  'fulfilled',
  'cancelled',
  'canceled',
  'incomplete',
] as const;

const AGE_FROM = 'coalesce(fo.created_at, o.placed_at, f.first_seen_at)';

export const fulfillmentBacklog: AnalyticsModel = {
  name: 'fulfillment_backlog',
  comment:
    `One row per fulfillment order not finished (status not ${FINISHED_FULFILLMENT_STATUSES.join(', ')}): ` +
    "what is still to ship, where, and for how long. The age runs from the fulfillment order's created_at " +
    "when the server sent one (spec 2.4 shows none; the API's time), else from its order's placement when that " +
    "order was captured (fct_orders; the API's time, a lower bound of the creation), else from when a load " +
    'first observed it (first_seen_at, from fulfillment_orders_history: an upper bound of the creation, precise ' +
    'to the interval between syncs, so the age is at least that); age_basis says which. Ages are to now(): the ' +
    'view is current whenever it is read.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'fulfillment_order_id', comment: 'Fulfillment order id.' },
    { name: 'order_number', comment: 'Order number.' },
    {
      name: 'status',
      comment: 'Fulfillment order status (open enum: open, scheduled, on_hold, in_progress …).',
    },
    { name: 'request_status', comment: 'Request status (open enum).' },
    { name: 'location_id', comment: 'Assigned location id.' },
    { name: 'location_name', comment: 'Assigned location name.' },
    { name: 'units_to_fulfil', comment: 'Sum of the line items fulfillable_quantity.' },
    { name: 'on_hold', comment: 'Whether the fulfillment order has a hold (fulfillment_order_holds).' },
    { name: 'order_placed_at', comment: 'When its order was placed (NULL when the order was not captured).' },
    {
      name: 'first_seen_at',
      comment:
        'When a load first observed the fulfillment order: the `_synced_at` of its first version in fulfillment_orders_history (observed, precision: the interval since the sync before; the record existed by then). Its first observation since history was kept, for a record loaded before that.',
    },
    {
      name: 'age_from',
      comment:
        'The time the age runs from: created_at of the fulfillment order, else order_placed_at, else first_seen_at.',
    },
    {
      name: 'age_basis',
      comment:
        'fulfillment_order_created, order_placed or first_seen (which time age_from is), NULL when none is known.',
    },
    { name: 'age_days', comment: 'Whole days (of 24 hours) from age_from to now(); NULL when age_from is.' },
  ],
  sql: `
WITH units AS (
  SELECT _store, fulfillment_order_id, sum(fulfillable_quantity) AS units
  FROM fulfillment_order_line_items GROUP BY _store, fulfillment_order_id
), holds AS (
  SELECT DISTINCT _store, fulfillment_order_id FROM fulfillment_order_holds
), first_seen AS (
  SELECT _store, id, min(_synced_at) AS first_seen_at FROM fulfillment_orders_history GROUP BY _store, id
)
SELECT
  fo._store,
  fo.id AS fulfillment_order_id,
  fo.order_number,
  fo.status,
  fo.request_status,
  fo.assigned_location_id AS location_id,
  fo.assigned_location_name AS location_name,
  CAST(coalesce(u.units, 0) AS DECIMAL(18,3)) AS units_to_fulfil,
  h.fulfillment_order_id IS NOT NULL AS on_hold,
  o.placed_at AS order_placed_at,
  f.first_seen_at,
  ${AGE_FROM} AS age_from,
  CASE WHEN fo.created_at IS NOT NULL THEN 'fulfillment_order_created'
       WHEN o.placed_at IS NOT NULL THEN 'order_placed'
       WHEN f.first_seen_at IS NOT NULL THEN 'first_seen' END AS age_basis,
  CAST(floor((epoch(now()) - epoch(${AGE_FROM})) / 86400) AS BIGINT) AS age_days
FROM fulfillment_orders fo
LEFT JOIN fct_orders o ON o._store = fo._store AND o.number = fo.order_number
LEFT JOIN units u ON u._store = fo._store AND u.fulfillment_order_id = fo.id
LEFT JOIN holds h ON h._store = fo._store AND h.fulfillment_order_id = fo.id
LEFT JOIN first_seen f ON f._store = fo._store AND f.id = fo.id
WHERE fo.status IS NULL OR fo.status NOT IN (${FINISHED_FULFILLMENT_STATUSES.map((s) => `'${s}'`).join(', ')})`,
};

export const orderCoverage: AnalyticsModel = {
  name: 'order_coverage',
  comment:
    'One row per order number the store references (in subscription_orders of subscriptions not deleted, or ' +
    'in fulfillment_orders) that `orders` does not hold: the API lists no orders, so `orders` has only the ' +
    "documents captured by ingest or the receiver, not the store's order book. Counting these against " +
    '`orders` tells how much of it is missing; `store-sync status` prints the counts.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'order_number', comment: 'Order number referenced but not captured.' },
    {
      name: 'subscription_id',
      comment: 'The subscription that lists it (the lowest id when several do); NULL if none.',
    },
    { name: 'billing_cycle', comment: 'The billing cycle of that subscription it paid for.' },
    { name: 'subscription_refs', comment: 'subscription_orders entries naming it.' },
    { name: 'fulfillment_order_refs', comment: 'Fulfillment orders for it.' },
  ],
  sql: `
WITH subscription_refs AS (
  SELECT _store, order_number, arg_min(subscription_id, subscription_id) AS subscription_id,
         arg_min(billing_cycle, subscription_id) AS billing_cycle, count(*) AS refs
  FROM subscription_orders
  WHERE _deleted_at IS NULL AND order_number IS NOT NULL
  GROUP BY _store, order_number
), fulfillment_refs AS (
  SELECT _store, order_number, count(*) AS refs
  FROM fulfillment_orders WHERE order_number IS NOT NULL GROUP BY _store, order_number
), referenced AS (
  SELECT _store, order_number FROM subscription_refs
  UNION SELECT _store, order_number FROM fulfillment_refs
)
SELECT
  r._store,
  r.order_number,
  s.subscription_id,
  s.billing_cycle,
  coalesce(s.refs, 0) AS subscription_refs,
  coalesce(f.refs, 0) AS fulfillment_order_refs
FROM referenced r
LEFT JOIN subscription_refs s ON s._store = r._store AND s.order_number = r.order_number
LEFT JOIN fulfillment_refs f ON f._store = r._store AND f.order_number = r.order_number
WHERE NOT EXISTS (SELECT 1 FROM orders o WHERE o._store = r._store AND o.number = r.order_number)`,
};
