import { type AnalyticsModel, utcDay } from './types.js';

export const dimDate: AnalyticsModel = {
  name: 'dim_date',
  comment:
    'One row per UTC day from the earliest to the latest order placement (fct_orders.placed_at) or ' +
    'subscription creation (subscriptions.date_created) in the warehouse, every store together; empty when ' +
    'there is neither. Join on day to see days without sales.',
  columns: [
    { name: 'day', comment: 'The UTC day.' },
    { name: 'year', comment: 'Calendar year.' },
    { name: 'quarter', comment: 'Quarter of the year, 1-4.' },
    { name: 'month', comment: 'Month of the year, 1-12.' },
    { name: 'month_start', comment: 'First day of the month.' },
    { name: 'iso_year', comment: 'ISO 8601 week-numbering year (the year iso_week belongs to).' },
    { name: 'iso_week', comment: 'ISO 8601 week of iso_year, 1-53 (weeks start on Monday).' },
    { name: 'week_start', comment: 'The Monday of the ISO week.' },
    { name: 'weekday', comment: 'ISO day of the week: 1 = Monday … 7 = Sunday.' },
    { name: 'weekday_name', comment: 'English name of the weekday.' },
    { name: 'is_weekend', comment: 'Saturday or Sunday.' },
    { name: 'day_of_month', comment: 'Day of the month, 1-31.' },
    { name: 'day_of_year', comment: 'Day of the year, 1-366.' },
  ],
  sql: `
WITH days AS (
  SELECT placed_date AS day FROM fct_orders
  UNION ALL SELECT ${utcDay('date_created')} FROM subscriptions
), bounds AS (
  SELECT min(day) AS lo, max(day) AS hi FROM days
), series AS (
  SELECT CAST(unnest(generate_series(CAST(lo AS TIMESTAMP), CAST(hi AS TIMESTAMP), INTERVAL 1 DAY)) AS DATE) AS day
  FROM bounds WHERE lo IS NOT NULL
)
SELECT
  day,
  CAST(year(day) AS INTEGER) AS year,
  CAST(quarter(day) AS INTEGER) AS quarter,
  CAST(month(day) AS INTEGER) AS month,
  CAST(date_trunc('month', day) AS DATE) AS month_start,
  CAST(isoyear(day) AS INTEGER) AS iso_year,
  CAST(week(day) AS INTEGER) AS iso_week,
  CAST(date_trunc('week', day) AS DATE) AS week_start,
  CAST(isodow(day) AS INTEGER) AS weekday,
  dayname(day) AS weekday_name,
  isodow(day) >= 6 AS is_weekend,
  CAST(day(day) AS INTEGER) AS day_of_month,
  CAST(dayofyear(day) AS INTEGER) AS day_of_year
FROM series`,
};
