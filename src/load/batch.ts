import { type DuckDBConnection, DuckDBTimestampTZValue, LIST, VARCHAR } from '@duckdb/node-api';
import type { EntityKind } from '../contracts.js';
import { NormalizeError, type Normalizer, ownedBy, TableRows, tableDef } from '../normalize/index.js';
import { ChunkAppender, type Feed } from './chunks.js';
import { CODEC, encodeBlock, type LandedRecord } from './landing.js';
import type { Layouts } from './layouts.js';
import { pickWinnersSql, type RowMeta, replaceSql } from './merge.js';
import { ident, literal, stagingTable, timestampLiteral } from './sql.js';

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

  /**
   * Writes the batch inside a transaction. Each unit table goes one of two ways: when none of its keys
   * is stored yet and none repeats within the batch (a first load), its rows and the rows it owns are
   * appended straight into the warehouse tables; otherwise they go through the staging tables and the
   * merge SQL decides, per key, which version wins (see merge.ts).
   */
  async write(connection: DuckDBConnection, layouts: Layouts): Promise<BatchCounts> {
    const staged = new Set<string>();
    for (const rows of this.normalizer.tables.values()) {
      const def = tableDef(rows.name);
      if (rows.length === 0 || !def.unit) continue;
      const family = [rows, ...ownedBy(def.name).map((t) => this.normalizer.tables.get(t.name)!)].filter(
        (r) => r.length,
      );
      const direct = await this.conflictFree(connection, rows);
      for (const member of family) {
        if (direct) await appendAll(connection, member.name, member, this.directFeeds(member, layouts));
        else {
          await appendAll(connection, `stg_${member.name}`, member, identityFeeds(member), 'temp');
          staged.add(member.name);
        }
        this.counts.rows += member.length;
      }
    }
    if (this.rejected.length)
      await appendAll(connection, this.rejected.name, this.rejected, identityFeeds(this.rejected));
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

  /** True when no key of the unit table repeats in the batch or is already stored for this store. */
  private async conflictFree(connection: DuckDBConnection, rows: TableRows): Promise<boolean> {
    const def = tableDef(rows.name);
    const keyColumn = rows.columns.findIndex((c) => c.name === def.unit!.key);
    const keys = new Set<string | number | bigint>();
    for (let row = 0; row < rows.length; row++) {
      const key = rows.get(keyColumn, row) as string | number | bigint;
      if (keys.has(key)) return false;
      keys.add(key);
    }
    const list = [...keys].map((k) => (typeof k === 'string' ? literal(k) : String(k))).join(', ');
    const reader = await connection.runAndReadAll(
      `SELECT count(*) FROM ${ident(def.name)} WHERE _store = ${this.rowMeta.store} AND ${ident(def.unit!.key)} IN (${list})`,
    );
    return Number(reader.getRows()[0]![0]) === 0;
  }

  /** Feeds for a warehouse table in its physical column order: the standard columns are the same on every row. */
  private directFeeds(rows: TableRows, layouts: Layouts): Feed[] {
    return layouts.columns(rows.name).map((name): Feed => {
      if (name === '_store') return { from: 'text', value: this.meta.store };
      if (name === '_synced_at') return { from: 'int64', value: this.syncedMicros };
      if (name === '_run_id') return { from: 'text', value: this.meta.runId };
      const column = rows.columns.findIndex((c) => c.name === name);
      return column > 0 ? { from: 'rows', column } : { from: 'null' };
    });
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

const identityFeeds = (rows: TableRows): Feed[] =>
  rows.columns.map((_, column) => ({ from: 'rows', column }));

/** `catalog` undefined is the warehouse file itself (DuckDB names that catalog after the file). */
async function appendAll(
  connection: DuckDBConnection,
  table: string,
  rows: TableRows,
  feeds: Feed[],
  catalog?: string,
) {
  const appender = await ChunkAppender.open(connection, table, feeds, catalog);
  try {
    appender.append(rows);
  } finally {
    appender.close();
  }
}
