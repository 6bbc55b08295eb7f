import type { StoreConfig, SyncConfig } from '../src/config.js';
import { readToken } from '../src/config.js';
import type { PageCommit, StreamOptions, SyncMode } from '../src/contracts.js';
import { asStoreSyncError, ERROR_CODES, StoreSyncError } from '../src/errors.js';
import {
  ApiClient,
  type DateWindow,
  firstRequestFailure,
  parseBaseUrl,
  runStream,
  STREAMS,
  type StreamActivity,
  type StreamDefinition,
  type StreamProgress,
} from '../src/extract/index.js';
import { openWarehouse, PageGroups, type Warehouse } from '../src/load/index.js';
import { RUNTIME_PROFILES } from '../src/load/runtime-profile.js';
import { logNewFields, type NewFields } from '../src/load/schema-changes.js';
import { newFieldsOfRun } from '../src/load/status.js';
import type { Logger } from '../src/log.js';
import { type Source, tableDef, unitVersionColumns } from '../src/model/index.js';
import { defaultStreamOptions, type StreamName } from '../src/streams.js';
import { drainAfterSync } from './drain.js';
import { exportParquet, prepareExportFolder } from './export.js';

/**
 * The sync pipeline for one store: extract every selected stream under the store's single rate limit and
 * commit each page with its cursor through the warehouse, one transaction at a time. A stream that fails is
 * recorded and the others go on (docs/streams.md, "Retries and errors"); the run's outcome decides the exit
 * code.
 */

/**
 * The record fields a table's unit version is read from (`unit.version`: a column, or `coalesce(a, b)`), by
 * the first field of each item-relative source alternative: extract rejects a record whole when one of
 * these fails its schema, since a record that cannot be ordered cannot be merged (src/extract/validate.ts).
 */
function versionFields(table: string): string[] {
  const def = tableDef(table);
  const fields = new Set<string>();
  for (const name of unitVersionColumns(def)) {
    const source: Source | undefined = def.columns.find((c) => c.name === name)?.source;
    const texts = source === undefined ? [] : typeof source === 'string' ? [source] : Object.values(source);
    for (const text of texts)
      for (const alternative of (text ?? '').split('|'))
        if (/^[A-Za-z_]/.test(alternative)) fields.add(alternative.split('.')[0]!);
  }
  return [...fields];
}

export type RunOutcome = 'succeeded' | 'completed_with_rejections' | 'partial' | 'failed' | 'interrupted';

export interface StreamResult {
  stream: string;
  /** interrupted: stopped by a signal (SIGINT, SIGTERM) at a page boundary; the next run resumes it. */
  status: 'ok' | 'failed' | 'skipped' | 'interrupted';
  resumed: boolean;
  pages: number;
  /** Records stored: those read, less those rejected (at validation or while normalizing). */
  records: number;
  /** Records rejected, at validation or while normalizing (in `_rejected_records`); never counted in `records`. */
  rejections: number;
  requests: number;
  retries: number;
  /** Slices whose saved cursor the API refused as expired (or that could not be used), read again from their start. */
  cursorsDropped?: number;
  message?: string;
}

export interface SyncResult {
  store: string;
  runId: string;
  mode: SyncMode;
  outcome: RunOutcome;
  streams: StreamResult[];
  requests: number;
  retries: number;
  rateLimited: number;
  seconds: number;
  /**
   * Field paths the model does not map that this run was the first to see, per table (values in the rows'
   * `_extra`, paths in `_schema_changes`); empty when none.
   */
  newFields: NewFields[];
  /**
   * exportAfterSync's export, when it ran and failed. The sync's data and outcome stand: the caller reports
   * what each stream did, and then this failure.
   */
  exportFailure?: StoreSyncError;
}

export interface SyncJob {
  config: SyncConfig;
  store: StoreConfig;
  /** null: every enabled stream. */
  streams: readonly string[] | null;
  /**
   * The streams the run chooses from: the built-in ones (src/streams.ts) unless given, e.g. with a stream
   * declared outside src/ (docs/architecture.md, "Adding a stream").
   */
  catalog?: readonly StreamDefinition[];
  mode: SyncMode;
  window?: DateWindow;
  logger: Logger;
  now?: () => Date;
  /** Defaults to the store's environment variable. */
  token?: string;
  onProgress?: (progress: StreamProgress) => void;
  /**
   * Called as each stream starts, with its store and run and a reading of its activity at any moment (counts as
   * stored, like onProgress's); the function it returns is called when the stream ends. The heartbeat's hook.
   */
  watch?: (run: { store: string; runId: string }, peek: () => StreamActivity) => () => void;
  signal?: AbortSignal;
  /** Set by the demo and tests: a warehouse already open for writing. */
  warehouse?: Warehouse;
}

const emptyResult = (stream: string, status: StreamResult['status'], message?: string): StreamResult => ({
  stream,
  status,
  resumed: false,
  pages: 0,
  records: 0,
  rejections: 0,
  requests: 0,
  retries: 0,
  ...(message ? { message } : {}),
});

const BUILT_IN: readonly StreamDefinition[] = Object.values(STREAMS);

/**
 * Pages of one stream read ahead of their commit, at most (see RunStreamArgs.commitsInFlight). The warehouse
 * commits a group of a few pages in less time than they take to arrive, except while it checkpoints (up to
 * 1.5 s on the large store, every 5 s or so) or while every stream's pages share it at the start of a run:
 * a chain reads on through those only if its window holds the pages it reads meanwhile. 10 pages stopped the
 * large store's subscriptions chain for some 4 s of a 35 s sync. 40 alone peaked 120 to 160 MB higher, at the
 * start of the run, nearly all of it garbage that the V8 heap's bounded growth (NODE_FLAGS, runtime-profile.ts)
 * collects sooner (docs/performance.md, "Issue 32 point 1").
 */
export const COMMITS_IN_FLIGHT = 40;
/**
 * A stream with this many pages waiting makes the open group ready (PageGroups): about the pages that arrive
 * while a group of that many commits, so that groups stay a few pages each whatever the window.
 */
export const GROUP_READY_PAGES = 6;

/** A stream's options for `store`: its config's, or the stream's defaults when the config cannot name it. */
function streamOptions(store: StoreConfig, stream: StreamDefinition): StreamOptions {
  return store.streams[stream.name as StreamName] ?? defaultStreamOptions(stream);
}

export function outcomeOf(streams: StreamResult[]): RunOutcome {
  if (streams.some((s) => s.status === 'interrupted')) return 'interrupted';
  if (streams.length > 0 && streams.every((s) => s.status === 'failed')) return 'failed';
  if (streams.some((s) => s.status !== 'ok')) return 'partial';
  if (streams.some((s) => s.rejections > 0)) return 'completed_with_rejections';
  return 'succeeded';
}

/**
 * The streams a run of `store` syncs: those asked for, or every enabled one of the catalog; none, or one the
 * catalog does not have, is a usage error. The sync command asks this of every store before the first runs,
 * so a store with nothing to sync stops the command before any store has changed the warehouse.
 */
export function streamsToSync(
  store: StoreConfig,
  streams: readonly string[] | null | undefined,
  catalog: readonly StreamDefinition[] = BUILT_IN,
): string[] {
  if (streams) {
    const unknown = streams.find((name) => !catalog.some((stream) => stream.name === name));
    if (unknown !== undefined)
      throw new StoreSyncError(ERROR_CODES.USAGE, `no stream is named "${unknown}".`);
    return [...streams];
  }
  const names = catalog.filter((stream) => streamOptions(store, stream).enabled).map((s) => s.name);
  if (names.length === 0)
    throw new StoreSyncError(ERROR_CODES.USAGE, `store "${store.name}" has no enabled stream to sync.`);
  return names;
}

export async function runSync(job: SyncJob): Promise<SyncResult> {
  const started = Date.now();
  const clock = job.now ?? (() => new Date());
  // The token is read before anything is opened, so a missing variable changes nothing.
  const token = job.token ?? readToken(job.store);
  const catalog = job.catalog ?? BUILT_IN;
  const names = streamsToSync(job.store, job.streams, catalog);
  // The base URL is checked before anything is opened, so an unsafe one changes nothing either.
  parseBaseUrl(job.store.baseUrl);
  // So is the Parquet folder of exportAfterSync: found unusable only after the sync, it would fail a run that
  // had committed its data, with the exit code that says nothing changed.
  const exportDir = job.config.exportAfterSync ? job.config.parquetDir : undefined;
  if (exportDir) await prepareExportFolder(exportDir);
  const warehouse =
    job.warehouse ??
    (await openWarehouse(job.config.warehouse, {
      logger: job.logger,
      // Closing it after the run publishes the read copy (src/load/read-copy.ts).
      readCopy: job.config.readCopy,
      waitForLockSeconds: job.config.waitForLockSeconds,
    }));
  const runId = await warehouse.startRun({
    store: job.store.name,
    command: 'sync',
    mode: job.mode,
    streams: names,
  });
  const logger = job.logger.child({ runId, store: job.store.name });
  // Created after the run starts so that its request and retry lines carry the run id and store too.
  const client = new ApiClient({
    baseUrl: job.store.baseUrl,
    token,
    rateLimit: job.store.rateLimit,
    retry: { maxRetries: job.config.maxRetries, maxWaitMs: job.config.maxWaitMinutes * 60_000 },
    timeouts: {
      connectMs: job.config.timeoutSeconds * 1000,
      headersMs: job.config.timeoutSeconds * 1000,
      bodyMs: job.config.timeoutSeconds * 1000,
      requestMs: job.config.requestDeadlineSeconds * 1000,
    },
    maxResponseBytes: job.config.maxResponseBytes,
    apiVersionHeader: job.store.apiVersionHeader,
    logger,
  });
  const results: StreamResult[] = [];
  let runError: StoreSyncError | null = null;
  let groups: PageGroups | null = null;
  try {
    logger.info('sync.start', { mode: job.mode, streams: names.join(','), ...(job.window ?? {}) });
    // No request is spent on checking access first: a stream learns a missing scope (a 403) or a wrong base
    // URL (a 404) from its own first list request, and is told as src/extract/probe.ts tells it.
    const selected = names.map((name) => catalog.find((stream) => stream.name === name)!);
    // The streams that failed before their first page, other than by a missing scope: when that is every
    // stream, the store is what failed (unreachable, down, not its API root), and the run fails with it.
    const failedFirst = new Map<string, StoreSyncError>();
    // Records can also be rejected while normalizing (an unusable key or version): the warehouse reports
    // those per commit, and they count like the extraction's own rejections. The extraction counts them
    // among the records it read; the run reports records stored, so they move from `records` to
    // `rejections` (else 5 stored and 4 rejected would show as "records 9"). A value refused alone (level
    // `field`) is a rejection too, but its record was stored: it stays among the records.
    const loadRejections = new Map<string, number>();
    const fieldRejections = new Map<string, number>();
    const latest = new Map<string, StreamProgress>();
    const contracts = new Map(
      selected.map((stream) => [stream.name, streamOptions(job.store, stream).schemaContract]),
    );
    // Pages are committed in groups when the API is faster than the warehouse (src/load/page-groups.ts);
    // each stream reads on while up to COMMITS_IN_FLIGHT of its pages wait for their group.
    groups = new PageGroups(warehouse, { readyPages: GROUP_READY_PAGES });
    const pageGroups = groups;
    const commit = async (page: PageCommit) => {
      const result = await pageGroups.commit({
        ...page,
        contract: contracts.get(page.stream) ?? 'evolve',
      });
      const extra = result.rejections - result.fieldRejections - page.rejections.length;
      if (extra > 0) loadRejections.set(page.stream, (loadRejections.get(page.stream) ?? 0) + extra);
      if (result.fieldRejections > 0)
        fieldRejections.set(page.stream, (fieldRejections.get(page.stream) ?? 0) + result.fieldRejections);
    };
    const stored = <T extends { stream: string; records: number; rejections: number }>(counts: T): T => {
      const rejectedAtLoad = loadRejections.get(counts.stream) ?? 0;
      return {
        ...counts,
        records: Math.max(0, counts.records - rejectedAtLoad),
        rejections: counts.rejections + rejectedAtLoad + (fieldRejections.get(counts.stream) ?? 0),
      };
    };
    // Under the sync's runtime profile (DuckDB's memory limit for a sync, runtime-profile.ts).
    await warehouse.withProfile(RUNTIME_PROFILES.sync, logger, () =>
      Promise.all(
        selected.map(async (stream) => {
          try {
            const summary = await runStream({
              stream,
              client,
              state: await warehouse.readState(job.store.name, stream.name),
              mode: job.mode,
              window: job.window,
              options: streamOptions(job.store, stream),
              now: clock(),
              commit,
              logger,
              store: job.store.name,
              runId,
              versionFields: versionFields(stream.table),
              ...(job.watch
                ? {
                    watch: (peek: () => StreamActivity) =>
                      job.watch!({ store: job.store.name, runId }, () => stored(peek())),
                  }
                : {}),
              commitsInFlight: COMMITS_IN_FLIGHT,
              onProgress: (extracted) => {
                const progress = stored(extracted);
                latest.set(stream.name, progress);
                job.onProgress?.(progress);
              },
              ...(job.signal ? { signal: job.signal } : {}),
            });
            const { records, rejections } = stored(summary);
            const { state: _state, passId: _passId, mode: _mode, ...counts } = summary;
            results.push({
              ...emptyResult(stream.name, 'ok'),
              ...counts,
              records,
              rejections,
              stream: stream.name,
              status: 'ok',
              ...(summary.cursorsDropped > 0
                ? {
                    message: `${summary.cursorsDropped === 1 ? 'a saved cursor' : `${summary.cursorsDropped} saved cursors`} expired; restarted from the first page`,
                  }
                : {}),
            });
            logger.info('stream.done', {
              stream: stream.name,
              pages: summary.pages,
              records,
              rejections,
              requests: summary.requests,
              ...(summary.cursorsDropped > 0 ? { cursorsDropped: summary.cursorsDropped } : {}),
            });
          } catch (error) {
            const failure = asStoreSyncError(error);
            // Problems of the whole job (warehouse, credentials) end the run; a stream's own failure does not.
            if (failure.code === ERROR_CODES.WAREHOUSE || failure.code === ERROR_CODES.HTTP_UNAUTHORIZED)
              throw failure;
            // What the stream committed before it failed is kept, and the summary says so.
            const done = latest.get(stream.name);
            const spent = { requests: done?.requests ?? 0, retries: done?.retries ?? 0 };
            if (!job.signal?.aborted && (done?.pages ?? 0) === 0) {
              const first = firstRequestFailure(failure, client, stream);
              if (first.kind === 'denied') {
                logger.warn('stream.skipped', { stream: stream.name, message: first.denied.message });
                results.push({ ...emptyResult(stream.name, 'skipped', first.denied.message), ...spent });
                return;
              }
              failedFirst.set(stream.name, first.error);
              results.push({ ...emptyResult(stream.name, 'failed', first.error.message), ...spent });
              return;
            }
            results.push({
              ...emptyResult(stream.name, job.signal?.aborted ? 'interrupted' : 'failed', failure.message),
              ...(done
                ? {
                    pages: done.pages,
                    records: done.records,
                    rejections: done.rejections,
                    requests: done.requests,
                    retries: done.retries,
                  }
                : {}),
            });
          }
        }),
      ),
    );
    if (failedFirst.size > 0 && failedFirst.size === selected.length)
      throw failedFirst.get(selected[0]!.name)!;
  } catch (error) {
    runError = asStoreSyncError(error);
  } finally {
    // A run that ended on a warehouse error may leave other streams' pages waiting: they are committed or
    // failed before the run is recorded, and none is taken after.
    await groups?.close();
    await client.close();
  }
  // An interrupt that came before the streams began (while the run was starting) is still an interrupt: the
  // streams it stopped before their first page are reported interrupted, and the run returns its result
  // like any interrupted run instead of throwing, so the summary says which store stopped and where.
  const interrupted = job.signal?.aborted ?? false;
  if (interrupted) {
    const reason = asStoreSyncError(job.signal?.reason).message;
    for (const name of names)
      if (!results.some((r) => r.stream === name)) results.push(emptyResult(name, 'interrupted', reason));
  }
  const outcome = interrupted ? 'interrupted' : runError ? 'failed' : outcomeOf(results);
  // Webhook events spooled by `store-sync receive` load after the streams (nothing without a receiver block).
  await drainAfterSync(warehouse, job.config, job.store, {
    logger,
    ...(job.signal ? { signal: job.signal } : {}),
  });
  // The export follows what was committed; its failure is its own, and leaves the sync's outcome as it was.
  let exportError: StoreSyncError | null = null;
  if (exportDir && outcome !== 'failed' && outcome !== 'interrupted') {
    try {
      await exportParquet(warehouse, exportDir, {});
      logger.info('export.done', { dir: exportDir });
    } catch (error) {
      exportError = asStoreSyncError(error);
      logger.error('export.failed', { dir: exportDir, code: exportError.code, message: exportError.message });
    }
  }
  // Fields the streams met first in this run (the spool drained above is a run of its own, and says its own).
  // A failed run (the warehouse's own trouble among the causes) is told by its error instead.
  const newFields = runError ? [] : await newFieldsOfRun(warehouse, job.store.name, runId);
  logNewFields(logger, newFields);
  const order = (name: string) => names.indexOf(name);
  results.sort((a, b) => order(a.stream) - order(b.stream));
  try {
    await warehouse.finishRun(runId, {
      outcome,
      counts: Object.fromEntries(results.map((r) => [r.stream, r])),
      requests: client.stats.requests,
      retries: client.stats.retries,
      rateLimited: client.stats.rateLimited,
      ...(runError ? { error: runError.message } : {}),
      ...(exportError ? { error: `the Parquet export to ${exportDir} failed: ${exportError.message}` } : {}),
    });
  } finally {
    if (!job.warehouse) await warehouse.close();
  }
  if (runError && !interrupted) {
    // The run the failure belongs to, for the caller's log line (its _sync_runs row holds the details).
    runError.details.runId ??= runId;
    throw runError;
  }
  logger.info('sync.done', { outcome, requests: client.stats.requests, retries: client.stats.retries });
  return {
    ...(exportError
      ? {
          exportFailure: new StoreSyncError(
            ERROR_CODES.WAREHOUSE,
            `store "${job.store.name}" synced (${outcome.replace(/_/g, ' ')}, run ${runId}), but the Parquet export to ${exportDir} failed: ${exportError.message}. Run store-sync export to write it`,
            { cause: exportError, details: { runId } },
          ),
        }
      : {}),
    store: job.store.name,
    runId,
    mode: job.mode,
    outcome,
    streams: results,
    requests: client.stats.requests,
    retries: client.stats.retries,
    rateLimited: client.stats.rateLimited,
    seconds: (Date.now() - started) / 1000,
    newFields,
  };
}
