import os from 'node:os';
import path from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type PageCommit, RECEIVED_TEXTS, type StreamState } from '../contracts.js';
import { asStoreSyncError, ERROR_CODES, StoreSyncError } from '../errors.js';
import { type Logger, redact, redactValue, silentLogger } from '../log.js';
import { dataTables, ident, literal } from '../model/index.js';
import { Normalizer, rawText } from '../normalize/index.js';
import {
  CLOSE_ABANDONED_RUNS_SQL,
  type CommittedProgress,
  finishRunSql,
  listStates,
  newRunId,
  type RunFinish,
  RunningRuns,
  type RunStart,
  readState,
  runningFilePath,
  type SavedState,
  startRunSql,
  writeStateSql,
} from '../state/index.js';
import { BatchBuilder, type BatchCounts, type BatchMeta, type PreparedBatch } from './batch-builder.js';
import { BatchWriter } from './batch-writer.js';
import { AppenderPool } from './chunks.js';
import { commentSql, createTableSql, migrate } from './ddl.js';
import { KIND, loadDocument, loadRecord } from './documents.js';
import { type CompletedScan, entityFullScanSql, unkeyedRejectionsSql } from './full-scan.js';
import { KeyRanges } from './key-ranges.js';
import { DELETE_ORPHAN_LANDING_PARTS_SQL } from './landing.js';
import { Layouts } from './layouts.js';
import { CREATE_KEY_TABLES_SQL } from './merge.js';
import {
  connectWarehouse,
  type OpenOptions,
  openInstance,
  reattachWarehouse,
  WAREHOUSE_ALIAS,
} from './open.js';
import { logPublish, type PublishedCopy, publishReadCopy, type ReadCopySettings } from './read-copy.js';
import {
  type RuntimeProfile,
  STREAMING_INGEST_MEMORY_LIMIT,
  setMemoryLimit,
  thenRestore,
  useHeapGrowingPercent,
  withProfileMemory,
} from './runtime-profile.js';
import { Transaction, type TransactionOptions } from './transaction.js';
import { windowSource } from './window-events.js';

/**
 * The warehouse: one DuckDB file, one writer. Writes are batches (see batch-builder.ts) built in memory and
 * committed by `commit`, which serializes callers (streams may commit pages concurrently) and writes a
 * batch's rows, rejections, raw landing and state together or not at all.
 *
 * Pipelines and commands use it through its named operations only (batches, transactions, state, runs, the
 * reads and copies below, `withProfile`); the DuckDB connection is for src/load's own modules and for tests
 * (test/structure/boundaries.test.ts fails when pipelines/, src/cli/ or bench/ read it).
 */

export interface WarehouseOptions extends OpenOptions {
  logger?: Logger;
  /**
   * The read copy a writer publishes as it closes, once a run was recorded on it (read-copy.ts): every
   * command that records a run (sync, backfill, ingest, rebuild, a drain) publishes one, after its last
   * commit and while it still holds the lock. Without it (tests, bench) nothing is published.
   */
  readCopy?: ReadCopySettings;
}

/** The part of a runtime profile that waits for the work to know its worker threads (see withProfile). */
export interface WarehouseRuntime {
  /**
   * Applies what the profile does beside `workers` worker threads (DuckDB's threads and memory, the
   * re-attach after each commit); nothing for 0. Call it once, between statements.
   */
  useWorkers(workers: number): Promise<void>;
}

export class Warehouse {
  private queue: Promise<unknown> = Promise.resolve();
  /** Normalizers not in use: each batch being built needs its own buffers. */
  private readonly idleNormalizers: Normalizer[] = [];
  private lastBatch: BatchBuilder | BatchWriter | null = null;
  /** The time of the last group of pages (see stamp). */
  private lastStampMs = 0;
  /** Set by the runtime profile in force (withProfile): re-attach the file after each commit of a load. */
  private reattachAfterCommit = false;
  private side: Promise<DuckDBConnection> | null = null;
  /** Appenders stay open for the connection's life (opening one per batch leaked native memory until GC). */
  readonly appenders: AppenderPool;
  /** Ranges of stored unit keys, so most batches are known not to collide without a query. */
  readonly keyRanges = new KeyRanges();
  /** Runs recorded as finished by this writer: close publishes the read copy when there is one. */
  private runsFinished = 0;
  /** A writer's runs in progress, for `status` while the warehouse is held (src/state/running.ts). */
  private readonly running: RunningRuns | null;

  private constructor(
    readonly path: string,
    readonly readOnly: boolean,
    private readonly instance: DuckDBInstance,
    /** For src/load and tests only: pipelines and commands use the named operations (see above). */
    readonly connection: DuckDBConnection,
    private readonly release: () => void,
    readonly logger: Logger,
    private committedSeq: number,
    /** Physical column order of the tables (writers only). */
    private currentLayouts: Layouts,
    /** As opened: a writer's memory limit is restored from them (withProfile), its read copy settings. */
    private readonly options: WarehouseOptions,
  ) {
    this.appenders = new AppenderPool(connection);
    this.running = readOnly
      ? null
      : new RunningRuns(path, (error) =>
          logger.warn('warehouse.running_file_failed', {
            file: runningFilePath(path),
            message: `status cannot show this run's progress: ${(error as Error).message}`,
          }),
        );
  }

  static async open(file: string, options: WarehouseOptions = {}): Promise<Warehouse> {
    const absolute = path.resolve(file);
    const readOnly = options.readOnly ?? false;
    const { instance, release } = await openInstance(absolute, options);
    let connection: DuckDBConnection | undefined;
    try {
      connection = await connectWarehouse(instance, readOnly);
      await connection.run("SET TimeZone = 'UTC'");
      let nextSeq = 1;
      const logger = options.logger ?? silentLogger;
      if (!readOnly) {
        await migrate(connection, options);
        await connection.run(CLOSE_ABANDONED_RUNS_SQL);
        await connection.run(CREATE_KEY_TABLES_SQL);
        const orphans = await connection.run(DELETE_ORPHAN_LANDING_PARTS_SQL);
        if (orphans.rowsChanged > 0)
          logger.warn('warehouse.orphan_landing_parts', {
            deleted: orphans.rowsChanged,
            message: 'raw landing parts of a commit cut short by a crash were removed',
          });
        const reader = await connection.runAndReadAll('SELECT coalesce(max(last_seq), 0) FROM _raw_landing');
        nextSeq = Number(reader.getRows()[0]?.[0] ?? 0) + 1;
      }
      const layouts = await Layouts.read(connection);
      return new Warehouse(
        absolute,
        readOnly,
        instance,
        connection,
        release,
        logger,
        nextSeq,
        layouts,
        options,
      );
    } catch (error) {
      connection?.closeSync();
      instance.closeSync();
      release();
      throw asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
    }
  }

  /** Runs `fn` alone on the connection (writes and reads never interleave with a batch in progress). */
  exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => undefined);
    return run;
  }

  /**
   * Runs `fn` under a runtime profile (runtime-profile.ts) and sets everything back once it has settled,
   * after its commit or rollback: DuckDB's memory limit for the whole of it, and what the profile does
   * beside worker threads once `fn` knows how many it runs (`runtime.useWorkers`). Call it where nothing
   * else runs on the warehouse: around the work, never beside a batch. When `fn` fails, a restore that
   * fails too is let go (`fn`'s error is the one that explains).
   */
  async withProfile<T>(
    profile: RuntimeProfile,
    logger: Logger,
    fn: (runtime: WarehouseRuntime) => Promise<T>,
  ): Promise<T> {
    if (this.readOnly) return fn({ useWorkers: async () => undefined });
    const restores: (() => Promise<void>)[] = [];
    const runtime: WarehouseRuntime = {
      useWorkers: async (workers) => {
        const streaming = profile.withWorkers;
        if (!streaming || workers === 0) return;
        if (streaming.shareCores) restores.push(await this.shareCores(workers, logger));
        if (streaming.memoryLimit !== null)
          restores.push(await this.limitMemory(streaming.memoryLimit, logger));
        this.reattachAfterCommit = streaming.reattachAfterCommit;
        if (streaming.heapGrowingPercent !== null)
          restores.push(useHeapGrowingPercent(streaming.heapGrowingPercent, logger));
      },
    };
    const restore = async (failed: boolean) => {
      this.reattachAfterCommit = false;
      for (const undo of restores.splice(0)) await (failed ? undo().catch(() => undefined) : undo());
    };
    let result: T;
    try {
      if (profile.coresForJavaScript)
        restores.push(await this.shareCores(profile.coresForJavaScript, logger));
      result = await withProfileMemory(this.connection, this.options, profile, () => fn(runtime));
    } catch (error) {
      await restore(true);
      throw error;
    }
    await restore(false);
    return result;
  }

  /**
   * What the profile in force does after a commit of a load: a streaming ingest (RUNTIME_PROFILES.ingest with
   * workers) re-attaches the warehouse file (see reattach); otherwise nothing.
   */
  async afterCommit(logger: Logger): Promise<void> {
    if (this.reattachAfterCommit) await this.reattach(logger);
  }

  /**
   * Gives DuckDB STREAMING_INGEST_MEMORY_LIMIT (runtime-profile.ts), as an ingest that streams a large input
   * does, unless the writer was opened with a limit of its own; returns what restores the writer's. Call
   * both between statements, never beside one.
   */
  limitMemoryForStreaming(logger: Logger): Promise<() => Promise<void>> {
    return this.limitMemory(STREAMING_INGEST_MEMORY_LIMIT, logger);
  }

  private async limitMemory(limit: string, logger: Logger): Promise<() => Promise<void>> {
    if (this.readOnly || this.options.memoryLimit !== undefined) return async () => undefined;
    const restore = await setMemoryLimit(this.connection, this.options, limit);
    logger.debug('duckdb_memory_limit', { limit });
    return restore;
  }

  /**
   * Limits DuckDB to the cores that a load's `workers` (reading and normalizing in threads of their own, or a
   * sync's main thread building pages) leave free, at least one; returns what restores the setting. On a small
   * machine DuckDB's extra threads only compete with them, and the thread waiting on a query spins while they
   * run (on 2 cores, a tenth of an ingest's CPU: docs/ingest.md, "Threads"; 2.4 CPU-seconds of a large sync:
   * docs/performance.md, "Issue 32 point 1"). Call both between statements, never beside one.
   */
  async shareCores(workers: number, logger: Logger): Promise<() => Promise<void>> {
    const reader = await this.connection.runAndReadAll("SELECT current_setting('threads')");
    const original = Number(reader.getRows()[0]![0]);
    const threads = Math.max(1, os.availableParallelism() - workers);
    if (workers === 0 || threads >= original) return async () => undefined;
    await this.connection.run(`SET threads = ${threads}`);
    logger.debug('duckdb_threads', { threads, workers, restoredTo: original });
    return async () => {
      await this.connection.run(`SET threads = ${original}`);
    };
  }

  /**
   * Detaches the warehouse file and attaches it again, between transactions. For as long as a file is
   * attached, DuckDB keeps in memory the storage metadata (column data, segments, statistics) of every row
   * group written or read through it: about 60 MB per million documents ingested, so a streaming ingest's
   * peak would grow with its input. It calls this after each commit, so what stays cached is only what the
   * next rows need, for no measurable time (docs/performance.md, "Settings and the measurements behind
   * them"). Appenders and the side connection are reopened as needed afterwards.
   */
  async reattach(logger: Logger): Promise<void> {
    this.assertWritable();
    await this.exclusive(async () => {
      await this.closeTableHandles();
      await reattachWarehouse(this.connection, this.path);
      logger.debug('warehouse_reattached', { path: this.path });
    });
  }

  /** Physical column order of the tables (writers only). */
  get layouts(): Layouts {
    return this.currentLayouts;
  }

  /**
   * Drops and recreates the data tables inside the transaction (rebuild): empty tables, no delete markers to
   * scan past, and a rollback brings the old ones back. Appenders on the old tables are closed first.
   */
  async recreateDataTables(tx: Transaction): Promise<void> {
    await tx.read(async (connection) => {
      await this.appenders.closeAll();
      this.keyRanges.clear();
      const statements = dataTables().flatMap((def) => [
        `DROP TABLE ${ident(def.name)}`,
        createTableSql(def),
        ...commentSql(def),
      ]);
      await connection.run(statements.join(';\n'));
      this.currentLayouts = await Layouts.read(connection);
    });
  }

  /** After a rollback that may have undone recreated tables: fresh appenders and layouts. */
  async reopenTables(): Promise<void> {
    await this.exclusive(async () => {
      await this.appenders.closeAll();
      this.keyRanges.clear();
      this.currentLayouts = await Layouts.read(this.connection);
    });
  }

  /** A new batch; its records land after those of every batch made before it. */
  newBatch(meta: BatchMeta): BatchBuilder {
    this.assertWritable();
    const batch = new BatchBuilder(this.idleNormalizers.pop() ?? new Normalizer(), meta, this.nextSeq());
    this.lastBatch = batch;
    return batch;
  }

  /** The raw landing sequence number the next batch starts at. */
  nextSeq(): number {
    return Math.max(this.committedSeq, this.lastBatch?.nextSeq ?? 0);
  }

  /**
   * A batch prepared elsewhere (the ingest worker) from `nextSeq()` on, ready to write; `onRelease` runs
   * once it is written or discarded (its buffers can go back to their maker).
   */
  adopt(prepared: PreparedBatch, onRelease?: () => void): BatchWriter {
    this.assertWritable();
    const expected = this.nextSeq();
    if (prepared.firstSeq !== expected)
      throw new StoreSyncError(
        ERROR_CODES.INTERNAL,
        `a prepared batch starts at landing sequence ${prepared.firstSeq}, the warehouse expected ${expected}`,
      );
    const batch = BatchWriter.fromPrepared(prepared, onRelease);
    this.lastBatch = batch;
    return batch;
  }

  /**
   * Opens a transaction that holds the connection until `commit` or `rollback`: batches written into it
   * are merged in order, and nothing else touches the warehouse meanwhile.
   */
  async begin(options: TransactionOptions = {}): Promise<Transaction> {
    this.assertWritable();
    let release!: () => void;
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const previous = this.queue;
    this.queue = previous.then(() => held);
    await previous.catch(() => undefined);
    await this.connection.run('BEGIN TRANSACTION');
    return new Transaction(this.connection, this, release, options);
  }

  /** Writes a batch and its `after` statements in one transaction (ROLLBACK on any error). */
  async commit(batch: BatchBuilder): Promise<BatchCounts> {
    const tx = await this.begin().catch((error: unknown) => {
      // Never written: its buffers go back here (Transaction.write gives back those it writes).
      this.discard(batch);
      throw error;
    });
    try {
      const counts = await tx.write(BatchWriter.of(batch));
      await tx.commit();
      return counts;
    } catch (error) {
      await tx.rollback();
      throw error;
    }
  }

  /** Called by Transaction: a committed batch's records are durable, so new batches land after them. */
  committed(nextSeq: number, progress: ReadonlyMap<string, CommittedProgress>): void {
    this.committedSeq = Math.max(this.committedSeq, nextSeq);
    this.running?.committed(progress);
  }

  /** Called by Transaction after a rollback: batches built on top of the lost ones start over. */
  rolledBack(): void {
    this.lastBatch = null;
  }

  /** Gives a batch's buffers back without writing it. */
  discard(batch: BatchBuilder | BatchWriter): void {
    batch.release();
    const normalizer = batch.normalizer;
    if (normalizer && !this.idleNormalizers.includes(normalizer)) this.idleNormalizers.push(normalizer);
  }

  /** Rows, rejections, raw landing and the stream's state of one API page, in one transaction. */
  async commitPage(page: PageCommit): Promise<PageCounts> {
    const [result] = await this.commitPages([page]);
    return result!;
  }

  /**
   * Several API pages of one store's run (of any of its streams) in one transaction: each page's rows,
   * rejections and raw landing, and the state each stream has after its last page here, commit together or
   * not at all, so a stream's saved cursor is never ahead of its rows, nor behind them. Pages are loaded in
   * the order given, and newest wins does not depend on how pages are grouped (merge.ts). One transaction
   * for many pages is what lets a sync keep up with an API faster than a commit per page (docs/performance.md,
   * "Sync as users run it"). Returns each page's counts: its rejections and field rejections.
   */
  async commitPages(pages: readonly PageCommit[]): Promise<PageCounts[]> {
    if (pages.length === 0) return [];
    const group = this.openPages(pages[0]!.store, pages[0]!.runId);
    try {
      for (const page of pages) this.addPage(group, page);
    } catch (error) {
      this.discardPages(group);
      throw error;
    }
    return this.commitPagesBatch(group);
  }

  /**
   * A batch of pages of one store's run, built page by page as they arrive (addPage) and committed with
   * commitPagesBatch, or given back with discardPages. PageGroups builds the next group this way while the
   * warehouse commits the one before, so a group's normalizing and landing are done by the time it commits.
   */
  openPages(store: string, runId: string): PagesBatch {
    // Dated, and its pages listed, as it commits (commitPagesBatch).
    const meta: BatchMeta = { store, runId, syncedAtMs: Date.now(), ownTime: true };
    return new PagesBatch(this.newBatch(meta));
  }

  /** Builds `page` into `group`. When it throws, the group is spoiled: discard it (discardPages). */
  addPage(group: PagesBatch, page: PageCommit): void {
    const { batch } = group;
    const { meta } = batch;
    if (page.store !== meta.store || page.runId !== meta.runId)
      throw new StoreSyncError(
        ERROR_CODES.INTERNAL,
        `a group of pages takes the pages of one store's run: store "${page.store}" run ${page.runId} came with store "${meta.store}" run ${meta.runId}`,
      );
    const before = { rejections: batch.counts.rejections, fieldRejections: batch.counts.fieldRejections };
    this.buildPage(batch, page);
    group.pages.push(page);
    group.counts.push({
      rejections: batch.counts.rejections - before.rejections,
      fieldRejections: batch.counts.fieldRejections - before.fieldRejections,
    });
  }

  /** Commits a group of pages (see openPages); returns each page's counts, in the order they were added. */
  async commitPagesBatch(group: PagesBatch): Promise<PageCounts[]> {
    const { batch, pages } = group;
    // Dated as it commits: a page built into the group before another stream's pass began is still dated
    // after it, as the pass's soft deletes need of every record it loaded (full-scan.ts).
    const atMs = this.stamp();
    batch.meta.syncedAtMs = atMs;
    batch.meta.pages = pages.map((page) => ({
      stream: page.stream,
      records: page.records.length + page.rejections.length,
    }));
    // Each stream's state after its last page (an earlier page's would be overwritten in the same transaction),
    // and the completion of a full scan after the state of its page, as when a page was a transaction alone.
    const lastOfStream = new Map(pages.map((page, i) => [page.stream, i]));
    const completed: CompletedScan[] = [];
    pages.forEach((page, i) => {
      if (lastOfStream.get(page.stream) === i)
        batch.after.push(
          writeStateSql(page.store, page.stream, page.state, page.runId, atMs, {
            success: !page.completedBackfill,
          }),
        );
      const scan = page.completedFullScan;
      if (!scan) return;
      const completion: CompletedScan = {
        store: page.store,
        stream: page.stream,
        entity: page.entity,
        passStartedAt: scan.passStartedAt,
        createdFrom: scan.createdFrom,
        completedAtMs: atMs,
        runId: page.runId,
      };
      completed.push(completion);
      batch.after.push(entityFullScanSql(completion));
    });
    await this.commit(batch);
    for (const scan of completed) await this.warnUnkeyed(scan);
    return group.counts;
  }

  /** Gives a group's buffers back without committing it. */
  discardPages(group: PagesBatch): void {
    this.discard(group.batch);
  }

  /**
   * The `_synced_at` of a new group of pages: the clock, but never the time of a group before it, so each
   * group's rows are told apart by their time within a run.
   */
  private stamp(): number {
    this.lastStampMs = Math.max(Date.now(), this.lastStampMs + 1);
    return this.lastStampMs;
  }

  /**
   * One page's records, rejections and, for a page completing a full scan, its marker into a group's batch (see
   * addPage); the statements after them are written when the group commits (commitPagesBatch).
   */
  private buildPage(batch: BatchBuilder, page: PageCommit): void {
    // A record of a dating window is landed with its window, which loadRecord (and a rebuild) dates it by.
    const source = page.windowEvent ? windowSource(page.windowEvent) : null;
    for (const record of page.records) {
      // The text the record came in, when its page's body gave one (extract/received-text.ts); else serialized.
      const received = RECEIVED_TEXTS.get(record);
      const { text, unserializable } =
        received === undefined ? rawText(record) : { text: received, unserializable: null };
      if (unserializable === null)
        loadRecord(
          batch,
          batch.land(page.stream, page.entity, KIND.record, source, text),
          text,
          record,
          page.contract,
        );
      // Landed as unreadable with its reason, so a rebuild rejects it again the same way.
      else loadDocument(batch, batch.land(page.stream, unserializable, KIND.unreadable, null, text), text);
    }
    for (const r of page.rejections) {
      // As received too, when the page's body gave the text (a big integer, 1e400 or 1.50 kept as sent).
      const received = typeof r.raw === 'object' && r.raw !== null ? RECEIVED_TEXTS.get(r.raw) : undefined;
      const payload = received ?? (r.raw === undefined ? null : rawText(r.raw).text);
      const source = r.source ?? null;
      batch.reject({
        stream: r.stream,
        stage: 'extract',
        key: r.key,
        reason: r.reason,
        source,
        payload,
        seq: null,
        level: 'record',
        fieldPath: r.fieldPath ?? null,
      });
    }
    const scan = page.completedFullScan;
    if (!scan) return;
    const marker = JSON.stringify({
      entity: page.entity,
      passStartedAt: scan.passStartedAt,
      ...(scan.createdFrom === undefined ? {} : { createdFrom: scan.createdFrom }),
    });
    batch.land(page.stream, page.entity, KIND.fullScan, null, marker);
  }

  /**
   * A rejection without a key in a completed full scan could be any record, so the scan's soft deletes did
   * nothing (full-scan.ts): said here, where the run's log is, since nothing else shows it. Counted after
   * the commit, so the completing page's own rejections count.
   */
  private async warnUnkeyed(scan: CompletedScan): Promise<void> {
    const reader = await this.exclusive(() => this.connection.runAndReadAll(unkeyedRejectionsSql(scan)));
    const unkeyed = Number(reader.getRows()[0]?.[0] ?? 0);
    if (unkeyed > 0)
      this.logger.warn('full_scan.soft_deletes_skipped', {
        stream: scan.stream,
        unkeyed,
        message: `${unkeyed} record(s) of this full scan were rejected without a readable key, so no record can be said to be missing: nothing was soft-deleted`,
      });
  }

  readState(store: string, stream: string): Promise<StreamState> {
    return this.exclusive(() => readState(this.connection, store, stream));
  }

  listStates(): Promise<SavedState[]> {
    return this.exclusive(() => listStates(this.connection));
  }

  async startRun(run: RunStart): Promise<string> {
    this.assertWritable();
    const runId = newRunId();
    await this.exclusive(() => this.connection.run(startRunSql(runId, run)));
    this.running?.started(runId, run);
    return runId;
  }

  async finishRun(runId: string, finish: RunFinish): Promise<void> {
    this.assertWritable();
    // A message may quote a server's reply, and `status` prints what is stored: a token never gets that far.
    const masked = {
      ...finish,
      counts: redactValue(structuredClone(finish.counts)),
      error: finish.error == null ? null : redact(finish.error),
    };
    await this.exclusive(() => this.connection.run(finishRunSql(runId, masked)));
    this.runsFinished += 1;
    this.running?.finished(runId);
  }

  /** Rows in a table (every one, deleted ones included): reading them all verifies each block's checksum. */
  async countRows(table: string): Promise<number> {
    const reader = await this.exclusive(() =>
      this.connection.runAndReadAll(`SELECT count(*) FROM ${ident(table)}`),
    );
    return Number(reader.getRows()[0]?.[0] ?? 0);
  }

  /** The streams whose records the raw landing holds (what a rebuild covers), by name. */
  async landedStreams(): Promise<string[]> {
    const reader = await this.exclusive(() =>
      this.connection.runAndReadAll(
        'SELECT DISTINCT unnest(streams) AS stream FROM _raw_landing ORDER BY stream',
      ),
    );
    return reader.getRows().map(([stream]) => String(stream));
  }

  /**
   * Runs `fn` with DuckDB settings set as given (`memory_limit`, `preserve_insertion_order` …), then sets
   * each back: a writer goes on loading after a sync's export, under its own settings. `memory_limit` goes
   * back to the limit the warehouse was opened with (a writer's, or a reader's own) exactly as configured
   * (setMemoryLimit): DuckDB shows a limit rounded, and setting what it shows would lower it a little at every
   * export. Only a reader opened without a limit, which has DuckDB's default, gets back what DuckDB showed, as
   * every other setting does. Inside a profile that changes the limit (RUNTIME_PROFILES.bulkCopy), the
   * profile's own restore follows. Setting and setting back run alone on the connection (exclusive); `fn`
   * runs outside that, its operations queued as any others.
   */
  async withSettings<T>(
    settings: Readonly<Record<string, string | boolean>>,
    fn: () => Promise<T>,
  ): Promise<T> {
    const { memory_limit: memoryLimit, ...others } = settings;
    const exactMemory =
      memoryLimit !== undefined && (!this.readOnly || this.options.memoryLimit !== undefined);
    const names = Object.keys(exactMemory ? others : settings);
    const assign = (values: readonly unknown[]) =>
      names
        .map((name, i) => {
          const value = values[i];
          return `SET ${name} = ${typeof value === 'boolean' ? String(value) : literal(String(value))}`;
        })
        .join('; ');
    const restore = await this.exclusive(async () => {
      const before =
        names.length === 0
          ? []
          : (
              await this.connection.runAndReadAll(
                `SELECT ${names.map((name) => `current_setting(${literal(name)})`).join(', ')}`,
              )
            ).getRows()[0]!;
      const restoreMemory = exactMemory
        ? await setMemoryLimit(this.connection, this.options, String(memoryLimit))
        : async () => undefined;
      if (names.length > 0)
        await this.connection.run(assign(names.map((name) => settings[name]))).catch(async (error) => {
          await restoreMemory().catch(() => undefined);
          throw error;
        });
      return () =>
        this.exclusive(() =>
          thenRestore(async () => {
            if (names.length > 0) await this.connection.run(assign(before));
          }, restoreMemory),
        );
    });
    return thenRestore(fn, restore);
  }

  /** A read-only SELECT's columns and rows, as JSON values (the demo's answers). */
  async selectJson(sql: string): Promise<{ columns: string[]; rows: unknown[][] }> {
    return this.exclusive(async () => {
      const reader = await this.connection.runAndReadAll(sql);
      return { columns: reader.columnNames(), rows: reader.getRowsJson() as unknown[][] };
    });
  }

  /**
   * Writes what `select` returns to Parquet at `destination` (a file, or with `partitionBy` a folder of
   * files named by `filenamePattern`); returns the rows written. Run it under RUNTIME_PROFILES.bulkCopy
   * from a writer: a writer's memory limit is sized for loading, not for a COPY.
   */
  async copyToParquet(
    select: string,
    destination: string,
    {
      partitionBy,
      filenamePattern,
      rowGroupBytes,
    }: { partitionBy?: string[]; filenamePattern?: string; rowGroupBytes?: string } = {},
  ): Promise<number> {
    const options = [
      'FORMAT parquet',
      ...(partitionBy ? [`PARTITION_BY (${partitionBy.map(ident).join(', ')})`] : []),
      ...(filenamePattern ? [`FILENAME_PATTERN ${literal(filenamePattern)}`] : []),
      ...(rowGroupBytes ? [`ROW_GROUP_SIZE_BYTES ${literal(rowGroupBytes)}`] : []),
    ];
    const copied = await this.exclusive(() =>
      this.connection.run(`COPY (${select}) TO ${literal(destination)} (${options.join(', ')})`),
    );
    return Number(copied.rowsChanged);
  }

  /**
   * A second connection, for reading what is committed while the main one writes (rebuild reads the raw
   * landing beside its transaction, which never changes the landing). Closed with the warehouse.
   */
  async sideConnection(): Promise<DuckDBConnection> {
    this.side ??= connectWarehouse(this.instance, this.readOnly);
    return this.side;
  }

  async close(): Promise<void> {
    await this.queue;
    try {
      await this.closeTableHandles();
      if (!this.readOnly) await this.connection.run('CHECKPOINT').catch(() => undefined);
      // Published before the instance closes, so the warehouse's lock is still held: no other writer
      // commits between the last commit of this run and its snapshot. A failed publish leaves the run's
      // outcome as it was (its data is committed) and is logged; readers are told the copy's age.
      const readCopy = this.options.readCopy;
      if (!this.readOnly && readCopy?.enabled && this.runsFinished > 0)
        logPublish(
          this.logger,
          await this.publishReadCopy(readCopy).catch((error) =>
            asStoreSyncError(error, ERROR_CODES.WAREHOUSE),
          ),
        );
      this.connection.closeSync();
      this.instance.closeSync();
    } finally {
      // A run not finished by now (its process is stopping) is no longer in progress.
      this.running?.clear();
      this.release();
    }
  }

  /**
   * Publishes the read copy of what is committed (read-copy.ts), alone on the connection. `close` does it
   * after a run; bench/read-copy.ts times it.
   */
  async publishReadCopy(settings: ReadCopySettings): Promise<PublishedCopy> {
    this.assertWritable();
    return this.exclusive(async () => {
      // A checkpoint needs no appender or second connection holding the tables.
      await this.closeTableHandles();
      return publishReadCopy(this.connection, this.path, WAREHOUSE_ALIAS, settings);
    });
  }

  /** Closes what holds the warehouse's tables besides the main connection: the side connection, the appenders. */
  private async closeTableHandles(): Promise<void> {
    (await this.side?.catch(() => null))?.closeSync();
    this.side = null;
    await this.appenders.closeAll();
  }

  private assertWritable(): void {
    if (this.readOnly)
      throw new StoreSyncError(
        ERROR_CODES.INTERNAL,
        `warehouse ${this.path} was opened read-only; open it for writing to change it`,
      );
  }
}

/** What one page of commitPages counted. */
export interface PageCounts {
  rejections: number;
  fieldRejections: number;
}

/** Pages of one store's run built into one batch (Warehouse.openPages). */
export class PagesBatch {
  /** The pages added, in order, and each one's counts. */
  readonly pages: PageCommit[] = [];
  readonly counts: PageCounts[] = [];

  constructor(readonly batch: BatchBuilder) {}
}

export function openWarehouse(file: string, options: WarehouseOptions = {}): Promise<Warehouse> {
  return Warehouse.open(file, options);
}
