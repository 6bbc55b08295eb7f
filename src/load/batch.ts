import { type DuckDBConnection, DuckDBTimestampTZValue, LIST, VARCHAR } from '@duckdb/node-api';
import type { EntityKind } from '../contracts.js';
import { NormalizeError, type Normalizer, TableRows, tableDef } from '../normalize/index.js';
import { ChunkAppender } from './chunks.js';
import { CODEC, encodeBlock, type LandedRecord } from './landing.js';
import { pickWinnersSql, type RowMeta, replaceSql } from './merge.js';
import { literal, stagingTable, timestampLiteral } from './sql.js';

/**
 * The work of one transaction, built in memory first: records are landed raw and normalized into
 * columnar buffers with no DuckDB call, so the next batch can be parsed while DuckDB merges the previous
 * one. `write` then runs inside the warehouse's transaction: every buffer goes through the Appender into
 * the staging tables (and the raw landing and rejections straight into theirs) and the staged units are
 * merged into the warehouse tables.
 */

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
  private readonly landed: LandedRecord[] = [];
  private readonly rejected = new TableRows('_rejected_records', tableDef('_rejected_records').columns);
  private readonly syncedMicros: number;
  readonly rowMeta: RowMeta;
  /** Statements to run in the same transaction after the merge (state, ledger, soft deletes). */
  readonly after: string[] = [];
  readonly firstSeq: number;

  constructor(
    readonly normalizer: Normalizer,
    readonly meta: BatchMeta,
    /** The next raw landing sequence number; advanced as records land. */
    public nextSeq: number,
  ) {
    this.firstSeq = nextSeq;
    this.syncedMicros = meta.syncedAtMs * 1000;
    this.rowMeta = {
      store: literal(meta.store),
      syncedAt: timestampLiteral(meta.syncedAtMs),
      runId: literal(meta.runId),
    };
  }

  /**
   * Appends to the raw landing; the returned record carries its sequence number. `entity` is the API
   * entity of records, and for unreadable pieces the reason they could not be read.
   */
  land(
    stream: string,
    entity: string | null,
    kind: string,
    source: string | null,
    text: string,
  ): LandedRecord {
    const record = { seq: this.nextSeq++, kind, stream, entity, source, text };
    this.landed.push(record);
    return record;
  }

  /** Records landed so far, and their characters (for batch sizing). */
  get landedCount(): number {
    return this.landed.length;
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

  /** Appends every buffer through the Appender and merges the staged units (inside a transaction). */
  async write(connection: DuckDBConnection): Promise<BatchCounts> {
    const staged = new Set<string>();
    for (const rows of this.normalizer.tables.values()) {
      if (rows.length === 0) continue;
      await appendAll(connection, `stg_${rows.name}`, rows, 'temp');
      staged.add(rows.name);
      this.counts.rows += rows.length;
    }
    if (this.rejected.length) await appendAll(connection, this.rejected.name, this.rejected, null);
    if (this.landed.length) await this.writeLanding(connection);
    for (const table of staged) {
      if (!tableDef(table).unit) continue;
      const picked = await connection.run(pickWinnersSql(table, this.rowMeta));
      await connection.run(replaceSql(table, this.rowMeta, picked.rowsChanged > 0, staged));
    }
    const truncate = [...staged].map((t) => `TRUNCATE ${stagingTable(t)}`);
    const statements = [...truncate, ...this.after];
    if (statements.length) await connection.run(statements.join(';\n'));
    return this.counts;
  }

  /** Empties the buffers so the normalizer can serve the next batch. */
  release(): void {
    this.normalizer.clear();
    this.landed.length = 0;
    this.rejected.clear();
  }

  private async writeLanding(connection: DuckDBConnection): Promise<void> {
    const payload = await encodeBlock(this.landed);
    const streams = [...new Set(this.landed.map((r) => r.stream))];
    const appender = await connection.createAppender('_raw_landing');
    try {
      appender.appendBigInt(BigInt(this.landed[0]!.seq));
      appender.appendBigInt(BigInt(this.landed.at(-1)!.seq));
      appender.appendVarchar(this.meta.store);
      appender.appendBigInt(BigInt(this.landed.length));
      appender.appendList(streams, LIST(VARCHAR));
      appender.appendVarchar(CODEC);
      appender.appendBlob(payload);
      appender.appendTimestampTZ(new DuckDBTimestampTZValue(BigInt(this.syncedMicros)));
      appender.appendVarchar(this.meta.runId);
      appender.endRow();
    } finally {
      appender.closeSync();
    }
  }
}

/** `catalog` null is the warehouse file itself (DuckDB names that catalog after the file). */
async function appendAll(
  connection: DuckDBConnection,
  table: string,
  rows: TableRows,
  catalog: 'temp' | null,
) {
  const appender = await ChunkAppender.open(
    connection,
    table,
    rows.columns.map((c) => c.type),
    'main',
    catalog ?? undefined,
  );
  try {
    appender.append(rows);
  } finally {
    appender.close();
  }
}
