import { CANCELLED_STATUSES, FAILING_STATUSES, statusList } from './subscriptions.js';
import { type AnalyticsModel, utcDay } from './types.js';

const CANCELLED = statusList(CANCELLED_STATUSES);
const FAILING = statusList(FAILING_STATUSES);

/**
 * `subscription_events`: what happened to each subscription, one row per event, from the versions
 * `subscriptions_history` keeps (src/model/tables/history.ts) and the API's own times where it gives them.
 * Subscriptions carry no version time, so a change is dated by the load that first saw it, unless the API
 * dated it through a one-day window (`_window_events`: cancellations and recoveries).
 */
export const subscriptionEvents: AnalyticsModel = {
  name: 'subscription_events',
  comment:
    "One row per event of a subscription: `created` (at date_created, the API's time), `cancelled`, `recovered` " +
    '(active again after a failed payment: past_due or retrying), `reactivated` (active again after being ' +
    'cancelled), `status_changed` (any other change of status, e.g. active → past_due), `renewed` (one per ' +
    'billing cycle from the second on, from subscription_orders) and `deleted` (a completed full scan no longer ' +
    'returned it). Status events come from subscriptions_history: the records carry no time for them, so a ' +
    'cancellation or recovery that an incremental sync found through a one-day window of the API (`cancel_date`, ' +
    '`recoveries_date`: _window_events) is dated on that day (`at_basis` api_window); any other is dated when a sync first saw the new status (`at_basis` observed: it happened after the previous sync and by ' +
    'then), or, for the state a subscription already had when first seen, that first observation (`at_basis` ' +
    "by_first_observation: it happened at or before it, when is unknown). A renewal is dated by its order's " +
    'placement when that order was captured (`api`), else by the first version that counted it (num_orders); ' +
    'NULL (occurred_at and at_basis) for one no version counted (loaded before history was kept). ' +
    'Re-syncing an unchanged store adds no event.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'subscription_id', comment: 'Subscription id.' },
    {
      name: 'event',
      comment: 'created, cancelled, recovered, reactivated, status_changed, renewed or deleted.',
    },
    { name: 'occurred_at', comment: 'When it happened, as at_basis says.' },
    {
      name: 'at_basis',
      comment:
        "api: the API's own time (date_created, a captured order's placement); api_window: the API's day (a cancellation or recovery the sync found through a one-day `cancel_date` or `recoveries_date` window, _window_events): occurred_at is the start of that UTC day, or the previous observation if later (precision: that day); observed: the load that first saw it (the event happened between the sync before and then); by_first_observation: the state the subscription had when first seen (it happened by then).",
    },
    {
      name: 'from_status',
      comment: 'Status before the event (NULL for created and for a first observation).',
    },
    { name: 'to_status', comment: 'Status after the event.' },
    { name: 'billing_cycle', comment: 'For renewed: the billing cycle the renewal paid for; else NULL.' },
    {
      name: 'order_number',
      comment: 'For renewed: the order of that billing cycle (subscription_orders); else NULL.',
    },
    {
      name: '_observed_run_id',
      comment: 'The run whose load recorded the version the event comes from (NULL for created and renewed).',
    },
  ],
  sql: `
WITH versions AS (
  SELECT _store, id, status, num_orders, _version, _valid_from, _observed_run_id, _change,
         lag(status) OVER (PARTITION BY _store, id ORDER BY _version) AS previous_status,
         lag(_change) OVER (PARTITION BY _store, id ORDER BY _version) AS previous_change,
         lag(_valid_from) OVER (PARTITION BY _store, id ORDER BY _version) AS previous_from
  FROM subscriptions_history
), status_events AS (
  SELECT _store, id,
         CASE WHEN _change = 'deleted' THEN 'deleted'
              WHEN lower(status) IN ${CANCELLED} THEN 'cancelled'
              WHEN lower(status) = 'active' AND lower(previous_status) IN ${CANCELLED} THEN 'reactivated'
              WHEN lower(status) = 'active' AND lower(previous_status) IN ${FAILING} THEN 'recovered'
              ELSE 'status_changed' END AS event,
         _valid_from AS observed_at, previous_from, _version,
         previous_status AS from_status, status AS to_status, _observed_run_id
  FROM versions
  WHERE _change = 'deleted'
     OR (_version = 1 AND lower(status) <> 'active')
     OR (_version > 1 AND previous_change <> 'deleted' AND status IS DISTINCT FROM previous_status)
), window_dated AS (
  -- The latest day a one-day window of the API dated the event on, between the version before (its day) and
  -- the observation: the event the version shows happened that day.
  SELECT e._store, e.id, e._version, max(w.day) AS day
  FROM status_events e
  JOIN _window_events w ON w._store = e._store AND w.stream = 'subscriptions' AND w.record_id = CAST(e.id AS VARCHAR)
   AND w.event = e.event AND w.day <= ${utcDay('e.observed_at')}
   AND (e.previous_from IS NULL OR w.day >= ${utcDay('e.previous_from')})
  GROUP BY ALL
), dated_status_events AS (
  SELECT e._store, e.id, e.event,
         CASE WHEN d.day IS NULL THEN e.observed_at
              ELSE greatest(timezone('UTC', CAST(d.day AS TIMESTAMP)), e.previous_from) END AS occurred_at,
         CASE WHEN d.day IS NOT NULL THEN 'api_window'
              WHEN e._version = 1 THEN 'by_first_observation' ELSE 'observed' END AS at_basis,
         e.from_status, e.to_status, e._observed_run_id
  FROM status_events e LEFT JOIN window_dated d USING (_store, id, _version)
), counted AS (
  SELECT so._store, so.subscription_id, so.billing_cycle, so.order_number,
         min(v._valid_from) AS seen_at, min(v._version) AS seen_version
  FROM subscription_orders so
  LEFT JOIN versions v ON v._store = so._store AND v.id = so.subscription_id AND v.num_orders >= so.billing_cycle
  WHERE so.billing_cycle >= 2
  GROUP BY ALL
)
SELECT _store, id AS subscription_id, 'created' AS event, date_created AS occurred_at, 'api' AS at_basis,
       NULL AS from_status, NULL AS to_status, NULL::BIGINT AS billing_cycle, NULL AS order_number,
       NULL AS _observed_run_id
FROM subscriptions WHERE date_created IS NOT NULL
UNION ALL
SELECT _store, id, event, occurred_at, at_basis, from_status, to_status, NULL, NULL, _observed_run_id FROM dated_status_events
UNION ALL
SELECT c._store, c.subscription_id, 'renewed',
       coalesce(o.placed_at, c.seen_at),
       CASE WHEN o.placed_at IS NOT NULL THEN 'api'
            WHEN c.seen_version = 1 THEN 'by_first_observation'
            WHEN c.seen_version > 1 THEN 'observed' END,
       NULL, NULL, c.billing_cycle, c.order_number, NULL
FROM counted c
LEFT JOIN fct_orders o ON o._store = c._store AND o.number = c.order_number`,
};
