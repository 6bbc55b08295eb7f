import type { WindowEvent } from '../contracts.js';
import { literal } from '../model/index.js';

/**
 * `_window_events` (src/model/tables/bookkeeping.ts): the events the API dated for records through a one-day
 * window of a date filter (PageCommit.windowEvent). A record from such a window is landed with the window as
 * its source, so a rebuild, which replays the landing through the same path (documents.ts), dates it again.
 */

const PREFIX = 'window:';

/** The landing source of a record received from `window`. */
export const windowSource = (window: WindowEvent): string => `${PREFIX}${window.event}:${window.day}`;

/** The window a landed record's source names, or null for any other source. */
export function windowOfSource(source: string | null): WindowEvent | null {
  if (source === null || !source.startsWith(PREFIX)) return null;
  const match = /^([a-z_]+):(\d{4}-\d{2}-\d{2})$/.exec(source.slice(PREFIX.length));
  return match ? { event: match[1]!, day: match[2]! } : null;
}

/** A record a batch received from a dating window. */
export interface DatedRecord extends WindowEvent {
  stream: string;
  recordId: string;
}

/**
 * The statement adding a batch's dated records to `_window_events`, each (store, stream, record, event, day)
 * once: a window re-read on a later night (the lookback) finds the same records and adds nothing.
 */
export function windowEventsSql(
  store: string,
  runId: string,
  syncedAtMs: number,
  dated: readonly DatedRecord[],
): string {
  const at = `TIMESTAMPTZ ${literal(new Date(syncedAtMs).toISOString())}`;
  const rows = dated.map(
    (d) => `(${literal(d.stream)}, ${literal(d.recordId)}, ${literal(d.event)}, DATE ${literal(d.day)})`,
  );
  return (
    `INSERT INTO _window_events (_store, stream, record_id, event, day, first_seen_at, run_id) ` +
    `SELECT DISTINCT ${literal(store)}, v.stream, v.record_id, v.event, v.day, ${at}, ${literal(runId)} ` +
    `FROM (VALUES ${rows.join(', ')}) v(stream, record_id, event, day) ` +
    `WHERE NOT EXISTS (SELECT 1 FROM _window_events w WHERE w._store = ${literal(store)} AND w.stream = v.stream ` +
    `AND w.record_id = v.record_id AND w.event = v.event AND w.day = v.day)`
  );
}
