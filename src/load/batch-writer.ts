import type { DuckDBConnection } from '@duckdb/node-api';
import { tableDef } from '../model/index.js';
import { type Normalizer, type SchemaChange, stagingColumns, TableRows } from '../normalize/index.js';
import {
  type BatchBuilder,
  type BatchCounts,
  type BatchMeta,
  type LandingBlock,
  type PreparedBatch,
  REJECTED_COLUMNS,
} from './batch-builder.js';
import { type AppenderPool, type Feed, type LandingValue, partColumns } from './chunks.js';
import { HeldUnits } from './held-units.js';
import { firstVersionsSql, writeBatchHistory } from './history.js';
import type { Key, KeyRanges } from './key-ranges.js';
import { CODEC, LANDING_PART_BYTES } from './landing.js';
import type { Layouts } from './layouts.js';
import { KEYS_IN_SQL } from './merge.js';
import { writeSchemaChanges } from './schema-changes.js';
import { type FamilyTarget, unitFamily, writeUnitFamily } from './unit-family.js';

/**
 * The DuckDB side of a batch (built by batch-builder.ts): `write` runs inside the warehouse's transaction.
 * The units that win (merge.ts) go through the Appender straight into the warehouse tables, after the
 * stored ones they replace are deleted (units whose documents carry different fields are folded with the
 * stored ones instead, partial.ts), and the raw landing and rejections into theirs. A batch prepared
 * in an ingest worker is written from its sealed buffers; a sync's page from its builder's own.
 */

const NO_TABLES: ReadonlyMap<string, TableRows> = new Map();

export class BatchWriter {
  /**
   * Rows `write` appended, by table, bookkeeping included (rejections, raw landing) and the history versions
   * its rows make (as many as the rows, at most): the transaction uses it to decide how to commit (see
   * Transaction.commit).
   */
  readonly appendedRows = new Map<string, number>();
  private readonly syncedMicros: number;

  private constructor(
    readonly meta: BatchMeta,
    /** The rows to write, by table. */
    private tables: ReadonlyMap<string, TableRows>,
    private readonly rejected: TableRows,
    readonly counts: BatchCounts,
    /** Statements to run in the same transaction after the merge (state, ledger, soft deletes). */
    readonly after: string[],
    /** The builder whose own buffers are written (a sync's page), or null for a prepared batch. */
    private readonly builder: BatchBuilder | null,
    /** A prepared batch's landing, encoded already (a builder's is finished as it is written). */
    private readonly preparedLanding: LandingBlock | null,
    private readonly preparedNextSeq: number,
    /** Called once the batch's buffers are no longer needed (see `release`). */
    private onRelease: (() => void) | null,
    /** A prepared batch's new field paths (a builder's are taken from its normalizer as it is written). */
    private readonly preparedSchemaChanges: readonly SchemaChange[] = [],
  ) {
    this.syncedMicros = meta.syncedAtMs * 1000;
  }

  /** A batch prepared elsewhere, ready to write; `onRelease` may take its buffers back once it is written. */
  static fromPrepared(prepared: PreparedBatch, onRelease?: () => void): BatchWriter {
    const tables = new Map<string, TableRows>();
    for (const snapshot of prepared.tables)
      tables.set(snapshot.name, TableRows.fromSnapshot(snapshot, stagingColumns(tableDef(snapshot.name))));
    return new BatchWriter(
      prepared.meta,
      tables,
      TableRows.fromSnapshot(prepared.rejected, REJECTED_COLUMNS),
      Object.assign({ records: 0, rows: 0, rejections: 0, fieldRejections: 0 }, prepared.counts),
      [...prepared.after],
      null,
      prepared.landing,
      prepared.nextSeq,
      onRelease ?? null,
      prepared.schemaChanges,
    );
  }

  /** A batch built on this thread, written from its builder's buffers, which it shares (no copy). */
  static of(builder: BatchBuilder): BatchWriter {
    return new BatchWriter(
      builder.meta,
      builder.normalizer.tables,
      builder.rejected,
      builder.counts,
      builder.afterStatements(),
      builder,
      null,
      builder.firstSeq,
      null,
    );
  }

  /** The raw landing sequence number after the batch's records. */
  get nextSeq(): number {
    return this.builder ? this.builder.nextSeq : this.preparedNextSeq;
  }

  /** The normalizer whose buffers the batch shares, which can serve another batch once it is released. */
  get normalizer(): Normalizer | null {
    return this.builder?.normalizer ?? null;
  }

  /**
   * Writes the batch inside a transaction. Each unit table's rows, with the rows they own, are appended
   * straight into the warehouse tables, keeping only the units that win against the batch's other rows
   * and the stored ones, whose replaced units are deleted first (see merge.ts).
   */
  async write(
    connection: DuckDBConnection,
    layouts: Layouts,
    appenders: AppenderPool,
    keyRanges: KeyRanges,
    held: HeldUnits | null = null,
  ): Promise<BatchCounts> {
    const tables = this.tables;
    const target: FamilyTarget = {
      connection,
      layouts,
      appenders,
      keyRanges,
      appended: (table, rows) => this.appended(table, rows),
    };
    // Unit tables with a history that the batch stored rows into: their versions are added at the end, in
    // the statements after the merge where every record is new (`fresh`), else by writeBatchHistory.
    const versioned: { table: string; fresh: Key[] | null }[] = [];
    for (const rows of tables.values()) {
      const def = tableDef(rows.name);
      if (rows.length === 0 || !def.unit) continue;
      const family = unitFamily(def, tables);
      for (const member of family) member.seal();
      if (held && HeldUnits.holds(def)) {
        // Merged when the transaction commits, or now if what is held has grown too large.
        this.counts.rows += await held.hold(target, rows, this.meta);
        continue;
      }
      const written = await writeUnitFamily(target, def, family, this.meta);
      this.counts.rows += written.rows;
      const fresh = written.versioned?.fresh ?? null;
      if (written.versioned)
        versioned.push({
          table: def.name,
          fresh: fresh && (this.meta.ownTime || fresh.length <= KEYS_IN_SQL) ? fresh : null,
        });
    }
    this.rejected.seal();
    if (this.rejected.length)
      (await appenders.get(this.rejected.name)).append(
        this.rejected,
        // Dated as the batch is when it is written (a sync's group is dated as it commits).
        byName(this.rejected, layouts, { _synced_at: { from: 'int64', value: this.syncedMicros } }),
      );
    // The rows are in DuckDB: their buffers can go back to their maker while the landing and the ledger are
    // written. An ingest worker waits for them before it starts its next batch (ingest/worker.ts).
    this.handBack();
    // Plain data, not the buffers: merged once they are handed back.
    const changes = this.builder ? this.builder.normalizer.takeSchemaChanges() : this.preparedSchemaChanges;
    if (changes.length) await writeSchemaChanges(connection, this.meta, changes);
    const landing = this.builder ? await this.builder.finishLanding() : this.preparedLanding;
    this.appended(this.rejected.name, this.rejected.length);
    if (landing) await this.writeLanding(landing, layouts, appenders);
    const { store, runId, syncedAtMs } = this.meta;
    // The history after the soft deletes among these statements, so a record they delete and the batch brings
    // back is seen as it stands at the commit (history.ts). First versions need no reading: they go with them.
    const statements = [
      ...this.after.filter((sql) => sql.trim() !== ''),
      ...versioned.flatMap(({ table, fresh }) =>
        fresh ? firstVersionsSql(table, store, runId, syncedAtMs, this.meta.ownTime ? null : fresh) : [],
      ),
    ];
    if (statements.length) await connection.run(statements.join(';\n'));
    for (const { table } of versioned.filter((v) => !v.fresh))
      await writeBatchHistory(connection, table, store, runId, syncedAtMs);
    return this.counts;
  }

  private appended(table: string, rows: number): void {
    this.appendedRows.set(table, (this.appendedRows.get(table) ?? 0) + rows);
  }

  /** Empties the buffers (the builder's, so its normalizer can serve the next batch) or hands them back. */
  release(): void {
    if (this.builder) this.builder.release();
    else this.rejected.clear();
    this.tables = NO_TABLES;
    this.handBack();
  }

  /** Runs `onRelease` once: the rows' buffers are no longer read (see `write` and `release`). */
  private handBack(): void {
    const onRelease = this.onRelease;
    this.onRelease = null;
    onRelease?.();
  }

  /**
   * The batch's `_raw_landing` row and its bytes as `_raw_landing_parts` rows (see landing.ts), through
   * pooled appenders (flushed, so their buffers are reused).
   */
  private async writeLanding(block: LandingBlock, layouts: Layouts, appenders: AppenderPool): Promise<void> {
    const values: Record<string, LandingValue> = {
      first_seq: { int64: block.firstSeq },
      last_seq: { int64: block.lastSeq },
      _store: { text: this.meta.store },
      records: { int64: block.records },
      streams: { texts: block.streams },
      codec: { text: CODEC },
      _synced_at: { timestampMicros: this.syncedMicros },
      _run_id: { text: this.meta.runId },
    };
    (await appenders.get('_raw_landing')).appendRows([
      layouts.columns('_raw_landing').map((c) => values[c] ?? null),
    ]);
    const parts = (await appenders.get('_raw_landing_parts')).appendParts(
      partColumns(layouts.columns('_raw_landing_parts')),
      block.firstSeq,
      block.payload,
      LANDING_PART_BYTES,
    );
    this.appended('_raw_landing', 1);
    this.appended('_raw_landing_parts', parts);
  }
}

/**
 * Feeds of a bookkeeping table's rows by column name, `constants` for the columns the batch gives every row: a
 * warehouse made before a column existed has it at the end (ddl.ts adds it there), wherever the registry
 * declares it.
 */
const byName = (rows: TableRows, layouts: Layouts, constants: Record<string, Feed> = {}): Feed[] =>
  layouts.columns(rows.name).map((name): Feed => {
    const constant = constants[name];
    if (constant) return constant;
    const column = rows.columns.findIndex((c) => c.name === name);
    return column >= 0 ? { from: 'rows', column } : { from: 'null' };
  });
