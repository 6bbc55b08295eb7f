import { ERROR_CODES, StoreSyncError } from '../errors.js';

/** Day arithmetic for date-window slices. Days are UTC `YYYY-MM-DD`, the format of the API's query dates. */

const DAY_MS = 86_400_000;

export interface DateWindow {
  /** First day, inclusive. */
  from: string;
  /** Last day, inclusive. */
  to: string;
}

export function dayOf(date: Date): string {
  return date.toISOString().slice(0, 10);
}

/** Whether `day` is YYYY-MM-DD and a day of the calendar (not 2024-02-30 or 2024-13-45). */
export function isCalendarDay(day: string): boolean {
  const ms = Date.parse(`${day}T00:00:00Z`);
  return /^\d{4}-\d{2}-\d{2}$/.test(day) && !Number.isNaN(ms) && dayOf(new Date(ms)) === day;
}

function parseDay(day: string): number {
  if (!isCalendarDay(day))
    throw new StoreSyncError(ERROR_CODES.USAGE, `"${day}" is not a date; expected YYYY-MM-DD`);
  return Date.parse(`${day}T00:00:00Z`);
}

export function addDays(day: string, days: number): string {
  return dayOf(new Date(parseDay(day) + days * DAY_MS));
}

export function daysBetween(from: string, to: string): number {
  return Math.round((parseDay(to) - parseDay(from)) / DAY_MS);
}

/** Later of two days (YYYY-MM-DD text sorts as the calendar does). */
export function maxDay(a: string, b: string): string {
  return a > b ? a : b;
}

export function minDay(a: string, b: string): string {
  return a > b ? b : a;
}

/** Consecutive inclusive windows of at most `windowDays` days covering from..to (none if from > to). */
export function splitWindows(window: DateWindow, windowDays: number): DateWindow[] {
  const size = Math.max(1, Math.floor(windowDays));
  const out: DateWindow[] = [];
  for (let from = window.from; from <= window.to; from = addDays(from, size)) {
    const end = addDays(from, size - 1);
    out.push({ from, to: minDay(end, window.to) });
  }
  return out;
}

export function checkWindow(window: DateWindow): DateWindow {
  parseDay(window.from);
  parseDay(window.to);
  if (window.from > window.to) {
    throw new StoreSyncError(ERROR_CODES.USAGE, `--from ${window.from} is after --to ${window.to}`);
  }
  return window;
}
