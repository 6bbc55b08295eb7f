import { queryDayNumber } from './time.js';

/**
 * Small builders for list filters. A query compiles once into a list of tests, so `matches` does no
 * parsing or allocation per record scanned.
 */

export type Test<F> = (facts: F) => boolean;

export const lower = (value: string) => value.toLowerCase();

/** Case-insensitive equality with a nullable record value. */
export function equalsIgnoreCase<F>(
  query: string | undefined,
  read: (f: F) => string | null | undefined,
): Test<F> | null {
  if (query === undefined || query === '') return null;
  const wanted = lower(query);
  return (f) => {
    const value = read(f);
    return value !== null && value !== undefined && lower(value) === wanted;
  };
}

/** An inclusive UTC day range over a nullable day number; a record without the date never matches. */
export function dayRange<F>(
  from: string | undefined,
  to: string | undefined,
  read: (f: F) => number | null,
): Test<F> | null {
  if (from === undefined && to === undefined) return null;
  const low = from === undefined ? Number.NEGATIVE_INFINITY : queryDayNumber(from);
  const high = to === undefined ? Number.POSITIVE_INFINITY : queryDayNumber(to);
  return (f) => {
    const day = read(f);
    return day !== null && day >= low && day <= high;
  };
}

/** Any-of over one value per record (compared case-insensitively). */
export function oneOf<F>(
  values: string[] | undefined,
  read: (f: F) => string | null | undefined,
): Test<F> | null {
  if (!values?.length) return null;
  const wanted = new Set(values.map(lower));
  return (f) => {
    const value = read(f);
    return value !== null && value !== undefined && wanted.has(lower(value));
  };
}

/** Any-of over several items per record, each giving one key (already lower-cased). */
export function anyOf<F, I>(
  values: string[] | undefined,
  items: (f: F) => readonly I[],
  key: (item: I) => string,
): Test<F> | null {
  if (!values?.length) return null;
  const wanted = new Set(values.map(lower));
  return (f) => {
    for (const item of items(f)) if (wanted.has(key(item))) return true;
    return false;
  };
}

export function allOf<F>(tests: (Test<F> | null)[]): Test<F> {
  const active = tests.filter((t): t is Test<F> => t !== null);
  if (active.length === 0) return () => true;
  return (f) => {
    for (const test of active) if (!test(f)) return false;
    return true;
  };
}

export const digitsOnly = (value: string) => value.replace(/\D/g, '');
