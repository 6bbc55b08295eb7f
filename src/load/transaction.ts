import type { DuckDBConnection } from '@duckdb/node-api';
import { asStoreSyncError, ERROR_CODES } from '../errors.js';
import type { Batch, BatchCounts } from './batch.js';
import { WRITER_CHECKPOINT_THRESHOLD, WRITER_ROW_GROUP_ROWS } from './open.js';
import type { Warehouse } from './warehouse.js';

/**
 * Rows appended in one transaction from which its commit goes through a checkpoint: half of the writer's
 * row group, for a margin (see commitThroughCheckpoint). It follows the writer's row group, not DuckDB's
 * default (122,880 rows): DuckDB writes appended rows to the file as each of the writer's row groups fills,
 * so a commit of, say, 21,000 order lines would otherwise have rows in the file ahead of a commit that still
 * goes through the log (test/warehouse/torn-commit.test.ts).
 */
export const CHECKPOINTED_COMMIT_ROWS = WRITER_ROW_GROUP_ROWS / 2;

/**
 * COMMIT that writes the transaction into the database file by a checkpoint, skipping the write-ahead log.
 *
 * DuckDB (1.5.6) writes a table's appends to the database file before the commit once they fill a row
 * group, and its commit then logs pointers to those blocks in the WAL. A process killed while that WAL entry
 * is being written leaves a torn log, and replaying it brings the pointed-to rows back although the
 * transaction never committed (duckdb/duckdb#25931, open): a cut WAL of a 200,000-document ingest reopens
 * with its landing parts, or its orders, and none of the other tables, nor the ledger, nor the run's state.
 * A checkpoint is atomic (the file's header is written last), so a commit made by one is all or nothing.
 * It costs no more than the WAL for such a transaction (3.1 s either way for 200,000 documents), because
 * the rows are on disk already. Small transactions (a sync's page) keep the WAL, whose torn tail DuckDB
 * does discard, and which a checkpoint per page would make slow.
 */
export async function commitThroughCheckpoint(connection: DuckDBConnection): Promise<void> {
  await connection.run(`SET checkpoint_threshold = '0KB'; SET auto_checkpoint_skip_wal_threshold = 0`);
  try {
    await connection.run('COMMIT');
  } finally {
    await connection.run(
      `SET checkpoint_threshold = '${WRITER_CHECKPOINT_THRESHOLD}'; RESET auto_checkpoint_skip_wal_threshold`,
    );
  }
}

/**
 * One open transaction (see Warehouse.begin). Everything done through it runs in order on the warehouse's
 * connection: batches, reads and statements never run beside each other, and after the first failure only
 * a rollback is possible.
 */
export class Transaction {
  private chain: Promise<unknown> = Promise.resolve();
  private nextSeq = 0;
  /** Rows appended so far: from CHECKPOINTED_COMMIT_ROWS on, the commit goes through a checkpoint. */
  private appendedRows = 0;
  private done = false;
  /** The first write that failed: the transaction can then only roll back. */
  private failure: unknown = null;

  constructor(
    private readonly warehouse: Warehouse,
    private readonly release: () => void,
  ) {}

  get connection(): DuckDBConnection {
    return this.warehouse.connection;
  }

  /** Stages and merges a batch (after the batches written before it) and hands its buffers back. */
  write(batch: Batch): Promise<BatchCounts> {
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
        );
        this.nextSeq = Math.max(this.nextSeq, batch.nextSeq);
        this.appendedRows += batch.appendedRows;
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

  /** Reads inside the transaction, after the batches written so far (never beside one). */
  read<T>(fn: (connection: DuckDBConnection) => Promise<T>): Promise<T> {
    const run = this.chain.then(() => fn(this.connection));
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

  async commit(): Promise<void> {
    await this.chain;
    if (this.failure) {
      await this.rollback();
      throw this.failure;
    }
    try {
      if (this.appendedRows >= CHECKPOINTED_COMMIT_ROWS) await commitThroughCheckpoint(this.connection);
      else await this.connection.run('COMMIT');
      this.warehouse.committed(this.nextSeq);
    } catch (error) {
      await this.rollback();
      throw asStoreSyncError(error, ERROR_CODES.WAREHOUSE);
    }
    this.finish();
  }

  async rollback(): Promise<void> {
    if (this.done) return;
    await this.chain.catch(() => undefined);
    await this.connection.run('ROLLBACK').catch(() => undefined);
    this.warehouse.rolledBack();
    this.finish();
  }

  private finish(): void {
    this.done = true;
    this.release();
  }
}
