import type { WindowEvent } from '../../contracts.js';
import { addDays, type DateWindow, maxDay } from '../dates.js';
import { readListSlice } from './list-slice.js';
import type { DeclaredStream, PassPlan, PlanInput, SlicePlan, StreamDefinition } from './types.js';
import { fullScanDue, fullScanPlan, incrementalFrom, todayOf, windowSlices } from './windows.js';

/**
 * Subscriptions (spec 2.8, 4.4). A nightly run reads only what can have changed since the watermark:
 *   - created:  `date_from`/`date_to` windows from watermark − lookback to today;
 *   - canceled: `cancel_date_from`/`cancel_date_to` one-day windows over the same days, so each subscription
 *     found is dated: the API cancelled it that day (`_window_events`; subscription_events dates the
 *     cancellation by it). One window for all the days would find the same subscriptions, undated;
 *   - recovered: `recoveries_date_from`/`recoveries_date_to` one-day windows likewise;
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
      ...dayWindows('canceled', { from, to: today }, start, 'cancel_date_from', 'cancel_date_to'),
      ...dayWindows('recovered', { from, to: today }, start, 'recoveries_date_from', 'recoveries_date_to'),
      {
        id: `failing:${from}..`,
        params: { ...start, status: 'past_due,retrying', next_renewal_date_from: from },
      },
    ],
  };
}

/** The date filters whose one-day windows date an event, and the event (subscription_events' names). */
const DATED_BY: readonly { event: string; from: string; to: string }[] = [
  { event: 'cancelled', from: 'cancel_date_from', to: 'cancel_date_to' },
  { event: 'recovered', from: 'recoveries_date_from', to: 'recoveries_date_to' },
];

/**
 * The most recent days read as one-day windows. A run that covers more days (the first run without full
 * scans, whose `from` is the start date, or nights missed for weeks) reads the days before them as one window,
 * its records undated, so the dating costs at most this many requests per filter, not one per day since the
 * start date.
 */
export const MAX_DATED_DAYS = 14;

/**
 * Slices reading the records whose `fromParam`..`toParam` date falls in `window`: one per day for its last
 * MAX_DATED_DAYS days, each dating its records (windowEvent), and one for the days before them, if any.
 */
function dayWindows(
  prefix: string,
  window: DateWindow,
  start: Record<string, string>,
  fromParam: string,
  toParam: string,
): SlicePlan[] {
  const slices: SlicePlan[] = [];
  const datedFrom = maxDay(window.from, addDays(window.to, 1 - MAX_DATED_DAYS));
  if (datedFrom > window.from) {
    const to = addDays(datedFrom, -1);
    slices.push({
      id: `${prefix}:${window.from}..${to}`,
      params: { ...start, [fromParam]: window.from, [toParam]: to },
    });
  }
  for (let day = datedFrom; day <= window.to; day = addDays(day, 1))
    slices.push({ id: `${prefix}:${day}`, params: { ...start, [fromParam]: day, [toParam]: day } });
  return slices;
}

/** The event a slice dates: a one-day window of a DATED_BY filter (see StreamDefinition.windowEvent). */
function windowEvent(params: SlicePlan['params']): WindowEvent | null {
  for (const { event, from, to } of DATED_BY) {
    const day = params[from];
    if (typeof day === 'string' && day === params[to]) return { event, day };
  }
  return null;
}

/** The subscriptions stream as src/streams.ts declares it, with its windowed reader. */
export function subscriptionsStream(declared: DeclaredStream): StreamDefinition {
  const stream: StreamDefinition = {
    ...declared,
    primaryKey: ['id'],
    schema: declared.operation.response,
    scopes: declared.operation.scopes,
    cursor:
      'watermark day: date_from windows, and one-day cancel_date and recoveries_date windows, from watermark − lookback',
    softDeletes: true,
    plan,
    windowEvent,
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
  };
  return stream;
}
