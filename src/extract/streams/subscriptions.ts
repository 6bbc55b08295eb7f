import { readListSlice } from './list-slice.js';
import type { DeclaredStream, PassPlan, PlanInput, StreamDefinition } from './types.js';
import { fullScanDue, fullScanPlan, incrementalFrom, todayOf, windowSlices } from './windows.js';

/**
 * Subscriptions (spec 2.8, 4.4). A nightly run reads only what can have changed since the watermark:
 *   - created:  `date_from`/`date_to` windows from watermark − lookback to today;
 *   - canceled: `cancel_date_from` the same day;
 *   - recovered: `recoveries_date_from` the same day;
 *   - failing: past_due/retrying move on their own, at their payment retries, so they are re-read by status.
 *     Each retry (and each new failure) sets `next_renewal_date` to the next attempt, so a failing subscription
 *     that changed since the last run has its next attempt on or after the window start: the re-read is
 *     narrowed by `next_renewal_date_from`, leaving out failing ones whose retry is overdue and that have
 *     therefore not moved. Without that bound a nightly run would cost every failing subscription, a share of
 *     the store rather than of the day's changes.
 * Anything else that changes without a date filter to find it is reconciled by the periodic full scan
 * (`fullRefreshDays`), which also soft-deletes subscriptions that disappeared.
 *
 * `startDate` bounds every pass by creation day: the full scans (first run, periodic, full refresh) read
 * `date_from` windows from it and soft-delete only within it, and the canceled, recovered and failing
 * re-reads carry `date_from` too, so a subscription created before it is never read.
 */

function plan({ mode, state, options, now, window }: PlanInput): PassPlan {
  if (mode === 'backfill' && window) {
    return { kind: 'windows', slices: windowSlices('created', window, options, 'date_from', 'date_to') };
  }
  const from = incrementalFrom(state, options);
  if (mode !== 'incremental' || from === null || fullScanDue(state, options, now)) {
    return fullScanPlan(options, now, 'date_from', 'date_to');
  }
  const today = todayOf(now);
  const start: Record<string, string> = options.startDate === null ? {} : { date_from: options.startDate };
  return {
    kind: 'windows',
    slices: [
      ...windowSlices('created', { from, to: today }, options, 'date_from', 'date_to'),
      { id: `canceled:${from}..`, params: { ...start, cancel_date_from: from } },
      { id: `recovered:${from}..`, params: { ...start, recoveries_date_from: from } },
      {
        id: `failing:${from}..`,
        params: { ...start, status: 'past_due,retrying', next_renewal_date_from: from },
      },
    ],
  };
}

/** The subscriptions stream as src/streams.ts declares it, with its windowed reader. */
export function subscriptionsStream(declared: DeclaredStream): StreamDefinition {
  const stream: StreamDefinition = {
    ...declared,
    primaryKey: ['id'],
    schema: declared.operation.response,
    scopes: declared.operation.scopes,
    cursor: 'watermark day: date_from, cancel_date_from and recoveries_date_from from watermark − lookback',
    softDeletes: true,
    plan,
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
  };
  return stream;
}
