import type { EntityKind, StreamOptions } from './contracts.js';
import type { ListOperationId } from './extract/operations.js';

/**
 * The API-backed streams, each declared once. Everything else that lists streams is derived from here: the
 * names `--streams` and sync.config.json accept, each stream's option defaults, the config's JSON Schema
 * (schemas/sync.config.schema.json), the table `status` counts, the CLI help, and the runnable streams of
 * src/extract/index.ts. This module holds data only, so the CLI and the config read it without loading any
 * HTTP or DuckDB code. Documents (orders, carts …) arrive by ingest instead.
 */

/**
 * How a stream reads its list: `full_scan` reads the whole list every run (or, with `fullRefreshDays`, every that
 * many days and nothing in between) and soft-deletes what a completed scan did not see
 * (src/extract/streams/full-scan.ts); `date_windows` reads creation-date windows from its
 * watermark, with a reader of its own (src/extract/streams/, keyed by stream name in src/extract/index.ts).
 */
export type StreamStrategy = 'full_scan' | 'date_windows';

export interface StreamDeclaration {
  /** In `--streams`, sync.config.json, `_sync_state`, `_rejected_records` and `status`. */
  name: string;
  /** The list operation it reads (schemas/operations.ts); its scopes are what the access probe checks. */
  operation: ListOperationId;
  /** The kind of record it reads: the entity's plan says which tables a record fills. */
  entity: EntityKind;
  /** The table of the records themselves (the root of the entity's plan): what `status` counts. */
  table: string;
  strategy: StreamStrategy;
  /** Options that differ from DEFAULT_STREAM_OPTIONS; sync.config.json overrides both. */
  defaults: Partial<StreamOptions>;
}

/** In the order a sync runs them and the CLI lists them. */
export const STREAMS = [
  // Fulfillment locations (spec 2.1, 4.6): a short list, read whole every run.
  {
    name: 'locations',
    operation: 'listLocations',
    entity: 'location',
    table: 'locations',
    strategy: 'full_scan',
    defaults: {},
  },
  // Metadata definitions (spec 2.9, 4.7): a short list, read whole every run.
  {
    name: 'metadata_definitions',
    operation: 'listMetadata',
    entity: 'metadata_definition',
    table: 'metadata_definitions',
    strategy: 'full_scan',
    defaults: {},
  },
  // Products with their variants, images, categories, prices and stockrecords (spec 2.7, 4.3), read whole
  // weekly: the list has no change filter nor a stated order, so there is no cheaper sound way to find changes.
  {
    name: 'products',
    operation: 'listProducts',
    entity: 'product',
    table: 'products',
    strategy: 'full_scan',
    defaults: { fullRefreshDays: 7 },
  },
  // Subscriptions (spec 2.8, 4.4), fully reconciled weekly: what moves without a date to find it by is caught then.
  {
    name: 'subscriptions',
    operation: 'listSubscriptions',
    entity: 'subscription',
    table: 'subscriptions',
    strategy: 'date_windows',
    defaults: { fullRefreshDays: 7 },
  },
  // Fulfillment orders (spec 2.4, 4.5), then a refresh of the open ones by id.
  {
    name: 'fulfillment_orders',
    operation: 'listAssignedFulfillmentOrders',
    entity: 'fulfillment_order',
    table: 'fulfillment_orders',
    strategy: 'date_windows',
    defaults: {},
  },
] as const satisfies readonly StreamDeclaration[];

export type StreamName = (typeof STREAMS)[number]['name'];

/** The entity kinds the built-in streams read: each must have a plan (src/model/plans.ts checks it). */
export type StreamEntityKind = (typeof STREAMS)[number]['entity'];

export const STREAM_NAMES: readonly StreamName[] = STREAMS.map((stream) => stream.name);

/**
 * Every stream's defaults, before its own (`defaults`) and sync.config.json's. Nightly runs re-read two days
 * behind the watermark so late writes are caught; date windows of 30 days keep a long backfill in parallel
 * chains of moderate length.
 */
export const DEFAULT_STREAM_OPTIONS: Readonly<StreamOptions> = {
  enabled: true,
  startDate: null,
  lookbackDays: 2,
  windowDays: 30,
  fullRefreshDays: null,
  concurrency: 2,
  maxRefreshPerRun: 40,
  refreshAgeFraction: 0.25,
  schemaContract: 'evolve',
};

/** The declaration of a built-in stream, or undefined for any other name. */
export function streamDeclaration(name: string): StreamDeclaration | undefined {
  return STREAMS.find((stream) => stream.name === name);
}

/** A stream's options when sync.config.json says nothing about it: a built-in's by name, or any declaration's. */
export function defaultStreamOptions(
  stream: StreamName | Pick<StreamDeclaration, 'defaults'>,
): StreamOptions {
  const declared = typeof stream === 'string' ? streamDeclaration(stream) : stream;
  return { ...DEFAULT_STREAM_OPTIONS, ...declared?.defaults };
}

/**
 * The streams each store enables, as `{store, stream}`: what `status`, the report and the demo list, even a
 * stream that has never completed a pass. Here, not in config.ts, so that commands reach it without loading zod.
 */
export function enabledStreams(
  stores: readonly { name: string; streams: Record<StreamName, { enabled: boolean }> }[],
): { store: string; stream: StreamName }[] {
  return stores.flatMap((store) =>
    STREAM_NAMES.filter((stream) => store.streams[stream].enabled).map((stream) => ({
      store: store.name,
      stream,
    })),
  );
}
