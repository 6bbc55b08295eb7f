/**
 * The interface where extraction meets the warehouse (docs/operations.md, "What a run promises": atomic
 * progress): pages of validated records, each with the stream state that follows it, committed together in
 * one transaction by the runner.
 */

/**
 * What kind of API object a record is; normalize maps each kind to its tables (its plan). The built-in
 * kinds are the keys of the plans (`BuiltinEntityKind`, src/model/plans.ts); a stream declared outside src/
 * brings its own kind with its plan and tables (docs/architecture.md, "Adding a stream").
 */
export type EntityKind = string;

/**
 * What to do with fields the model does not map, per stream (in the style of dlt's schema contracts):
 * `evolve` keeps them in the row's `_extra` and names new ones in `_schema_changes`; `freeze` rejects the
 * record; `discard` drops them (still named in `_schema_changes`). Set by a stream's `schemaContract` option.
 */
export type SchemaContract = 'evolve' | 'freeze' | 'discard';
export const SCHEMA_CONTRACTS: readonly SchemaContract[] = ['evolve', 'freeze', 'discard'];

/** A record that failed validation or normalization: kept with its reason, never dropped. */
export interface Rejection {
  stream: string;
  /** The record's key when one could be read (id or number), else null. */
  key: string | null;
  reason: string;
  raw: unknown;
  /** Where it came from: a URL path for API pages, `file:line` for ingested documents. */
  source?: string;
  /** The field to blame (its first failing one, `lines.0.price`), when one is. */
  fieldPath?: string;
}

/** Progress of one slice (a date window, a status re-read, or the whole list for full scans). */
export interface SliceState {
  /** The next page to fetch, or null when the slice has not started or is complete. */
  nextUrl: string | null;
  done: boolean;
}

/** Saved per store and stream in `_sync_state`. */
export interface StreamState {
  /** Nightly watermark: the last day (YYYY-MM-DD) fully covered by incremental windows. */
  watermark: string | null;
  /** When the last full scan of this stream completed (ISO timestamp). */
  lastFullScanAt: string | null;
  /**
   * Pages the last complete full scan read, its resumed runs included: the estimate a progress bar shows for
   * the next one. Absent when no full scan completed since it was counted (states saved before).
   */
  lastFullScanPages?: number;
  /** The current pass: its mode, when it started, and the slices it is working through. */
  pass: {
    id: string;
    mode: SyncMode;
    startedAt: string;
    /**
     * Pages committed in this pass so far, across the runs that resumed it; absent in a pass saved before
     * they were counted (its count is then unknown and not kept as an estimate).
     */
    pages?: number;
    /**
     * A full scan bounded by a start date: the first creation day it reads (kept with the pass, so a resumed
     * scan soft-deletes within the bounds it was planned with, even if `startDate` changed since).
     */
    createdFrom?: string;
    /** Slices planned for this pass, by id, so a resumed run finishes the same plan. */
    slices: Record<string, SliceState & { params: Record<string, string | string[]> }>;
  } | null;
  /** Stream-specific bookkeeping (for example the ids of open fulfillment orders to refresh). */
  extra: Record<string, unknown>;
}

export const emptyStreamState = (): StreamState => ({
  watermark: null,
  lastFullScanAt: null,
  pass: null,
  extra: {},
});

export type SyncMode = 'incremental' | 'full_refresh' | 'backfill';

/**
 * The text each API record was received as, by record object: kept by extraction where a page's body gives
 * it (src/extract/received-text.ts), read by the warehouse for the raw landing, which serializes a record
 * that has none. A WeakMap, so a record dropped takes its text along.
 */
export const RECEIVED_TEXTS = new WeakMap<object, string>();

/** One page handed from extraction to the warehouse. */
export interface PageCommit {
  store: string;
  stream: string;
  entity: EntityKind;
  runId: string;
  /** Validated API objects, exactly as received (unknown extra fields included). */
  records: Record<string, unknown>[];
  rejections: Rejection[];
  /** The stream's whole state after this page, saved in the same transaction as the rows. */
  state: StreamState;
  /**
   * Set on the commit that completes a full scan: every row of this stream's tables for this store that
   * was not loaded since `passStartedAt` gets `_deleted_at`, and rows loaded since have it cleared. With
   * `createdFrom` (a scan bounded by the stream's `startDate`), only rows whose record was created on or
   * after that UTC day can get `_deleted_at`: older ones were outside the scan, not missing from it.
   */
  completedFullScan?: { passStartedAt: string; createdFrom?: string };
  /**
   * Set on the commit that completes a backfill's pass: it does not count as the stream's last success,
   * which is what `status` holds against the freshness bound. A narrow backfill that succeeds must not
   * make a stream whose nightly runs fail look fresh.
   */
  completedBackfill?: boolean;
  /** What to do with fields the model does not map (the stream's `schemaContract`); `evolve` when absent. */
  contract?: SchemaContract;
  /**
   * Set on a stream's closing commit (the state that ends its pass): nothing of the stream follows it and the
   * stream waits for it, so a group holding it is committed without waiting for more pages (page-groups.ts).
   */
  last?: boolean;
  /**
   * Set when the page answers a one-day window of a date filter that dates an event (a subscription's
   * `cancel_date`): by the API, each of its records had that event on that day (WindowEvent).
   */
  windowEvent?: WindowEvent;
}

/**
 * What a record's presence in a one-day window of an event's date filter says: the API dated `event` on `day`
 * (YYYY-MM-DD) for it, where the record itself carries no time of the event. Kept in `_window_events`.
 */
export interface WindowEvent {
  event: string;
  day: string;
}

/** Tuning of one stream, from sync.config.json (defaults in src/streams.ts). */
export interface StreamOptions {
  enabled: boolean;
  /**
   * Earliest creation day (YYYY-MM-DD) of the records a pass reads: the first run's windows start there,
   * and no later pass (incremental or full scan) reads records created before it; null means no bound.
   */
  startDate: string | null;
  /** Days re-read behind the watermark on every incremental run (late or edited records). */
  lookbackDays: number;
  /** Size of one date-window slice, in days. */
  windowDays: number;
  /** A full scan replaces the incremental run when the last one is older than this many days; null never. */
  fullRefreshDays: number | null;
  /** Slices read at once (all share the store's single rate limit). */
  concurrency: number;
  /** Upper bound of per-record refresh requests in one run (fulfillment orders still open). */
  maxRefreshPerRun: number;
  /**
   * An open fulfillment order is due for a re-read once the time since it was last read reaches this fraction
   * of its age (capped at 30 days); 0 makes every open one due on every run.
   */
  refreshAgeFraction: number;
  /** What to do with fields the model does not map: keep them in `_extra`, reject the record, or drop them. */
  schemaContract: SchemaContract;
}
