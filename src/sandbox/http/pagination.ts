import type { ListView } from '../model/types.js';
import { HttpError } from './errors.js';

/**
 * DRF-style cursor pagination over a model ListView (items sorted by ascending id).
 *
 * A cursor is an opaque base64url token holding a *position* (an id boundary) and a direction:
 * forward means "items with id > p", reverse means "the last page of items with id < p". Because it
 * remembers an id rather than an offset, records created during a traversal (new, higher ids) are
 * neither repeated nor skipped, and records removed meanwhile do not shift the pages.
 */

export interface Cursor {
  position: number;
  reverse: boolean;
}

export interface PageBody<T> {
  next: string | null;
  previous: string | null;
  results: T[];
}

export function encodeCursor(cursor: Cursor): string {
  const text = cursor.reverse ? `r=1&p=${cursor.position}` : `p=${cursor.position}`;
  return Buffer.from(text, 'utf8').toString('base64url');
}

export function decodeCursor(token: string): Cursor {
  const invalid = () =>
    new HttpError(400, 'invalid_cursor', 'Invalid cursor: use the next or previous URL of a page as given.', [
      { field: 'cursor', message: 'not a cursor issued by this API' },
    ]);
  if (!/^[A-Za-z0-9_-]+={0,2}$/.test(token)) throw invalid();
  const params = new URLSearchParams(Buffer.from(token, 'base64url').toString('utf8'));
  const position = params.get('p');
  const reverse = params.get('r');
  const keys = [...params.keys()];
  if (!position || !/^-?\d{1,15}$/.test(position)) throw invalid();
  if (reverse !== null && reverse !== '1') throw invalid();
  if (keys.some((k) => k !== 'p' && k !== 'r')) throw invalid();
  return { position: Number(position), reverse: reverse === '1' };
}

/** Index of the first item whose id is greater than `id` (binary search). */
function firstAfter(items: readonly { id: number }[], id: number): number {
  let lo = 0;
  let hi = items.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (items[mid]!.id <= id) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of the first item whose id is at least `id`. */
function firstAtOrAfter(items: readonly { id: number }[], id: number): number {
  return firstAfter(items, id - 1);
}

export interface PageRequest {
  cursor: string | undefined;
  pageSize: number;
  /** Builds the absolute URL of a page from a cursor (the request's own URL with `cursor` replaced). */
  linkFor: (cursor: Cursor) => string;
}

export function paginate<T extends { id: number }>(view: ListView<T>, request: PageRequest): PageBody<T> {
  const { items, matches } = view;
  const cursor = request.cursor === undefined || request.cursor === '' ? null : decodeCursor(request.cursor);
  const size = request.pageSize;
  const results: T[] = [];
  let hasMoreAhead = false;
  let hasMoreBehind = false;

  if (!cursor?.reverse) {
    const start = cursor ? firstAfter(items, cursor.position) : 0;
    for (let i = start; i < items.length; i++) {
      const item = items[i]!;
      if (!matches(item)) continue;
      if (results.length === size) {
        hasMoreAhead = true;
        break;
      }
      results.push(item);
    }
    hasMoreBehind = cursor !== null && anyMatch(view, start - 1, -1);
  } else {
    const end = firstAtOrAfter(items, cursor.position);
    for (let i = end - 1; i >= 0; i--) {
      const item = items[i]!;
      if (!matches(item)) continue;
      if (results.length === size) {
        hasMoreBehind = true;
        break;
      }
      results.push(item);
    }
    results.reverse();
    hasMoreAhead = anyMatch(view, end, 1);
  }

  // An empty page still links back and forth from the cursor's own position.
  const first = results[0]?.id;
  const last = results[results.length - 1]?.id;
  const nextPosition = last ?? (cursor ? cursor.position - (cursor.reverse ? 1 : 0) : 0);
  const previousPosition = first ?? (cursor ? cursor.position + (cursor.reverse ? 0 : 1) : 0);
  return {
    next: hasMoreAhead ? request.linkFor({ position: nextPosition, reverse: false }) : null,
    previous: hasMoreBehind ? request.linkFor({ position: previousPosition, reverse: true }) : null,
    results,
  };
}

/** Whether any matching item lies from `from` onwards in direction `step` (stops at the first). */
function anyMatch<T extends { id: number }>(view: ListView<T>, from: number, step: 1 | -1): boolean {
  for (let i = from; i >= 0 && i < view.items.length; i += step) {
    if (view.matches(view.items[i]!)) return true;
  }
  return false;
}
