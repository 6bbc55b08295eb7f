import type { DuckDBConnection } from '@duckdb/node-api';
import type { EntityKind } from '../contracts.js';
import { NormalizeError, type Normalizer, TableRows, tableDef } from '../normalize/index.js';
import { ChunkAppender } from './chunks.js';
import { pickWinnersSql, type RowMeta, replaceSql } from './merge.js';
import { literal, stagingTable, timestampLiteral } from './sql.js';

/**
 * The work of one transaction: records are landed raw, normalized into the staging tables through the
 * Appender, and merged into the warehouse tables when the batch finishes. The caller owns BEGIN/COMMIT
 * (see Warehouse.transaction) so that state, ledger rows and soft deletes join the same commit.
 */

const FLUSH_ROWS = 2048;

export interface BatchMeta {
  store: string;
  runId: string;
  /** `_synced_at` of every row written (rebuild passes the original time). */
  syncedAtMs: number;
}

export interface RejectionRow {
  stream: string;
  stage: 'extract' | 'parse' | 'normalize';
  key: string | null;
  reason: string;
  source: string | null;
  payload: string | null;
  seq: number | null;
}

export interface BatchCounts {
  records: number;
  rows: number;
  rejections: number;
}

export class Batch {
  readonly counts: BatchCounts = { records: 0, rows: 0, rejections: 0 };
  private readonly raw = new TableRows('_raw_records', tableDef('_raw_records').columns);
  private readonly rejected = new TableRows('_rejected_records', tableDef('_rejected_records').columns);
  private readonly appenders = new Map<string, ChunkAppender>();
  private readonly staged = new Set<string>();
  private readonly syncedMicros: number;
  readonly rowMeta: RowMeta;

  constructor(
    private readonly connection: DuckDBConnection,
    private readonly normalizer: Normalizer,
    readonly meta: BatchMeta,
    /** The next raw landing sequence number; advanced as records land. */
    public nextSeq: number,
  ) {
    this.syncedMicros = meta.syncedAtMs * 1000;
    this.rowMeta = {
      store: literal(meta.store),
      syncedAt: timestampLiteral(meta.syncedAtMs),
      runId: literal(meta.runId),
    };
  }

  /** Appends to the raw landing and returns the record's sequence number. */
  land(
    stream: string,
    entity: EntityKind | null,
    kind: string,
    source: string | null,
    payload: string,
  ): number {
    const seq = this.nextSeq++;
    const r = this.raw;
    const row = r.addRow();
    r.setInt64(0, row, seq);
    r.setText(1, row, this.meta.store);
    r.setText(2, row, stream);
    if (entity) r.setText(3, row, entity);
    r.setText(4, row, kind);
    if (source !== null) r.setText(5, row, source);
    r.setText(6, row, payload);
    r.setInt64(7, row, this.syncedMicros);
    r.setText(8, row, this.meta.runId);
    return seq;
  }

  /** Normalizes one record into staging; a value that cannot be stored exactly becomes a rejection. */
  addRecord(
    record: Record<string, unknown>,
    entity: EntityKind,
    apiVersion: string | null,
    origin: { stream: string; source: string | null; payload: string; seq: number },
  ): boolean {
    try {
      this.normalizer.normalize(record, entity, apiVersion);
      this.counts.records++;
      return true;
    } catch (error) {
      if (!(error instanceof NormalizeError)) throw error;
      this.reject({ ...origin, stage: 'normalize', key: error.key, reason: error.reason });
      return false;
    }
  }

  reject(r: RejectionRow): void {
    const t = this.rejected;
    const row = t.addRow();
    t.setText(0, row, this.meta.store);
    t.setText(1, row, r.stream);
    t.setText(2, row, r.stage);
    if (r.key !== null) t.setText(3, row, r.key);
    t.setText(4, row, r.reason);
    if (r.source !== null) t.setText(5, row, r.source);
    if (r.payload !== null) t.setText(6, row, r.payload);
    if (r.seq !== null) t.setInt64(7, row, r.seq);
    t.setInt64(8, row, this.syncedMicros);
    t.setText(9, row, this.meta.runId);
    this.counts.rejections++;
  }

  /** Moves full buffers into DuckDB; call between records to keep memory flat. */
  async flush(all = false): Promise<void> {
    const threshold = all ? 1 : FLUSH_ROWS;
    for (const rows of this.normalizer.tables.values()) {
      if (rows.length < threshold) continue;
      await this.appendRows(`stg_${rows.name}`, rows, 'temp');
      this.staged.add(rows.name);
      this.counts.rows += rows.length;
      rows.clear();
    }
    for (const rows of [this.raw, this.rejected]) {
      if (rows.length < threshold) continue;
      await this.appendRows(rows.name, rows, null);
      rows.clear();
    }
  }

  /** Flushes everything, merges the staged units into their tables and empties staging. */
  async merge(): Promise<BatchCounts> {
    await this.flush(true);
    for (const appender of this.appenders.values()) appender.close();
    this.appenders.clear();
    for (const table of this.staged) {
      if (!tableDef(table).unit) continue;
      const picked = await this.connection.run(pickWinnersSql(table, this.rowMeta));
      await this.connection.run(replaceSql(table, this.rowMeta, picked.rowsChanged > 0, this.staged));
    }
    if (this.staged.size) {
      await this.connection.run([...this.staged].map((t) => `TRUNCATE ${stagingTable(t)}`).join(';\n'));
    }
    this.staged.clear();
    return this.counts;
  }

  /** Drops whatever was buffered (after a rollback). */
  discard(): void {
    for (const appender of this.appenders.values()) {
      try {
        appender.close();
      } catch {
        // The transaction is being rolled back; a failing close changes nothing.
      }
    }
    this.appenders.clear();
    this.normalizer.clear();
    this.raw.clear();
    this.rejected.clear();
    this.staged.clear();
  }

  /** `catalog` null is the warehouse file itself (DuckDB names that catalog after the file). */
  private async appendRows(table: string, rows: TableRows, catalog: 'temp' | null): Promise<void> {
    let appender = this.appenders.get(table);
    if (!appender) {
      const columns = rows.columns.map((c) => c.type);
      appender = await ChunkAppender.open(this.connection, table, columns, 'main', catalog ?? undefined);
      this.appenders.set(table, appender);
    }
    appender.append(rows);
  }
}
