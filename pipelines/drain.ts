import { mkdir, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { ReceiverSettings, StoreConfig, SyncConfig } from '../src/config.js';
import type { SchemaContract } from '../src/contracts.js';
import { asStoreSyncError } from '../src/errors.js';
import type { Warehouse } from '../src/load/index.js';
import { addNewFields, type NewFields } from '../src/load/schema-changes.js';
import type { Logger } from '../src/log.js';
import { ARCHIVE_DIR, closedFiles, exists, syncDir } from '../src/receive/spool-files.js';
import { type IngestFileResult, ingestPaths } from './ingest.js';

/**
 * Draining a spool: its closed files go through the ordinary ingest, one file per transaction, so a file is
 * in the warehouse whole or not at all; the ingest ledger then knows it, and only after that commit is the
 * file deleted or archived. A drain killed at any moment resumes exactly: a file not committed is read
 * again, one committed but still there is skipped by the ledger (unchanged) and then removed.
 */

export interface DrainedFile extends IngestFileResult {
  /** What became of the file once committed. */
  then: 'deleted' | 'archived';
}

export interface SpoolDrain {
  store: string;
  spoolDir: string;
  files: DrainedFile[];
  documents: number;
  records: number;
  rows: number;
  rejections: number;
  /** Events skipped (an object with no table …), by object or event type; present only when some were. */
  skipped?: Record<string, number>;
  /** Field paths no column maps that the drain saw first, per table (as ingest's summary names them). */
  newFields: NewFields[];
  /** Stopped by the signal between two files; the files left wait for the next drain. */
  interrupted: boolean;
}

/** A store's drain with its run: what `drainStoreRun` returns, and what `ingest --spool` reports per spool. */
export interface DrainRun extends SpoolDrain {
  /** Its `_sync_runs` row; null when nothing was recorded (no file waited, or a stop came first). */
  runId: string | null;
  /** The drain's own time. */
  seconds: number;
  /** Its outcome, as `_sync_runs` records it (succeeded, completed_with_rejections, interrupted). */
  outcome: string;
}

/** A spool not drained (no file waited, or a stop came before it): no run, no time. */
export const notDrained = (store: string, spoolDir: string, interrupted = false): DrainRun => ({
  ...emptyDrain(store, spoolDir),
  interrupted,
  runId: null,
  seconds: 0,
  outcome: interrupted ? 'interrupted' : 'succeeded',
});

export interface DrainOptions {
  store: string;
  spoolDir: string;
  afterDrain: ReceiverSettings['afterDrain'];
  runId: string;
  logger: Logger;
  /** Checked between files: a file is never left half-loaded by a stop. */
  signal?: AbortSignal;
  workers?: number;
  /** The store's `streams.documents.schemaContract` (evolve when absent). */
  contract?: SchemaContract;
}

/** Drains the closed files of one store's spool into the warehouse, oldest first (newest wins). */
export async function drainSpool(warehouse: Warehouse, options: DrainOptions): Promise<SpoolDrain> {
  const { store, spoolDir, logger } = options;
  const summary = emptyDrain(store, spoolDir);
  for (const file of await closedFiles(spoolDir)) {
    if (options.signal?.aborted) {
      summary.interrupted = true;
      break;
    }
    // A drain beside this one (into another warehouse) may have taken it.
    if (!(await exists(file))) continue;
    const result = await ingestPaths(warehouse, [file], {
      store,
      runId: options.runId,
      logger,
      // One transaction per file, however many events it holds.
      commitDocuments: Number.MAX_SAFE_INTEGER,
      ...(options.workers === undefined ? {} : { workers: options.workers }),
      ...(options.contract === undefined ? {} : { contract: options.contract }),
    });
    const then = await dispose(file, options.afterDrain);
    for (const f of result.files) summary.files.push({ ...f, then });
    summary.documents += result.documents;
    summary.records += result.records;
    summary.rows += result.rows;
    summary.rejections += result.rejections;
    // Each file's ingest names only what it saw first, so the files' lists add up.
    addNewFields(summary.newFields, result.newFields);
    for (const [as, n] of Object.entries(result.skipped ?? {})) {
      summary.skipped ??= {};
      // Own properties whatever the name (`__proto__` included), as ingest's summary makes them.
      Object.defineProperty(summary.skipped, as, {
        value: (Object.hasOwn(summary.skipped, as) ? summary.skipped[as]! : 0) + n,
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    logger.debug('receive.drained_file', { file, then, documents: result.documents });
  }
  if (summary.files.length > 0 || summary.interrupted)
    logger.info('receive.drained', {
      store,
      files: summary.files.length,
      documents: summary.documents,
      rejections: summary.rejections,
      ...(summary.skipped ? { skipped: summary.skipped } : {}),
      ...(summary.interrupted ? { interrupted: true } : {}),
    });
  return summary;
}

async function dispose(
  file: string,
  afterDrain: ReceiverSettings['afterDrain'],
): Promise<DrainedFile['then']> {
  if (afterDrain === 'archive') {
    const archive = path.join(path.dirname(file), ARCHIVE_DIR);
    await mkdir(archive, { recursive: true });
    await rename(file, path.join(archive, path.basename(file)));
    await syncDir(path.dirname(file));
    return 'archived';
  }
  await unlink(file).catch((error: NodeJS.ErrnoException) => {
    if (error.code !== 'ENOENT') throw error;
  });
  return 'deleted';
}

type DrainConfig = Pick<SyncConfig, 'receiver'>;

/** Whether a spool holds closed files, i.e. whether a drain has anything to do. */
export async function hasWaitingFiles(spoolDir: string): Promise<boolean> {
  return (await closedFiles(spoolDir)).length > 0;
}

export const emptyDrain = (store: string, spoolDir: string): SpoolDrain => ({
  store,
  spoolDir,
  files: [],
  documents: 0,
  records: 0,
  rows: 0,
  rejections: 0,
  newFields: [],
  interrupted: false,
});

/**
 * One store's drain recorded as its own run in `_sync_runs` (command `ingest`, stream `documents`), as
 * `store-sync ingest --spool` and a sync both record it; nothing is recorded when no file waits. Returns the
 * drain with its run id, time and outcome, or throws its failure once the run is recorded as failed.
 */
export async function drainStoreRun(
  warehouse: Warehouse,
  config: DrainConfig,
  spool: { store: string; spoolDir: string },
  options: { logger: Logger; signal?: AbortSignal; workers?: number; contract?: SchemaContract },
): Promise<DrainRun> {
  if (!(await hasWaitingFiles(spool.spoolDir))) return notDrained(spool.store, spool.spoolDir);
  const started = performance.now();
  const runId = await warehouse.startRun({
    store: spool.store,
    command: 'ingest',
    mode: 'incremental',
    streams: ['documents'],
  });
  let drain: SpoolDrain | null = null;
  let failure: unknown = null;
  try {
    drain = await drainSpool(warehouse, {
      store: spool.store,
      spoolDir: spool.spoolDir,
      afterDrain: config.receiver?.afterDrain ?? 'delete',
      runId,
      logger: options.logger.child({ runId, store: spool.store }),
      ...(options.signal ? { signal: options.signal } : {}),
      ...(options.workers === undefined ? {} : { workers: options.workers }),
      ...(options.contract === undefined ? {} : { contract: options.contract }),
    });
  } catch (error) {
    failure = error;
  }
  const outcome = failure
    ? 'failed'
    : drain!.interrupted
      ? 'interrupted'
      : drain!.rejections > 0
        ? 'completed_with_rejections'
        : 'succeeded';
  await warehouse.finishRun(runId, {
    outcome,
    counts: drain ? { documents: drain } : {},
    requests: 0,
    retries: 0,
    ...(failure ? { error: asStoreSyncError(failure).message } : {}),
  });
  if (failure) throw failure;
  return { ...drain!, runId, seconds: (performance.now() - started) / 1000, outcome };
}

/**
 * The hook of `sync` and `schedule`: drains the store's spool into the open warehouse when the store has a
 * receiver, and does nothing otherwise. A failed drain does not fail the sync: it is logged
 * (`receive.drain_failed`) and returned, and its files wait for the next run.
 */
export async function drainAfterSync(
  warehouse: Warehouse,
  config: DrainConfig,
  store: Pick<StoreConfig, 'name' | 'receiver'> & Partial<Pick<StoreConfig, 'documents'>>,
  options: { logger: Logger; signal?: AbortSignal },
): Promise<{ drain: SpoolDrain } | { error: Error } | null> {
  const receiver = store.receiver;
  if (!receiver) return null;
  if (options.signal?.aborted) return null;
  try {
    return {
      drain: await drainStoreRun(
        warehouse,
        config,
        { store: store.name, spoolDir: receiver.spoolDir },
        { ...options, ...(store.documents ? { contract: store.documents.schemaContract } : {}) },
      ),
    };
  } catch (error) {
    const failure = asStoreSyncError(error);
    options.logger.error('receive.drain_failed', {
      store: store.name,
      spoolDir: receiver.spoolDir,
      code: failure.code,
      message: failure.message,
    });
    return { error: failure };
  }
}
