import pLimit from 'p-limit';
import type { StreamState } from '../../contracts.js';
import { ERROR_CODES, isStoreSyncError } from '../../errors.js';
import { validateRecords } from '../validate.js';
import { readListSlice } from './list-slice.js';
import type {
  DeclaredStream,
  ExtractedPage,
  PassPlan,
  PlanInput,
  StreamContext,
  StreamDefinition,
} from './types.js';
import { fullScanPlan, incrementalFrom, todayOf, windowSlices } from './windows.js';

/**
 * Fulfillment orders (spec 2.4, 4.5). New ones arrive by `date_created_from/to` windows with a lookback;
 * but a fulfillment order changes after creation (moved, closed, fulfilled) and the list cannot filter by
 * change, so every one seen and not yet closed is remembered in `state.extra` and re-read with
 * `GET /fulfillment-orders/{id}/` after the windows, least recently seen first, at most
 * `maxRefreshPerRun` a run.
 */

/** Statuses after which a fulfillment order no longer changes (open enum: anything else is "open"). */
export const CLOSED_STATUSES = new Set(['closed', 'cancelled', 'canceled', 'incomplete', 'fulfilled']);
const OPEN_KEY = 'openFulfillmentOrders';
/** Refreshed records committed together: small enough to lose little on a kill, big enough to batch. */
const REFRESH_BATCH = 25;

/** id → when it was last seen (ISO), for fulfillment orders known and not closed. */
export function openFulfillmentOrders(state: StreamState): Record<string, string> {
  const value = state.extra[OPEN_KEY];
  if (value && typeof value === 'object') return value as Record<string, string>;
  const fresh: Record<string, string> = {};
  state.extra[OPEN_KEY] = fresh;
  return fresh;
}

function plan({ mode, state, options, now, window }: PlanInput): PassPlan {
  const params = ['date_created_from', 'date_created_to'] as const;
  if (mode === 'backfill' && window) {
    return { kind: 'windows', slices: windowSlices('created', window, options, ...params) };
  }
  const from = incrementalFrom(state, options);
  // A full refresh reads everything from `startDate` on (everything without one), never what is older.
  if (mode !== 'incremental' || from === null) return fullScanPlan(options, now, ...params);
  return { kind: 'windows', slices: windowSlices('created', { from, to: todayOf(now) }, options, ...params) };
}

function trackOpen(
  records: readonly Record<string, unknown>[],
  state: StreamState,
  ctx: StreamContext,
): void {
  const open = openFulfillmentOrders(state);
  const seenAt = ctx.now.toISOString();
  for (const record of records) {
    const id = String(record['id']);
    if (CLOSED_STATUSES.has(String(record['status']))) delete open[id];
    else open[id] = seenAt;
  }
}

type Outcome = { id: string; raw: unknown } | { id: string; gone: true };

async function fetchOne(ctx: StreamContext, id: string): Promise<Outcome> {
  try {
    const raw = await ctx.client.callRaw('getFulfillmentOrder', {
      params: { id },
      meter: ctx.meter,
      signal: ctx.signal,
    });
    return { id, raw };
  } catch (error) {
    if (isStoreSyncError(error, ERROR_CODES.HTTP_NOT_FOUND)) return { id, gone: true };
    throw error;
  }
}

async function* refreshOpen(stream: StreamDefinition, ctx: StreamContext): AsyncGenerator<ExtractedPage> {
  // A backfill loads a date range; keeping known records fresh is the nightly run's job.
  if (ctx.mode === 'backfill') return;
  const due = Object.entries(openFulfillmentOrders(ctx.state))
    .filter(([, seenAt]) => seenAt < ctx.passStartedAt)
    .sort(([idA, a], [idB, b]) => (a < b ? -1 : a > b ? 1 : Number(idA) - Number(idB)))
    .slice(0, Math.max(0, ctx.options.maxRefreshPerRun))
    .map(([id]) => id);
  if (due.length > 0) ctx.logger.debug('fulfillment_orders.refresh', { due: due.length });
  const limit = pLimit(Math.max(1, ctx.options.concurrency));
  for (let i = 0; i < due.length; i += REFRESH_BATCH) {
    const outcomes = await Promise.all(
      due.slice(i, i + REFRESH_BATCH).map((id) => limit(() => fetchOne(ctx, id))),
    );
    const found = outcomes.flatMap((o) => ('raw' in o ? [o] : []));
    const gone = outcomes.flatMap((o) => ('gone' in o ? [o.id] : []));
    const page = validateRecords(
      stream.schema,
      found.map((o) => o.raw),
      stream.name,
      'GET /fulfillment-orders/{id}/',
      ctx.versionFields,
    );
    const rejected = page.rejections.map((r) => r.key).filter((k): k is string => k !== null);
    yield {
      ...page,
      next: null,
      applyState: (state) => {
        const open = openFulfillmentOrders(state);
        for (const id of gone) delete open[id];
        // A rejected one goes to the back of the queue rather than being re-read first forever.
        for (const id of rejected) if (open[id] !== undefined) open[id] = ctx.now.toISOString();
      },
    };
  }
}

/** The fulfillment-orders stream as src/streams.ts declares it, with its windowed reader and refresh. */
export function fulfillmentOrdersStream(declared: DeclaredStream): StreamDefinition {
  const stream: StreamDefinition = {
    ...declared,
    primaryKey: ['id'],
    schema: declared.operation.response,
    scopes: declared.operation.scopes,
    cursor: 'watermark day: date_created_from from watermark − lookback, then refresh of open ones by id',
    softDeletes: false,
    plan,
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
    afterPage: trackOpen,
    finish: (ctx) => refreshOpen(stream, ctx),
  };
  return stream;
}
