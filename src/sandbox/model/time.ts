/** Time helpers: timestamps are epoch milliseconds inside the model and ISO 8601 UTC text outside. */

export const DAY_MS = 86_400_000;
export const DEFAULT_ANCHOR = Date.UTC(2026, 0, 1);
/** Seeded history covers the two years before the anchor. */
export const HISTORY_MS = 730 * DAY_MS;

/** Civil date of a day number (Howard Hinnant's days-from-civil inverse), without allocating a Date. */
function civil(day: number): { y: number; m: number; d: number } {
  const z = day + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const m = mp < 10 ? mp + 3 : mp - 9;
  return { y: yoe + era * 400 + (m <= 2 ? 1 : 0), m, d: doy - Math.floor((153 * mp + 2) / 5) + 1 };
}

const pad2 = (n: number) => (n < 10 ? `0${n}` : String(n));
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : String(n));
const dayText = new Map<number, string>();
const timeText = new Map<number, string>();

/**
 * Same text as Date#toISOString ("2025-03-04T10:21:07.000Z"). Seeding formats hundreds of thousands of
 * timestamps, so the date and time-of-day parts are cached and no Date object is made.
 */
export function iso(ms: number): string {
  const day = Math.floor(ms / DAY_MS);
  let date = dayText.get(day);
  if (date === undefined) {
    const { y, m, d } = civil(day);
    if (y < 1000 || y > 9999) return new Date(ms).toISOString();
    date = `${y}-${pad2(m)}-${pad2(d)}T`;
    dayText.set(day, date);
  }
  const ofDay = ms - day * DAY_MS;
  let time = timeText.get(ofDay);
  if (time === undefined) {
    const h = Math.floor(ofDay / 3_600_000);
    const min = Math.floor((ofDay % 3_600_000) / 60_000);
    const s = Math.floor((ofDay % 60_000) / 1000);
    time = `${pad2(h)}:${pad2(min)}:${pad2(s)}.${pad3(ofDay % 1000)}Z`;
    // Seeded times are whole seconds (86,400 texts at most); clock times with milliseconds are not cached.
    if (ofDay % 1000 === 0) timeText.set(ofDay, time);
  }
  return date + time;
}

/** Whole UTC days since the epoch: the unit every date filter compares in. */
export function dayNumber(ms: number): number {
  return Math.floor(ms / DAY_MS);
}

/** Day number of a YYYY-MM-DD query date (already validated by the query schema). */
export function queryDayNumber(date: string): number {
  return dayNumber(Date.parse(`${date}T00:00:00Z`));
}

export type Interval = 'day' | 'week' | 'month' | 'year';

/** `count` intervals after `ms`; months clamp to the last day (Jan 31 + 1 month = Feb 28/29). */
export function addInterval(ms: number, interval: Interval, count: number): number {
  if (interval === 'day') return ms + count * DAY_MS;
  if (interval === 'week') return ms + count * 7 * DAY_MS;
  const months = interval === 'month' ? count : count * 12;
  const day = Math.floor(ms / DAY_MS);
  const { y, m, d } = civil(day);
  const index = y * 12 + (m - 1) + months;
  const year = Math.floor(index / 12);
  const month = index - year * 12;
  const lastDay = new Date(Date.UTC(year, month + 1, 0)).getUTCDate();
  return Date.UTC(year, month, Math.min(d, lastDay)) + (ms - day * DAY_MS);
}

/** Whole seconds, so seeded timestamps read naturally ("2025-03-04T10:21:07.000Z"). */
export function wholeSeconds(ms: number): number {
  return Math.floor(ms / 1000) * 1000;
}
