import type { z } from 'zod';
import type { OperationSpec, Scope } from '../../../schemas/index.js';
import type {
  EntityKind,
  Rejection,
  SliceState,
  StreamOptions,
  StreamState,
  SyncMode,
  WindowEvent,
} from '../../contracts.js';
import type { Logger } from '../../log.js';
import type { ApiClient } from '../client.js';
import type { DateWindow } from '../dates.js';
import type { RequestMeter } from '../operations.js';

/**
 * What a stream declares (as in Airbyte's CDK): name, key, cursor, how a pass is cut into slices, and how
 * a slice is read as pages of validated records. Streams never checkpoint: the driver (run-stream.ts)
 * saves each page with the state that follows it.
 */

export interface SlicePlan {
  id: string;
  params: Record<string, string | string[]>;
}

/** `full`: the slices together read every record (a full scan); `windows`: a date-bounded part. */
export type PassKind = 'full' | 'windows';

export interface PassPlan {
  kind: PassKind;
  slices: SlicePlan[];
  /**
   * For a full scan bounded by `startDate`: the first creation day it reads. Its soft deletes then apply
   * only to rows created on or after that day (see PageCommit.completedFullScan).
   */
  createdFrom?: string;
}

export interface PlanInput {
  mode: SyncMode;
  state: StreamState;
  options: StreamOptions;
  now: Date;
  /** Explicit window of a backfill. */
  window?: DateWindow | undefined;
}

export interface StreamContext {
  client: ApiClient;
  mode: SyncMode;
  /** The live state; only the driver's commit section changes it. */
  state: StreamState;
  options: StreamOptions;
  now: Date;
  /** When the current pass started (ISO): records seen since then are fresh. */
  passStartedAt: string;
  logger: Logger;
  meter: RequestMeter;
  signal: AbortSignal;
  /**
   * Told when a slice's saved cursor was dropped and the slice restarted from its first page (the API refused
   * the cursor as expired, or it can no longer be used): the driver counts it for the run's summary.
   */
  cursorDropped?(sliceId: string): void;
  /** The record fields its version is read from: a record whose value there fails its schema is rejected whole (validate.ts). */
  versionFields?: readonly string[];
}

export interface ExtractedPage {
  records: Record<string, unknown>[];
  rejections: Rejection[];
  /** The slice's next page URL, or null when the slice is complete. */
  next: string | null;
  /** Bookkeeping applied to the state in the same commit as the page (e.g. forget records that are gone). */
  applyState?: (state: StreamState) => void;
}

/** What a stream's declaration gives its reader: the rest of a StreamDefinition comes from its strategy. */
export type DeclaredStream = Pick<StreamDefinition, 'name' | 'entity' | 'table' | 'defaults' | 'operation'>;

/**
 * A runnable stream: its declaration (src/streams.ts) with the reader its strategy gives it. A stream declared
 * outside src/streams.ts is made the same way (fullScanStream) and handed to the sync pipeline with the others.
 */
export interface StreamDefinition {
  name: string;
  entity: EntityKind;
  /** The table of the records themselves (its plan's root). */
  table: string;
  /** Options that differ from DEFAULT_STREAM_OPTIONS, for a store whose config says nothing of the stream. */
  defaults: Partial<StreamOptions>;
  primaryKey: readonly string[];
  /** The list operation that reads it (its scopes are what the probe checks). */
  operation: OperationSpec;
  schema: z.ZodType;
  /** Any one of these scopes lets the token read the stream. */
  scopes: readonly Scope[];
  /** What the incremental cursor is, in words (for docs and `status`). */
  cursor: string;
  /** Whether a completed full scan soft-deletes rows it did not see. */
  softDeletes: boolean;
  plan(input: PlanInput): PassPlan;
  /**
   * The event a slice's records are dated with, when the slice is a one-day window of a filter on that
   * event's date (its saved params say so, so a resumed pass dates the same way); null or absent for others.
   */
  windowEvent?(params: SlicePlan['params']): WindowEvent | null;
  readSlice(
    ctx: StreamContext,
    slice: SliceState & { params: SlicePlan['params'] },
    sliceId: string,
  ): AsyncGenerator<ExtractedPage>;
  /** Bookkeeping after each page of records, inside the commit section. */
  afterPage?(records: readonly Record<string, unknown>[], state: StreamState, ctx: StreamContext): void;
  /** A last phase after every slice is done (fulfillment-order refresh); must be resumable from the state. */
  finish?(ctx: StreamContext): AsyncGenerator<ExtractedPage>;
}
