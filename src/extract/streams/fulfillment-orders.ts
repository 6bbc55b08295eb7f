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
 * `GET /fulfillment-orders/{id}/` after the windows. Young ones change most (they are being fulfilled), old
 * open ones seldom, so each is re-read in proportion to its age: once the time since it was last read
 * reaches `refreshAgeFraction` of its age (capped at MAX_REFRESH_INTERVAL_MS). Of those due, the ones due
 * longest go first, at most `maxRefreshPerRun` a run; the rest stay due for the next run.
 */

/** Statuses after which a fulfillment order no longer changes (open enum: anything else is "open"). */
export const CLOSED_STATUSES = new Set(['closed', 'cancelled', 'canceled', 'incomplete', 'fulfilled']);
const OPEN_KEY = 'openFulfillmentOrders';
/** id → since when it exists: its `created_at` when the server sends one, otherwise when it was first seen. */
const SINCE_KEY = 'openFulfillmentOrdersSince';
/** Refreshed records committed together: small enough to lose little on a kill, big enough to batch. */
const REFRESH_BATCH = 25;
/** However old an open fulfillment order is, it is re-read at least this often (budget permitting). */
export const MAX_REFRESH_INTERVAL_MS = 30 * 86_400_000;

/** id → when it was last seen (ISO), for fulfillment orders known and not closed. */
export function openFulfillmentOrders(state: StreamState): Record<string, string> {
  return stateMap(state, OPEN_KEY);
}

/** id → since when it exists (ISO), for the same fulfillment orders as openFulfillmentOrders. */
export function openFulfillmentOrdersSince(state: StreamState): Record<string, string> {
  return stateMap(state, SINCE_KEY);
}

function stateMap(state: StreamState, key: string): Record<string, string> {
  const value = state.extra[key];
  if (value && typeof value === 'object') return value as Record<string, string>;
  const fresh: Record<string, string> = {};
  state.extra[key] = fresh;
  return fresh;
}

function forget(state: StreamState, id: string): void {
  delete openFulfillmentOrders(state)[id];
  delete openFulfillmentOrdersSince(state)[id];
}

/**
 * When a fulfillment order is next due for a re-read (ms), or null when it is not known as open. A state
 * saved before ages were kept has no `since`: the order then counts from when it was last seen.
 */
export function refreshDueAt(state: StreamState, id: string, fraction: number): number | null {
  const seenAt = openFulfillmentOrders(state)[id];
  if (seenAt === undefined) return null;
  // A time that does not parse (a state edited by hand) makes the order due now rather than never.
  const seen = Date.parse(seenAt) || 0;
  const since = Math.min(seen, Date.parse(openFulfillmentOrdersSince(state)[id] ?? seenAt) || seen);
  // interval = fraction × age at the moment it falls due: t − seen = fraction × (t − since).
  const interval = fraction >= 1 ? Number.POSITIVE_INFINITY : (fraction * (seen - since)) / (1 - fraction);
  return seen + Math.min(interval, MAX_REFRESH_INTERVAL_MS);
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
  const since = openFulfillmentOrdersSince(state);
  const seenAt = ctx.now.toISOString();
  for (const record of records) {
    const id = String(record['id']);
    if (CLOSED_STATUSES.has(String(record['status']))) {
      forget(state, id);
      continue;
    }
    open[id] = seenAt;
    // Real servers send `created_at` (spec 2.4 shows none); without it, the age counts from the first sight.
    const created = typeof record['created_at'] === 'string' ? Date.parse(record['created_at']) : Number.NaN;
    if (!Number.isNaN(created) && created <= ctx.now.getTime()) since[id] = new Date(created).toISOString();
    else since[id] ??= seenAt;
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
  const now = ctx.now.getTime();
  const passStarted = Date.parse(ctx.passStartedAt);
  const fraction = Math.max(0, ctx.options.refreshAgeFraction);
  const dueAll = Object.entries(openFulfillmentOrders(ctx.state))
    // Seen in this pass already (by its windows, or refreshed before an interruption): fresh.
    .filter(([, seenAt]) => Date.parse(seenAt) < passStarted)
    .map(([id]) => ({ id, at: refreshDueAt(ctx.state, id, fraction)! }))
    .filter((entry) => entry.at <= now)
    .sort((a, b) => a.at - b.at || Number(a.id) - Number(b.id));
  const due = dueAll.slice(0, Math.max(0, ctx.options.maxRefreshPerRun)).map((entry) => entry.id);
  ctx.logger.debug('fulfillment_orders.refresh', {
    open: Object.keys(openFulfillmentOrders(ctx.state)).length,
    due: dueAll.length,
    refreshing: due.length,
  });
  if (dueAll.length > due.length) {
    ctx.logger.info('fulfillment_orders.refresh_budget', {
      message: `${dueAll.length} open fulfillment orders are due for a re-read and maxRefreshPerRun is ${ctx.options.maxRefreshPerRun}: the ${dueAll.length - due.length} due most recently wait for a later run`,
    });
  }
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
        for (const id of gone) forget(state, id);
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
