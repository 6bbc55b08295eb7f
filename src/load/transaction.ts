import type { DuckDBConnection } from '@duckdb/node-api';
import { asStoreSyncError, ERROR_CODES } from '../errors.js';
import type { Batch, BatchCounts } from './batch.js';
import type { Warehouse } from './warehouse.js';

/**
 * One open transaction (see Warehouse.begin). Everything done through it runs in order on the warehouse's
 * connection: batches, reads and statements never run beside each other, and after the first failure only
 * a rollback is possible.
 */
export class Transaction {
  private chain: Promise<unknown> = Promise.resolve();
  private nextSeq = 0;
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
      await this.connection.run('COMMIT');
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
