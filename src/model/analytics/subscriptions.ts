import type { AnalyticsModel } from './types.js';

/**
 * Subscription models (issue 27): month-end states of every subscription from `subscriptions_history`, and
 * MRR, churn and cohorts aggregated from them. All four read `subscription_months`, so they reconcile with
 * each other by construction and with the history through it.
 */

/** Statuses of a subscription whose payment failed and is being retried. */
export const FAILING_STATUSES = ['past_due', 'retrying'] as const;

/** Statuses that end a subscription: the sandbox says `canceled`; `cancelled` is taken as the same. */
export const CANCELLED_STATUSES = ['canceled', 'cancelled'] as const;

/** Statuses that bill (spec part 3: active, past_due, retrying, canceled): a failing renewal is still MRR. */
export const BILLING_STATUSES = ['active', ...FAILING_STATUSES] as const;

/** A list of statuses as SQL: `('a', 'b')`. */
export const statusList = (statuses: readonly string[]): string =>
  `(${statuses.map((x) => `'${x}'`).join(', ')})`;

/**
 * Interval normalisation to one month, as a fraction `num / den` per `interval` (then over `interval_count`):
 * a year of 365.25 days is 12 months, so a day is 1461/48 per month and a week 1461/336 (= 7 × 1461/48/7).
 */
export const MONTHLY_FACTORS: Record<string, { num: number; den: number }> = {
  day: { num: 1461, den: 48 },
  week: { num: 1461, den: 336 },
  month: { num: 1, den: 1 },
  year: { num: 1, den: 12 },
};

const NORMALISATION =
  'A renewal `total` every `interval_count` `interval`s is per month: total × 1461/48 / interval_count for ' +
  'day, × 1461/336 / interval_count for week (a year of 365.25 days is 12 months), / interval_count for month, ' +
  '/ (12 × interval_count) for year, rounded half up to 0.001 in exact integer arithmetic (DECIMAL(18,3), never ' +
  'DOUBLE); any other interval, or an interval_count below 1, has no monthly amount.';

const STATE =
  'A subscription bills (counts in MRR and as active) at the end of a month when the version of ' +
  '`subscriptions_history` holding just before the next month begins (UTC) has status active, past_due or ' +
  'retrying, is not `deleted` (a full scan no longer returned it) and is not is_test. A subscription starts at ' +
  "its date_created (the API's time); a later change is dated by its version's `_valid_from` (observed: the " +
  'sync that saw it; it happened after the previous sync that returned the subscription, which for a changed ' +
  "price or quantity is the previous full scan; for an ingested document, the envelope's timestamp). " +
  'History starts at the first sync: the first observed version stands for the subscription from its ' +
  "date_created (the API's time) on; if it was first observed canceled, it counts as billing with that " +
  "version's amounts from date_created until the end of its last paid period, date_created + num_orders × " +
  'interval_count intervals (inferred from its renewals: the API gives no cancel time, so the cancellation is ' +
  'dated within one billing period; with an interval none of day, week, month, year it never billed), and as ' +
  'canceled from then on.';

/** Half-up rounding of `numerator / denominator` for non-negative integers, as integer SQL. */
const roundedQuotient = (numerator: string, denominator: string) =>
  `((2 * (${numerator}) + (${denominator})) // (2 * (${denominator})))`;

const monthlyAmount = (total: string, interval: string, count: string): string => {
  const cases = Object.entries(MONTHLY_FACTORS)
    .map(
      ([unit, { num, den }]) =>
        `WHEN '${unit}' THEN ${roundedQuotient(`CAST(${total} * 1000 AS HUGEINT) * ${num}`, `${den} * ${count}`)}`,
    )
    .join(' ');
  return `CASE WHEN ${total} IS NOT NULL AND ${count} >= 1 THEN CAST(CAST(CASE ${interval} ${cases} END AS DECIMAL(18,0)) * 0.001 AS DECIMAL(18,3)) END`;
};

/** `n` intervals after a TIMESTAMP (calendar months and years in UTC, as naive UTC timestamps). */
const addIntervals = (at: string, interval: string, n: string): string =>
  `CASE ${interval} WHEN 'day' THEN ${at} + to_days(CAST(${n} AS INTEGER)) ` +
  `WHEN 'week' THEN ${at} + to_days(CAST(7 * ${n} AS INTEGER)) ` +
  `WHEN 'month' THEN ${at} + to_months(CAST(${n} AS INTEGER)) ` +
  `WHEN 'year' THEN ${at} + to_years(CAST(${n} AS INTEGER)) END`;

export const subscriptionMonths: AnalyticsModel = {
  name: 'subscription_months',
  comment:
    'One row per subscription, currency and month (UTC) from the month it starts in that currency to the current ' +
    "month (or the latest version's, if later): its state at the end of the month and how its MRR moved from the " +
    `month before. ${STATE} ${NORMALISATION} subscription_mrr_monthly, subscription_churn_monthly and ` +
    'subscription_cohorts add these rows up.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'subscription_id', comment: 'Subscription id (subscriptions.id).' },
    {
      name: 'currency',
      comment:
        "Currency of the subscription's versions this row is about; a subscription that changed currency has rows in each.",
    },
    { name: 'month', comment: 'First day of the month (UTC).' },
    {
      name: 'signup_month',
      comment:
        "Month (UTC) of the subscription's date_created (the API's time) in its first observed version.",
    },
    {
      name: 'months_since_signup',
      comment: 'Whole months from signup_month to month: 0 for the signup month.',
    },
    {
      name: 'status',
      comment:
        'Status at the end of the month: of the version holding then (in any currency); `active` while a subscription first observed canceled is inferred to bill (state_basis `inferred_from_renewals`).',
    },
    {
      name: 'state_basis',
      comment:
        'Where the month-end state comes from: `observed` (a version from when a sync saw it), `before_first_observation` (the first observed version, stretched back to date_created), `inferred_from_renewals` (a subscription first observed canceled, before its first observation: billing until the end of its last paid period, canceled after).',
    },
    {
      name: 'is_active',
      comment: 'Bills at the end of the month, in this currency (see the view comment).',
    },
    {
      name: 'monthly_amount',
      comment:
        "The month-end version's renewal total normalised to one month (see the view comment), whether or not it bills; NULL when the interval cannot be normalised.",
    },
    {
      name: 'mrr',
      comment:
        'monthly_amount when is_active (0 when it has none), else 0: its contribution to MRR at the end of the month.',
    },
    { name: 'previous_mrr', comment: 'mrr of the month before (0 in its first month).' },
    { name: 'was_active', comment: 'is_active of the month before (false in its first month).' },
    {
      name: 'movement',
      comment:
        '`new` (bills now, never billed in this currency before), `reactivated` (bills now, did not last month, did before), `churned` (billed last month, not now), `expansion` / `contraction` (bills both months, mrr up / down), else NULL. mrr − previous_mrr is +mrr for new and reactivated, −previous_mrr for churned.',
    },
  ],
  sql: `
WITH h AS (
  SELECT _store, id, _version, status, currency, is_test, interval, interval_count, total, num_orders, _change,
         timezone('UTC', date_created) AS created, timezone('UTC', _valid_from) AS vfrom, timezone('UTC', _valid_to) AS vto
  FROM subscriptions_history
), firsts AS (
  SELECT *, coalesce(least(${addIntervals('created', 'interval', 'coalesce(num_orders, 0) * interval_count')}, vfrom), created) AS paid_through
  FROM h WHERE _version = 1 AND status IN ${statusList(CANCELLED_STATUSES)} AND created < vfrom
), spans AS (
  SELECT _store, id, status, currency, is_test, interval, interval_count, total, _change,
         CASE WHEN _version = 1 THEN least(created, vfrom) ELSE vfrom END AS span_from, vto AS span_to,
         CASE WHEN _version = 1 AND created < vfrom THEN 'before_first_observation' ELSE 'observed' END AS basis
  FROM h WHERE NOT (_version = 1 AND status IN ${statusList(CANCELLED_STATUSES)} AND created < vfrom)
  UNION ALL
  SELECT _store, id, 'active', currency, is_test, interval, interval_count, total, _change,
         created, greatest(created, paid_through), 'inferred_from_renewals'
  FROM firsts
  UNION ALL
  SELECT _store, id, status, currency, is_test, interval, interval_count, total, _change,
         greatest(created, paid_through), vfrom, 'inferred_from_renewals'
  FROM firsts
  UNION ALL
  SELECT _store, id, status, currency, is_test, interval, interval_count, total, _change, vfrom, vto, 'observed'
  FROM firsts
), signups AS (
  SELECT _store, id, CAST(date_trunc('month', coalesce(created, vfrom)) AS DATE) AS signup_month
  FROM h WHERE _version = 1
), keys AS (
  SELECT _store, id, currency, CAST(date_trunc('month', min(span_from)) AS DATE) AS first_month
  FROM spans WHERE is_test IS NOT TRUE GROUP BY _store, id, currency
), last_month AS (
  SELECT CAST(greatest(date_trunc('month', timezone('UTC', current_timestamp)), max(date_trunc('month', span_from))) AS DATE) AS m
  FROM spans
), grid AS (
  SELECT k._store, k.id, k.currency,
         CAST(unnest(generate_series(CAST(k.first_month AS TIMESTAMP), CAST(l.m AS TIMESTAMP), INTERVAL 1 MONTH)) AS DATE) AS month
  FROM keys k CROSS JOIN last_month l
), covered AS (
  -- A span holds at the end of month m when it began before m+1 and lasts until m+1 or later: m runs from its
  -- first month to the month before the one it ends in. Versions do not overlap (src/model/tables/history.ts),
  -- so each month-end has at most one span: an equality join, not a range join over every pair.
  SELECT s._store, s.id, s.status, s.basis, s.currency,
         s.status IN ${statusList(BILLING_STATUSES)} AND s._change IS DISTINCT FROM 'deleted'
           AND s.is_test IS NOT TRUE AS billing,
         ${monthlyAmount('s.total', 's.interval', 's.interval_count')} AS monthly_amount,
         CAST(unnest(generate_series(date_trunc('month', s.span_from),
           coalesce(date_trunc('month', s.span_to) - INTERVAL 1 MONTH, CAST(l.m AS TIMESTAMP)), INTERVAL 1 MONTH)) AS DATE) AS month
  FROM spans s CROSS JOIN last_month l
), at_end AS (
  SELECT g._store, g.id, g.currency, g.month, c.status, c.basis,
         c.billing AND c.currency IS NOT DISTINCT FROM g.currency AS billing,
         CASE WHEN c.currency IS NOT DISTINCT FROM g.currency THEN c.monthly_amount END AS monthly_amount
  FROM grid g
  LEFT JOIN covered c ON c._store = g._store AND c.id = g.id AND c.month = g.month
), valued AS (
  SELECT *, coalesce(billing, false) AS is_active,
         CASE WHEN billing THEN coalesce(monthly_amount, 0) ELSE 0 END::DECIMAL(18,3) AS mrr
  FROM at_end
), moved AS (
  SELECT *,
    coalesce(lag(mrr) OVER w, 0)::DECIMAL(18,3) AS previous_mrr,
    coalesce(lag(is_active) OVER w, false) AS was_active,
    coalesce(bool_or(is_active) OVER (w ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING), false) AS billed_before
  FROM valued
  WINDOW w AS (PARTITION BY _store, id, currency ORDER BY month)
)
SELECT
  m._store,
  m.id AS subscription_id,
  m.currency,
  m.month,
  su.signup_month,
  CAST(date_diff('month', su.signup_month, m.month) AS INTEGER) AS months_since_signup,
  m.status,
  m.basis AS state_basis,
  m.is_active,
  m.monthly_amount,
  m.mrr,
  m.previous_mrr,
  m.was_active,
  CASE
    WHEN m.is_active AND NOT m.was_active THEN CASE WHEN m.billed_before THEN 'reactivated' ELSE 'new' END
    WHEN m.was_active AND NOT m.is_active THEN 'churned'
    WHEN m.is_active AND m.mrr > m.previous_mrr THEN 'expansion'
    WHEN m.is_active AND m.mrr < m.previous_mrr THEN 'contraction'
  END AS movement
FROM moved m
JOIN signups su ON su._store = m._store AND su.id = m.id`,
};

export const subscriptionMrrMonthly: AnalyticsModel = {
  name: 'subscription_mrr_monthly',
  comment:
    'One row per store, month (UTC) and currency, from the first month a subscription of that currency bills to ' +
    'the current month: monthly recurring revenue (MRR) at the end of the month and its movements from the end ' +
    'of the month before. Sign convention: every movement is a non-negative amount, and ' +
    'mrr = previous_mrr + new_mrr + expansion_mrr − contraction_mrr − churned_mrr + reactivated_mrr exactly. ' +
    `MRR is the sum of subscription_months.mrr. ${STATE} ${NORMALISATION} The renewal total is what one renewal ` +
    'costs before tax: the lines and the recurring shipping_price. Never add rows of different currencies.',
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'month', comment: 'First day of the month (UTC).' },
    { name: 'currency', comment: 'Currency of every amount of the row.' },
    { name: 'mrr', comment: 'MRR at the end of the month: the billing subscriptions’ monthly amounts.' },
    { name: 'previous_mrr', comment: 'MRR at the end of the month before (0 in the first month).' },
    { name: 'new_mrr', comment: 'MRR of subscriptions billing for the first time (in this currency).' },
    {
      name: 'expansion_mrr',
      comment: 'Increase of the MRR of subscriptions billing both months whose monthly amount went up.',
    },
    {
      name: 'contraction_mrr',
      comment:
        'Decrease (as a positive amount) of the MRR of subscriptions billing both months whose amount went down.',
    },
    {
      name: 'churned_mrr',
      comment:
        'MRR, at the end of the month before, of subscriptions that billed then and do not now (positive).',
    },
    {
      name: 'reactivated_mrr',
      comment:
        'MRR of subscriptions billing again after a month or more without (canceled, or deleted and back).',
    },
    { name: 'subscriptions', comment: 'Subscriptions billing at the end of the month.' },
    {
      name: 'subscriptions_without_amount',
      comment:
        'Of those, the ones whose interval cannot be normalised to a month (counted in subscriptions, with 0 in mrr).',
    },
  ],
  sql: `
SELECT
  _store,
  month,
  currency,
  CAST(sum(mrr) AS DECIMAL(18,3)) AS mrr,
  CAST(sum(previous_mrr) AS DECIMAL(18,3)) AS previous_mrr,
  CAST(coalesce(sum(mrr) FILTER (WHERE movement = 'new'), 0) AS DECIMAL(18,3)) AS new_mrr,
  CAST(coalesce(sum(mrr - previous_mrr) FILTER (WHERE movement = 'expansion'), 0) AS DECIMAL(18,3)) AS expansion_mrr,
  CAST(coalesce(sum(previous_mrr - mrr) FILTER (WHERE movement = 'contraction'), 0) AS DECIMAL(18,3)) AS contraction_mrr,
  CAST(coalesce(sum(previous_mrr) FILTER (WHERE movement = 'churned'), 0) AS DECIMAL(18,3)) AS churned_mrr,
  CAST(coalesce(sum(mrr) FILTER (WHERE movement = 'reactivated'), 0) AS DECIMAL(18,3)) AS reactivated_mrr,
  count(*) FILTER (WHERE is_active) AS subscriptions,
  count(*) FILTER (WHERE is_active AND monthly_amount IS NULL) AS subscriptions_without_amount
FROM subscription_months
GROUP BY _store, month, currency`,
};

export const subscriptionChurnMonthly: AnalyticsModel = {
  name: 'subscription_churn_monthly',
  comment:
    'One row per store, month (UTC) and currency: subscriptions billing at the start of the month (= the end of ' +
    'the month before), those that stopped, started or came back by its end, and the churn rate. Counts compare ' +
    'month-end states (subscription_months), so a subscription that started and stopped within one month counts ' +
    `in neither. active_at_end = active_at_start + new_subscriptions + reactivated − churned. ${STATE}`,
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'month', comment: 'First day of the month (UTC).' },
    { name: 'currency', comment: 'Currency of the subscriptions (and of churned_mrr).' },
    { name: 'active_at_start', comment: 'Subscriptions billing at the end of the month before.' },
    {
      name: 'churned',
      comment: 'Of those, the ones not billing at the end of this month (canceled or deleted).',
    },
    {
      name: 'new_subscriptions',
      comment: 'Subscriptions billing at the end of the month for the first time.',
    },
    {
      name: 'reactivated',
      comment: 'Subscriptions billing again at the end of the month after a month or more without.',
    },
    { name: 'active_at_end', comment: 'Subscriptions billing at the end of the month.' },
    {
      name: 'churn_rate',
      comment:
        'churned / active_at_start as a fraction (0.0125 = 1.25%), rounded half up to 4 decimals in exact integer arithmetic; NULL when active_at_start is 0.',
    },
    {
      name: 'churned_mrr',
      comment: 'MRR lost with the churned subscriptions (their MRR at the end of the month before).',
    },
  ],
  sql: `
WITH counts AS (
  SELECT _store, month, currency,
         count(*) FILTER (WHERE was_active) AS active_at_start,
         count(*) FILTER (WHERE movement = 'churned') AS churned,
         count(*) FILTER (WHERE movement = 'new') AS new_subscriptions,
         count(*) FILTER (WHERE movement = 'reactivated') AS reactivated,
         count(*) FILTER (WHERE is_active) AS active_at_end,
         CAST(coalesce(sum(previous_mrr) FILTER (WHERE movement = 'churned'), 0) AS DECIMAL(18,3)) AS churned_mrr
  FROM subscription_months
  GROUP BY _store, month, currency
)
SELECT _store, month, currency, active_at_start, churned, new_subscriptions, reactivated, active_at_end,
       CASE WHEN active_at_start > 0
         THEN CAST(CAST(${roundedQuotient('churned * 10000', 'active_at_start')} AS DECIMAL(18,0)) * 0.0001 AS DECIMAL(9,4)) END AS churn_rate,
       churned_mrr
FROM counts`,
};

export const subscriptionCohorts: AnalyticsModel = {
  name: 'subscription_cohorts',
  comment:
    "One row per store, signup month (UTC month of date_created, the API's time) and month since signup, up to " +
    'the current month: how many of the subscriptions that signed up that month bill at the end of the month ' +
    `signup_month + months_since_signup (in any currency). Test subscriptions are left out. ${STATE}`,
  columns: [
    { name: '_store', comment: 'Configured name of the store.' },
    { name: 'signup_month', comment: "First day of the cohort's signup month (UTC)." },
    {
      name: 'months_since_signup',
      comment: 'Whole months after signup_month: 0 is the signup month itself.',
    },
    { name: 'month', comment: 'First day of the month described: signup_month + months_since_signup.' },
    { name: 'cohort_subscriptions', comment: 'Subscriptions that signed up in signup_month.' },
    { name: 'active', comment: 'Of those, the ones billing at the end of month.' },
    {
      name: 'active_share',
      comment:
        'active / cohort_subscriptions as a fraction (0.5 = half), rounded half up to 4 decimals in exact integer arithmetic.',
    },
  ],
  sql: `
WITH per_subscription AS (
  SELECT _store, subscription_id, signup_month, month, bool_or(is_active) AS active
  FROM subscription_months
  WHERE month >= signup_month
  GROUP BY _store, subscription_id, signup_month, month
), sizes AS (
  SELECT _store, signup_month, count(DISTINCT subscription_id) AS n
  FROM per_subscription GROUP BY _store, signup_month
), counts AS (
  SELECT _store, signup_month, month, count(*) FILTER (WHERE active) AS active
  FROM per_subscription GROUP BY _store, signup_month, month
)
SELECT c._store, c.signup_month,
       CAST(date_diff('month', c.signup_month, c.month) AS INTEGER) AS months_since_signup,
       c.month,
       s.n AS cohort_subscriptions,
       c.active,
       CAST(CAST(${roundedQuotient('c.active * 10000', 's.n')} AS DECIMAL(18,0)) * 0.0001 AS DECIMAL(9,4)) AS active_share
FROM counts c JOIN sizes s ON s._store = c._store AND s.signup_month = c.signup_month`,
};
