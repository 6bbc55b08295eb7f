import { type AnalyticsModel, utcDay } from './types.js';

export const customersSummary: AnalyticsModel = {
  name: 'customers_summary',
  comment:
    'One row per customer and currency they ordered in (non-test fct_orders), so amounts are never summed ' +
    'across currencies; a customer with no captured order (seen only in a cart or a subscription) has one row ' +
    'with currency NULL and orders 0. The customer-wide columns (first_order_at, last_order_at, total_orders, ' +
    'lifetime_days, subscriptions) repeat on each of its rows. Only captured orders count: see order_coverage.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'customer_id', comment: 'Customer id (customers.id).' },
    { name: 'email', comment: 'Email address (customers.email).' },
    {
      name: 'currency',
      comment: 'Currency of orders and net_revenue; NULL when the customer has no captured order.',
    },
    { name: 'orders', comment: 'Non-test orders in this currency.' },
    {
      name: 'net_revenue',
      comment: 'Sum of fct_orders.net of those orders (excluding tax, after discounts and refunds).',
    },
    { name: 'first_order_in_currency_at', comment: 'placed_at of the first of those orders.' },
    { name: 'last_order_in_currency_at', comment: 'placed_at of the last of those orders.' },
    { name: 'first_order_at', comment: "placed_at of the customer's first non-test order, in any currency." },
    { name: 'last_order_at', comment: "placed_at of the customer's last non-test order, in any currency." },
    { name: 'total_orders', comment: 'Non-test orders of the customer in every currency.' },
    {
      name: 'lifetime_days',
      comment: 'UTC calendar days from first_order_at to last_order_at (0 for one order, NULL for none).',
    },
    {
      name: 'active_subscriptions',
      comment:
        "The customer's non-test subscriptions with status active, not deleted (subscriptions._deleted_at NULL).",
    },
    { name: 'subscriptions', comment: "The customer's non-test subscriptions of any status, not deleted." },
  ],
  sql: `
WITH placed AS (
  SELECT _store, customer_id, currency, net, placed_at
  FROM fct_orders WHERE customer_id IS NOT NULL AND is_test IS NOT TRUE
), per_currency AS (
  SELECT _store, customer_id, currency, count(*) AS orders, sum(net) AS net_revenue,
         min(placed_at) AS first_at, max(placed_at) AS last_at
  FROM placed GROUP BY _store, customer_id, currency
), overall AS (
  SELECT _store, customer_id, count(*) AS total_orders, min(placed_at) AS first_at, max(placed_at) AS last_at
  FROM placed GROUP BY _store, customer_id
), subs AS (
  SELECT _store, user_id AS customer_id, count(*) FILTER (WHERE status = 'active') AS active, count(*) AS total
  FROM subscriptions
  WHERE user_id IS NOT NULL AND _deleted_at IS NULL AND is_test IS NOT TRUE
  GROUP BY _store, user_id
), everyone AS (
  SELECT _store, id AS customer_id FROM customers
  UNION SELECT _store, customer_id FROM overall
  UNION SELECT _store, customer_id FROM subs
)
SELECT
  e._store,
  e.customer_id,
  c.email,
  pc.currency,
  coalesce(pc.orders, 0) AS orders,
  pc.net_revenue,
  pc.first_at AS first_order_in_currency_at,
  pc.last_at AS last_order_in_currency_at,
  ov.first_at AS first_order_at,
  ov.last_at AS last_order_at,
  coalesce(ov.total_orders, 0) AS total_orders,
  date_diff('day', ${utcDay('ov.first_at')}, ${utcDay('ov.last_at')}) AS lifetime_days,
  coalesce(s.active, 0) AS active_subscriptions,
  coalesce(s.total, 0) AS subscriptions
FROM everyone e
LEFT JOIN customers c ON c._store = e._store AND c.id = e.customer_id
LEFT JOIN overall ov ON ov._store = e._store AND ov.customer_id = e.customer_id
LEFT JOIN per_currency pc ON pc._store = e._store AND pc.customer_id = e.customer_id
LEFT JOIN subs s ON s._store = e._store AND s.customer_id = e.customer_id`,
};
