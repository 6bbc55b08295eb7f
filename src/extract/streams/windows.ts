import type { StreamOptions, StreamState } from '../../contracts.js';
import { addDays, type DateWindow, dayOf, splitWindows } from '../dates.js';
import type { SlicePlan } from './types.js';

/** Planning shared by the date-windowed streams (subscriptions, fulfillment orders). */

const DAY_MS = 86_400_000;

/**
 * The first day an incremental run reads: the watermark minus the lookback (late or edited records),
 * or the configured start date on a first run; null when there is neither (read everything instead).
 */
export function incrementalFrom(state: StreamState, options: StreamOptions): string | null {
  if (state.watermark !== null) return addDays(state.watermark, -Math.max(0, options.lookbackDays));
  return options.startDate;
}

/** Whether the periodic full scan is due (never when `fullRefreshDays` is null). */
export function fullScanDue(state: StreamState, options: StreamOptions, now: Date): boolean {
  if (options.fullRefreshDays === null) return false;
  if (state.lastFullScanAt === null) return true;
  return now.getTime() - Date.parse(state.lastFullScanAt) >= options.fullRefreshDays * DAY_MS;
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
