import pLimit from 'p-limit';
import type { PageCommit, StreamOptions, StreamState, SyncMode } from '../contracts.js';
import { asStoreSyncError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import type { ApiClient } from './client.js';
import { checkWindow, type DateWindow, dayOf, maxDay } from './dates.js';
import type { RequestMeter, RequestWait } from './operations.js';
import { checkCursorLength } from './pagination.js';
import { firstRequestFailure } from './probe.js';
import type { ExtractedPage, PassKind, StreamContext, StreamDefinition } from './streams/types.js';

/**
 * The stream driver. It plans a pass (or resumes the one saved in `state.pass`), reads its slices with
 * `options.concurrency` chains at once under the store's single limiter, and hands every page to `commit`
 * together with the whole state that follows it, one commit at a time, so the warehouse can save rows and
 * cursor in one transaction. A final commit closes the pass: only an incremental pass moves the watermark.
 */

export interface StreamProgress {
  stream: string;
  /** Pages, records and rejections committed by this run (not those of an earlier run it resumes). */
  pages: number;
  records: number;
  rejections: number;
  requests: number;
  retries: number;
  /** Answers 429 (rate limited) among the requests. */
  rateLimited: number;
  slicesDone: number;
  slicesTotal: number;
  /** full: a full scan (its slices say little: often one chain); windows: date windows. */
  passKind: PassKind;
  /** Pages of the pass so far, those an earlier run committed before this one resumed it included; null: unknown. */
  passPages: number | null;
  /**
   * Of a full scan: the pages the previous complete full scan of the stream read (StreamState.lastFullScanPages),
   * the estimate of this one; null otherwise, or when no full scan was counted yet.
   */
  pagesEstimate: number | null;
}

/** StreamProgress at any moment, with what the stream is waiting for: what a heartbeat and a stall warning say. */
export interface StreamActivity extends StreamProgress {
  /** Answers received (any status): a sign of life between commits. */
  responses: number;
  /** What the stream waits for now, in words (`GET /api/…?page=7`, `the warehouse to commit a page`); null: nothing. */
  waitingFor: string | null;
}

export interface RunStreamArgs {
  stream: StreamDefinition;
  client: ApiClient;
  /** The saved state (not modified: the summary carries the new one). */
  state: StreamState;
  mode: SyncMode;
  /** The explicit window of a backfill (inclusive days). */
  window?: DateWindow | undefined;
  options: StreamOptions;
  /** The run's clock reading: plans windows up to this day and dates the pass. */
  now: Date;
  commit: (page: PageCommit) => Promise<void>;
  /**
   * Pages of the stream handed to `commit` whose commit has not finished yet, at most (1 by default: each
   * page waits for the commit of the one before). More lets the chains read on while the warehouse commits,
   * and lets it commit several pages in one transaction; only for a `commit` that applies pages in the order
   * it is called and, once one fails, applies none called after it (a cursor must never be saved ahead of
   * the rows before it), as pipelines/sync.ts's page groups do.
   */
  commitsInFlight?: number;
  logger?: Logger;
  onProgress?: (progress: StreamProgress) => void;
  /**
   * Called once the stream starts, with a reading of its activity at any moment (for a heartbeat); the
   * function it returns is called when the stream ends.
   */
  watch?: (peek: () => StreamActivity) => () => void;
  store?: string;
  runId?: string;
  signal?: AbortSignal;
  /** The record fields the stream's table reads its version from (StreamContext.versionFields). */
  versionFields?: readonly string[];
}

export interface StreamSummary {
  stream: string;
  mode: SyncMode;
  passId: string;
  /** Whether a pass saved by an earlier, interrupted run was finished. */
  resumed: boolean;
  pages: number;
  records: number;
  rejections: number;
  requests: number;
  retries: number;
  /**
   * Slices whose saved cursor was dropped (refused by the API as expired, or unusable) and that were read
   * again from their first page in this run.
   */
  cursorsDropped: number;
  /** The state after the final commit. */
  state: StreamState;
}

const windowKey = (window: DateWindow | undefined) => (window ? `${window.from}..${window.to}` : '-');

function passKind(passId: string): PassKind {
  return passId.startsWith('full/') ? 'full' : 'windows';
}

/** A saved pass is finished only by a run of the same mode (and, for backfills, the same window). */
function canResume(pass: StreamState['pass'], mode: SyncMode, window: DateWindow | undefined): boolean {
  return pass !== null && pass.mode === mode && pass.id.split('/')[2] === windowKey(window);
}

/** What a stream's requests wait for, in words: the first sent one, else one backing off, else one queued. */
function waitingFor(waiting: ReadonlySet<RequestWait> | undefined): string | null {
  const all = [...(waiting ?? [])];
  const sent = all.find((w) => w.phase === 'sent');
  if (sent) return `${sent.method} ${sent.path}`;
  const backoff = all.find((w) => w.phase === 'backoff');
  if (backoff) return `a retry of ${backoff.method} ${backoff.path}`;
  const queued = all[0];
  return queued ? `${queued.method} ${queued.path} (queued behind the rate limit)` : null;
}

/** Runs `task`s one after another in call order: commits never overlap. */
function serial(): <T>(task: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  return (task) => {
    const run = tail.then(task);
    tail = run.catch(() => {});
    return run;
  };
}

export async function runStream(args: RunStreamArgs): Promise<StreamSummary> {
  const { stream, mode, options, now } = args;
  const window = args.window ? checkWindow(args.window) : undefined;
  const logger = (args.logger ?? silentLogger).child({ stream: stream.name });
  const state: StreamState = structuredClone(args.state);
  const resumed = canResume(state.pass, mode, window);
  if (!resumed) {
    if (state.pass) logger.info('stream.pass_discarded', { passId: state.pass.id, mode });
    const plan = stream.plan({ mode, state, options, now, window });
    const startedAt = now.toISOString();
    state.pass = {
      id: `${plan.kind}/${mode}/${windowKey(window)}/${startedAt}`,
      mode,
      startedAt,
      ...(plan.createdFrom === undefined ? {} : { createdFrom: plan.createdFrom }),
      pages: 0,
      slices: Object.fromEntries(
        plan.slices.map((s) => [s.id, { nextUrl: null, done: false, params: s.params }]),
      ),
    };
  }
  const pass = state.pass!;
  const slices = Object.entries(pass.slices);
  logger.info(resumed ? 'stream.resume' : 'stream.start', { mode, passId: pass.id, slices: slices.length });

  const meter: RequestMeter = { requests: 0, retries: 0, rateLimited: 0, responses: 0, waiting: new Set() };
  const kind = passKind(pass.id);
  const pagesEstimate = kind === 'full' ? (state.lastFullScanPages ?? null) : null;
  let committing = false;
  const counts = { pages: 0, records: 0, rejections: 0 };
  let cursorsDropped = 0;
  const controller = new AbortController();
  const stopOuter = () => controller.abort(args.signal?.reason);
  args.signal?.addEventListener('abort', stopOuter, { once: true });
  // A stop that came before the stream began (between the run's start and this stream's) fires no event:
  // without this its first request would wait out every retry of a server that does not answer.
  if (args.signal?.aborted) stopOuter();
  const ctx: StreamContext = {
    client: args.client,
    mode,
    state,
    options,
    now,
    passStartedAt: pass.startedAt,
    logger,
    meter,
    signal: controller.signal,
    cursorDropped: () => {
      cursorsDropped++;
    },
    versionFields: args.versionFields ?? [],
  };
  const store = args.store ?? 'default';
  const runId = args.runId ?? `run-${now.toISOString()}`;
  const send = (page: Omit<PageCommit, 'store' | 'stream' | 'entity' | 'runId' | 'state'>) =>
    args.commit({
      store,
      stream: stream.name,
      entity: stream.entity,
      runId,
      ...page,
      state: structuredClone(state),
    });
  const inTurn = serial();
  // Commits handed over and not yet finished, oldest first (see RunStreamArgs.commitsInFlight), and the first
  // of them that failed: no page is handed over after it.
  const depth = Math.max(1, Math.floor(args.commitsInFlight ?? 1));
  const unfinished: Promise<void>[] = [];
  let commitFailure: { error: unknown } | null = null;
  const settleCommits = () => Promise.allSettled(unfinished);

  const commitPage = (page: ExtractedPage, sliceId?: string) =>
    inTurn(async () => {
      if (commitFailure) throw commitFailure.error;
      if (sliceId !== undefined) {
        // Never saved (nor its page committed): a cursor this long is refused by the chain before it gets here,
        // this is the guard for any other reader.
        if (page.next !== null) checkCursorLength(page.next, `slice ${sliceId}`);
        const slice = pass.slices[sliceId]!;
        slice.nextUrl = page.next;
        slice.done = page.next === null;
      }
      page.applyState?.(state);
      stream.afterPage?.(page.records, state, ctx);
      if (pass.pages !== undefined) pass.pages++;
      // `send` copies the state as it is now: each page is committed with the state that follows it.
      const windowEvent =
        sliceId === undefined ? null : (stream.windowEvent?.(pass.slices[sliceId]!.params) ?? null);
      const committed = send({
        records: page.records,
        rejections: page.rejections,
        ...(windowEvent ? { windowEvent } : {}),
      }).then(
        () => {
          counts.pages++;
          counts.records += page.records.length;
          counts.rejections += page.rejections.length;
          report();
        },
        (error: unknown) => {
          commitFailure ??= { error };
          throw error;
        },
      );
      const entry = committed.finally(() => {
        unfinished.splice(unfinished.indexOf(entry), 1);
      });
      entry.catch(() => {});
      unfinished.push(entry);
      // The chain reads on while fewer than `depth` commits are unfinished; it waits for the oldest otherwise.
      if (unfinished.length >= depth) await waitForCommit(unfinished[0]!);
    });
  /** Waits for a commit, the heartbeat saying so meanwhile. */
  const waitForCommit = async (commit: Promise<unknown>) => {
    committing = true;
    try {
      await commit;
    } finally {
      committing = false;
    }
  };
  /** Throws the first commit that failed, if one did. */
  const throwCommitFailure = () => {
    if (commitFailure) throw commitFailure.error;
  };
  /** Waits for every commit handed over; throws the first that failed. */
  const finishCommits = async () => {
    await inTurn(async () => {
      await waitForCommit(settleCommits());
      throwCommitFailure();
    });
  };
  const progress = (): StreamProgress => ({
    stream: stream.name,
    ...counts,
    requests: meter.requests,
    retries: meter.retries,
    rateLimited: meter.rateLimited ?? 0,
    slicesDone: slices.filter(([, s]) => s.done).length,
    slicesTotal: slices.length,
    passKind: kind,
    passPages: pass.pages ?? null,
    pagesEstimate,
  });
  const report = () => args.onProgress?.(progress());
  const unwatch = args.watch?.(() => ({
    ...progress(),
    responses: meter.responses ?? 0,
    waitingFor: committing ? 'the warehouse to commit a page' : waitingFor(meter.waiting),
  }));

  try {
    let failure: unknown = null;
    const limit = pLimit(Math.max(1, Math.floor(options.concurrency)));
    await Promise.all(
      slices
        .filter(([, slice]) => !slice.done)
        .map(([id, slice]) =>
          limit(async () => {
            if (failure !== null || controller.signal.aborted) return;
            try {
              for await (const page of stream.readSlice(ctx, slice, id)) await commitPage(page, id);
            } catch (error) {
              // The first failure stops the other chains; what they committed stays for a resume.
              failure ??= error;
              controller.abort();
            }
          }),
        ),
    );
    // The pages handed over are committed (or failed) before the stream goes on or stops.
    await settleCommits();
    // An interrupt aborts the requests in flight, which then fail as aborted: the interrupt is the story.
    if (args.signal?.aborted) throw args.signal.reason;
    if (failure !== null) throw failure;
    throwCommitFailure();
    if (stream.finish) for await (const page of stream.finish(ctx)) await commitPage(page);
    await finishCommits();

    state.pass = null;
    if (mode === 'incremental') {
      const reached = dayOf(new Date(pass.startedAt));
      state.watermark = state.watermark ? maxDay(state.watermark, reached) : reached;
    }
    if (kind === 'full') {
      state.lastFullScanAt = pass.startedAt;
      // The next full scan's estimate; a pass saved before pages were counted leaves the last known one.
      if (pass.pages !== undefined) state.lastFullScanPages = pass.pages;
    }
    await inTurn(() =>
      send({
        records: [],
        rejections: [],
        last: true,
        ...(kind === 'full' && stream.softDeletes
          ? {
              completedFullScan: {
                passStartedAt: pass.startedAt,
                ...(pass.createdFrom === undefined ? {} : { createdFrom: pass.createdFrom }),
              },
            }
          : {}),
        ...(mode === 'backfill' ? { completedBackfill: true } : {}),
      }),
    );
  } catch (error) {
    // What was handed over is committed or failed before the stream reports: the counts say what is stored.
    await settleCommits();
    // The requests and retries a stream spent before it failed are reported too: a stream that failed on its
    // first page (retries exhausted) was recorded in _sync_runs with 0 requests and 0 retries.
    report();
    if (args.signal?.aborted) {
      const reason = asStoreSyncError(args.signal.reason);
      logger.warn('stream.interrupted', { message: reason.message, ...counts });
      throw reason;
    }
    const failure = asStoreSyncError(error);
    // Before any page, a failure is told as the probe tells it (firstRequestFailure in probe.ts, the rule the
    // sync applies too): a 403 to the stream's own list is its missing scope, which the sync reports as a
    // skipped stream with a warning naming the scopes, so it is no failure to log here; a 404 to it says
    // which base URL to set. The sync logs nothing more for it: this is the stream's one failure line.
    const first = counts.pages === 0 ? firstRequestFailure(failure, args.client, stream) : null;
    if (first?.kind === 'denied')
      logger.debug('stream.denied', { code: failure.code, message: failure.message });
    else {
      const told = first?.error ?? failure;
      logger.error('stream.failed', { code: told.code, message: told.message, ...counts });
    }
    throw failure;
  } finally {
    args.signal?.removeEventListener('abort', stopOuter);
    unwatch?.();
  }
  logger.debug('stream.done', { ...counts, requests: meter.requests, retries: meter.retries });
  // The meter's counts only: its `waiting` and `responses` are for the heartbeat, and the run's 429s are the
  // client's (SyncResult.rateLimited, the rate_limited column), so none of them belongs in a stream's result.
  const { requests, retries } = meter;
  return {
    stream: stream.name,
    mode,
    passId: pass.id,
    resumed,
    ...counts,
    requests,
    retries,
    cursorsDropped,
    state,
  };
}
