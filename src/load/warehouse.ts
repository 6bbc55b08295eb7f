import path from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import type { PageCommit, StreamState } from '../contracts.js';
import { asStoreSyncError, ERROR_CODES, StoreSyncError } from '../errors.js';
import { type Logger, silentLogger } from '../log.js';
import { detectOrderShape, Normalizer, planTables, tableDef } from '../normalize/index.js';
import {
  finishRunSql,
  listStates,
  newRunId,
  type RunFinish,
  type RunStart,
  readState,
  type SavedState,
  startRunSql,
  writeStateSql,
} from '../state/index.js';
import { Batch, type BatchMeta } from './batch.js';
import { createStagingTables, migrate } from './ddl.js';
import { fullScanSql } from './merge.js';
import { type OpenOptions, openInstance } from './open.js';
import { literal } from './sql.js';

/**
 * The warehouse: one DuckDB file, one writer. Every write goes through `transaction`, which serializes
 * callers (streams may commit pages concurrently) and commits a batch's rows, rejections, raw landing and
 * state together or not at all.
 */

export interface WarehouseOptions extends OpenOptions {
  logger?: Logger;
}

export class Warehouse {
  private queue: Promise<unknown> = Promise.resolve();
  private readonly normalizer = new Normalizer();

  private constructor(
    readonly path: string,
    readonly readOnly: boolean,
    private readonly instance: DuckDBInstance,
    readonly connection: DuckDBConnection,
    private readonly release: () => void,
    readonly logger: Logger,
    private nextSeq: number,
  ) {}

  static async open(file: string, options: WarehouseOptions = {}): Promise<Warehouse> {
    const absolute = path.resolve(file);
    const readOnly = options.readOnly ?? false;
    const { instance, release } = await openInstance(absolute, options);
    let connection: DuckDBConnection | undefined;
    try {
      connection = await instance.connect();
      await connection.run("SET TimeZone = 'UTC'");
      let nextSeq = 1;
      if (!readOnly) {
        await migrate(connection);
        await createStagingTables(connection);
        const reader = await connection.runAndReadAll('SELECT coalesce(max(seq), 0) FROM _raw_records');
        nextSeq = Number(reader.getRows()[0]?.[0] ?? 0) + 1;
      }
      return new Warehouse(
        absolute,
        readOnly,
        instance,
        connection,
        release,
        options.logger ?? silentLogger,
        nextSeq,
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

  /** One atomic batch: BEGIN, `fn` lands and normalizes records, merge, COMMIT (or ROLLBACK on any error). */
  transaction<T>(meta: BatchMeta, fn: (batch: Batch) => Promise<T>): Promise<T> {
    this.assertWritable();
    return this.exclusive(async () => {
      await this.connection.run('BEGIN TRANSACTION');
      const batch = new Batch(this.connection, this.normalizer, meta, this.nextSeq);
      try {
        const result = await fn(batch);
        await this.connection.run('COMMIT');
        this.nextSeq = batch.nextSeq;
        return result;
      } catch (error) {
        batch.discard();
        await this.connection.run('ROLLBACK').catch(() => undefined);
        throw asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
      }
    });
  }

  /** Rows, rejections, raw landing and the stream's state of one API page, in one transaction. */
  commitPage(page: PageCommit): Promise<{ rows: number; rejections: number }> {
    const meta = { store: page.store, runId: page.runId, syncedAtMs: Date.now() };
    return this.transaction(meta, async (batch) => {
      for (const [i, record] of page.records.entries()) {
        const payload = JSON.stringify(record);
        const seq = batch.land(page.stream, page.entity, 'record', null, payload);
        const shape = page.entity === 'order' ? detectOrderShape(record) : null;
        batch.addRecord(record, page.entity, shape, { stream: page.stream, source: null, payload, seq });
        if (i % 256 === 255) await batch.flush();
      }
      for (const r of page.rejections) {
        const payload = r.raw === undefined ? null : (JSON.stringify(r.raw) ?? null);
        batch.reject({
          stream: r.stream,
          stage: 'extract',
          key: r.key,
          reason: r.reason,
          source: r.source ?? null,
          payload,
          seq: null,
        });
      }
      if (page.completedFullScan) {
        const marker = JSON.stringify({
          entity: page.entity,
          passStartedAt: page.completedFullScan.passStartedAt,
        });
        batch.land(page.stream, page.entity, 'full_scan_complete', null, marker);
      }
      const counts = await batch.merge();
      const statements = [writeStateSql(page.store, page.stream, page.state, page.runId, meta.syncedAtMs)];
      if (page.completedFullScan)
        statements.push(this.fullScanSql(page.store, page.entity, page.completedFullScan.passStartedAt));
      await this.connection.run(statements.join(';\n'));
      return { rows: counts.rows, rejections: counts.rejections };
    });
  }

  /** Soft deletes for a completed full scan of an entity's tables. */
  fullScanSql(store: string, entity: PageCommit['entity'], passStartedAt: string): string {
    const tables = planTables(entity)
      .map(tableDef)
      .filter((t) => t.fullScan);
    return fullScanSql(tables, literal(store), `TIMESTAMPTZ ${literal(passStartedAt)}`);
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
    return runId;
  }

  async finishRun(runId: string, finish: RunFinish): Promise<void> {
    this.assertWritable();
    await this.exclusive(() => this.connection.run(finishRunSql(runId, finish)));
  }

  async close(): Promise<void> {
    await this.queue;
    try {
      if (!this.readOnly) await this.connection.run('CHECKPOINT').catch(() => undefined);
      this.connection.closeSync();
      this.instance.closeSync();
    } finally {
      this.release();
    }
  }

  private assertWritable(): void {
    if (this.readOnly)
      throw new StoreSyncError(
        ERROR_CODES.INTERNAL,
        `warehouse ${this.path} was opened read-only; open it for writing to change it`,
      );
  }
}

export function openWarehouse(file: string, options: WarehouseOptions = {}): Promise<Warehouse> {
  return Warehouse.open(file, options);
}
