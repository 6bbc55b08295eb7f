import type { StreamOptions, StreamState } from '../../contracts.js';
import { addDays, type DateWindow, dayOf, maxDay, splitWindows } from '../dates.js';
import type { PassPlan, SlicePlan } from './types.js';

/**
 * Planning shared by the date-windowed streams (subscriptions, fulfillment orders).
 *
 * `startDate` is a lower bound on creation day, as a connector's start date is: no pass of these streams
 * (incremental, periodic full scan, full refresh) reads a record created before it; only a backfill, whose
 * window is explicit, does.
 */

const DAY_MS = 86_400_000;

/**
 * The first day an incremental run reads: the watermark minus the lookback (late or edited records),
 * never before the start date; the start date on a first run; null when there is neither (read
 * everything instead).
 */
export function incrementalFrom(state: StreamState, options: StreamOptions): string | null {
  if (state.watermark === null) return options.startDate;
  const from = addDays(state.watermark, -Math.max(0, options.lookbackDays));
  return options.startDate === null ? from : maxDay(from, options.startDate);
}

/** Whether the periodic full scan is due (never when `fullRefreshDays` is null). */
export function fullScanDue(state: StreamState, options: StreamOptions, now: Date): boolean {
  if (options.fullRefreshDays === null) return false;
  if (state.lastFullScanAt === null) return true;
  return now.getTime() - Date.parse(state.lastFullScanAt) >= options.fullRefreshDays * DAY_MS;
}

/**
 * A pass that reads every record the stream keeps: one chain over the whole list, or, with a start date,
 * creation windows from it whose last one is open-ended (a record created after the plan's today is read
 * too). `createdFrom` then tells the warehouse that the scan covered only records created from that day,
 * so its soft deletes leave older rows alone: they were not read, not found missing.
 */
export function fullScanPlan(
  options: StreamOptions,
  now: Date,
  fromParam: string,
  toParam: string,
): PassPlan {
  const start = options.startDate;
  if (start === null) return { kind: 'full', slices: [{ id: 'all', params: {} }] };
  const windows = windowSlices('created', { from: start, to: todayOf(now) }, options, fromParam, toParam);
  const lastFrom = windows.length > 0 ? String(windows.at(-1)!.params[fromParam]) : start;
  return {
    kind: 'full',
    createdFrom: start,
    slices: [...windows.slice(0, -1), { id: `created:${lastFrom}..`, params: { [fromParam]: lastFrom } }],
  };
}

/** Date-window slices over `window`, each with its own cursor chain, named by the window they cover. */
export function windowSlices(
  prefix: string,
  window: DateWindow,
  options: StreamOptions,
  fromParam: string,
  toParam: string,
): SlicePlan[] {
  return splitWindows(window, options.windowDays).map((w) => ({
    id: `${prefix}:${w.from}..${w.to}`,
    params: { [fromParam]: w.from, [toParam]: w.to },
  }));
}

export function todayOf(now: Date): string {
  return dayOf(now);
}
