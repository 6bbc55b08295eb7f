import type { DuckDBConnection } from '@duckdb/node-api';
import { asStoreSyncError, ERROR_CODES } from '../errors.js';
import type { CommittedProgress } from '../state/index.js';
import type { BatchCounts } from './batch-builder.js';
import type { BatchWriter } from './batch-writer.js';
import { commitThroughCheckpoint } from './checkpoint.js';
import type { AppenderPool } from './chunks.js';
import { type HeldLimits, HeldUnits } from './held-units.js';
import type { KeyRanges } from './key-ranges.js';
import type { Layouts } from './layouts.js';
import { WRITER_ROW_GROUP_ROWS } from './open.js';
import type { FamilyTarget } from './unit-family.js';

export interface TransactionOptions {
  /**
   * Hold the rows of sighted unit tables until the commit (held-units.ts): for a transaction of many
   * batches (an ingest's, a rebuild's).
   */
  holdUnits?: boolean | HeldLimits;
}

/**
 * Rows appended to one table in one transaction from which its commit goes through a checkpoint: half of the
 * writer's row group, for a margin (see commitThroughCheckpoint). It follows the writer's row group, not
 * DuckDB's default (122,880 rows): DuckDB writes a table's appended rows to the file as each of the writer's
 * row groups of that table fills, so a commit of, say, 21,000 order lines would otherwise have rows in the
 * file ahead of a commit that still goes through the log (test/warehouse/torn-commit.test.ts). It counts per
 * table because DuckDB's early writes are per table: a sync's group of 600 products with their variants,
 * prices, stock and histories appends some 15,000 rows, none of its tables near a row group, and went through
 * a checkpoint of 100 to 200 ms where its log takes 20 to 30 (docs/performance.md, "Issue 32 point 1").
 */
export const CHECKPOINTED_COMMIT_ROWS = WRITER_ROW_GROUP_ROWS / 2;

/**
 * What a transaction needs of the warehouse that opened it (warehouse.ts, which imports this module: the
 * interface keeps the two from importing each other).
 */
export interface TransactionOwner {
  readonly layouts: Layouts;
  readonly appenders: AppenderPool;
  readonly keyRanges: KeyRanges;
  /** Gives a batch's buffers back once it is written (or failed). */
  discard(batch: BatchWriter): void;
  /** A commit made the records before `nextSeq` durable, with what it held of each run (by run id). */
  committed(nextSeq: number, progress: ReadonlyMap<string, CommittedProgress>): void;
  /** A rollback lost the batches written in the transaction. */
  rolledBack(): void;
}

/**
 * One open transaction (see Warehouse.begin). Everything done through it runs in order on the warehouse's
 * connection: batches, reads and statements never run beside each other, and after the first failure only
 * a rollback is possible.
 */
export class Transaction {
  private chain: Promise<unknown> = Promise.resolve();
  private nextSeq = 0;
  /** Rows appended so far, by table: from CHECKPOINTED_COMMIT_ROWS in one, the commit goes through a checkpoint. */
  private readonly appendedRows = new Map<string, number>();
  /** Records and pages written so far, by the run of their batch (the running file tells `status`). */
  private readonly progress = new Map<
    string,
    { records: number; pages: { stream: string; records: number }[] }
  >();
  private done = false;
  /** The first write that failed: the transaction can then only roll back. */
  private failure: unknown = null;
  /** Rows of sighted unit tables held until the commit (held-units.ts), when the transaction holds any. */
  private readonly held: HeldUnits | null;

  constructor(
    readonly connection: DuckDBConnection,
    private readonly warehouse: TransactionOwner,
    private readonly release: () => void,
    options: TransactionOptions = {},
  ) {
    const { holdUnits } = options;
    this.held = holdUnits ? new HeldUnits(holdUnits === true ? undefined : holdUnits) : null;
  }

  /** Where held rows are merged: this transaction, counting the rows appended as its batches' are. */
  private heldTarget(): FamilyTarget {
    const { layouts, appenders, keyRanges } = this.warehouse;
    return {
      connection: this.connection,
      layouts,
      appenders,
      keyRanges,
      appended: (table, rows) => this.appendedRows.set(table, (this.appendedRows.get(table) ?? 0) + rows),
    };
  }

  /** Stages and merges a batch (after the batches written before it) and hands its buffers back. */
  write(batch: BatchWriter): Promise<BatchCounts> {
    const run = this.chain.then(async () => {
      try {
        if (this.failure) throw this.failure;
        // After COMMIT or ROLLBACK the connection is outside any transaction: a write now would autocommit.
        if (this.done) throw new Error('the transaction is already finished');
        const counts = await batch.write(
          this.connection,
          this.warehouse.layouts,
          this.warehouse.appenders,
          this.warehouse.keyRanges,
          this.held,
        );
        this.nextSeq = Math.max(this.nextSeq, batch.nextSeq);
        for (const [table, rows] of batch.appendedRows)
          this.appendedRows.set(table, (this.appendedRows.get(table) ?? 0) + rows);
        const { runId, pages } = batch.meta;
        const run = this.progress.get(runId) ?? { records: 0, pages: [] };
        run.records += counts.records;
        if (pages) run.pages.push(...pages);
        this.progress.set(runId, run);
        return counts;
      } catch (error) {
        this.failure ??= asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
        throw this.failure;
      } finally {
        this.warehouse.discard(batch);
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Reads inside the transaction, after the batches written so far (never beside one), with the rows held
   * until the commit merged first, so that the read sees every row written. The rows stored then are counted
   * in the commit's (see `commit`).
   */
  read<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const run = this.chain.then(async () => {
      await this.mergeHeld();
      return fn(this.connection);
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /** Runs SQL in the transaction, after the batches written so far. */
  run(sql: string): Promise<void> {
    const run = this.chain.then(async () => {
      if (this.failure) throw this.failure;
      try {
        await this.connection.run(sql);
      } catch (error) {
        this.failure ??= asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
        throw this.failure;
      }
    });
    this.chain = run.catch(() => undefined);
    return run;
  }

  /**
   * Commits, after merging the rows held until now (held-units.ts). Returns the rows that merge stored,
   * which no batch's counts include.
   */
  async commit(): Promise<number> {
    await this.chain;
    if (this.failure) {
      await this.rollback();
      throw this.failure;
    }
    try {
      await this.mergeHeld();
      if (Math.max(0, ...this.appendedRows.values()) >= CHECKPOINTED_COMMIT_ROWS)
        await commitThroughCheckpoint(this.connection);
      else await this.connection.run('COMMIT');
      this.warehouse.committed(this.nextSeq, this.progress);
    } catch (error) {
      await this.rollback();
      throw asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
    }
    this.finish();
    return this.heldStored;
  }

  /** Rows stored by merging held rows (`commit` returns them). */
  private heldStored = 0;

  /** Merges the held rows into the transaction (see HeldUnits); a failure leaves it only a rollback. */
  private async mergeHeld(): Promise<void> {
    if (!this.held || this.failure) return;
    try {
      this.heldStored += await this.held.merge(this.heldTarget());
    } catch (error) {
      this.failure = asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
      throw this.failure;
    }
  }

  async rollback(): Promise<void> {
    if (this.done) return;
    await this.chain.catch(() => undefined);
    await this.connection.run('ROLLBACK').catch(() => undefined);
    this.held?.clear();
    this.warehouse.rolledBack();
    this.finish();
  }

  private finish(): void {
    this.done = true;
    this.release();
  }
}
