import type { DuckDBConnection } from '@duckdb/node-api';
import type { EntityKind } from '../contracts.js';
import { ownedBy, tableDef } from '../model/index.js';
import {
  NormalizeError,
  type Normalizer,
  type RowsSnapshot,
  snapshotBuffers,
  stagingColumns,
  TableRows,
} from '../normalize/index.js';
import type { AppenderPool, Feed, LandingValue } from './chunks.js';
import type { KeyRanges } from './key-ranges.js';
import { BlockWriter, CODEC, type LandedMeta, landingParts } from './landing.js';
import type { Layouts } from './layouts.js';
import { mergeUnits } from './merge.js';

/**
 * The work of one transaction, built in memory first: records are landed raw and normalized into
 * columnar buffers with no DuckDB call, so the next batch can be parsed while DuckDB merges the previous
 * one. `write` then runs inside the warehouse's transaction: the units that win (merge.ts) go through the
 * Appender straight into the warehouse tables, after the stored ones they replace are deleted, and the raw
 * landing and rejections into theirs.
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

/**
 * Most of a rejected payload kept in `_rejected_records.payload`: 64 KiB of its UTF-8. The raw landing keeps
 * what was landed whole; a table row of hundreds of megabytes (a JSON array missing one bracket, read as one
 * value) makes DuckDB fail to allocate its block, and the whole run with it.
 */
export const REJECTED_PAYLOAD_BYTES = 64 << 10;

/**
 * A payload over REJECTED_PAYLOAD_BYTES cut to its first bytes (at a character's start), with the note the
 * reason gets; null when it fits.
 */
export function payloadExcerpt(payload: string): { text: string; note: string } | null {
  // A UTF-16 unit is at most 3 bytes of UTF-8: most payloads are known to fit without counting.
  if (payload.length <= REJECTED_PAYLOAD_BYTES / 3) return null;
  const bytes = Buffer.byteLength(payload, 'utf8');
  if (bytes <= REJECTED_PAYLOAD_BYTES) return null;
  // The first REJECTED_PAYLOAD_BYTES units hold at least as many bytes.
  const head = Buffer.from(payload.slice(0, REJECTED_PAYLOAD_BYTES), 'utf8');
  let end = REJECTED_PAYLOAD_BYTES;
  while (end > 0 && (head[end]! & 0xc0) === 0x80) end--;
  const text = head.toString('utf8', 0, end);
  return { text, note: `(payload: its first ${end} of ${bytes} bytes)` };
}

/** A `_raw_landing` row: the batch's records, encoded (see landing.ts). */
export interface LandingBlock {
  payload: Uint8Array;
  firstSeq: number;
  lastSeq: number;
  records: number;
  streams: string[];
}

/**
 * A batch built and encoded away from the warehouse (in the ingest worker, see ingest/prepare.ts), as plain
 * data that moves between threads: its rows sealed, its raw landing already compressed.
 */
export interface PreparedBatch {
  meta: BatchMeta;
  firstSeq: number;
  nextSeq: number;
  tables: RowsSnapshot[];
  rejected: RowsSnapshot;
  landing: LandingBlock | null;
  counts: BatchCounts;
  /** Of `counts.records`, the documents the fast path read (normalize/fast.ts): the ingest's debug log shows it. */
  fastPathDocuments: number;
  after: string[];
}

/** The buffers of a prepared batch, for `postMessage`'s transfer list. */
export function preparedBuffers(prepared: PreparedBatch): ArrayBuffer[] {
  const buffers = [...prepared.tables, prepared.rejected].flatMap(snapshotBuffers);
  // The compressed landing moves too when it owns its memory (a small Buffer shares Node's pool): a copy
  // would stay allocated in the worker until its next full collection.
  const payload = prepared.landing?.payload;
  if (payload && payload.byteOffset === 0 && payload.byteLength === payload.buffer.byteLength)
    buffers.push(payload.buffer as ArrayBuffer);
  return buffers;
}

const REJECTED_COLUMNS = tableDef('_rejected_records').columns;

export class Batch {
  readonly counts: BatchCounts = { records: 0, rows: 0, rejections: 0 };
  /** Documents the fast path read into this batch (see PreparedBatch). */
  fastPathDocuments = 0;
  /**
   * Rows `write` appended to any table, bookkeeping included (rejections, raw landing): the transaction
   * uses it to decide how to commit (see Transaction.commit).
   */
  appendedRows = 0;
  /** The raw landing of the records landed so far, compressed as they arrive (made by the first record). */
  private landing: BlockWriter | null = null;
  private rejected = new TableRows('_rejected_records', REJECTED_COLUMNS);
  /** Set on a batch made from a PreparedBatch: its rows and landing, ready to write. */
  private prepared: { tables: Map<string, TableRows>; landing: LandingBlock | null } | null = null;
  private readonly syncedMicros: number;
  /** Statements to run in the same transaction after the merge (state, ledger, soft deletes). */
  readonly after: string[] = [];
  readonly firstSeq: number;

  constructor(
    /** Null for a batch made from a PreparedBatch (its rows were normalized elsewhere). */
    readonly normalizer: Normalizer | null,
    readonly meta: BatchMeta,
    /** The next raw landing sequence number; advanced as records land. */
    public nextSeq: number,
    /** Where the batch's landing starts (a prepared batch has landed its records already). */
    firstSeq = nextSeq,
  ) {
    this.firstSeq = firstSeq;
    this.syncedMicros = meta.syncedAtMs * 1000;
  }

  /** Called once the batch's buffers are no longer needed (see `release`). */
  private onRelease: (() => void) | null = null;

  /** A batch prepared elsewhere, ready to write; `onRelease` may take its buffers back once it is written. */
  static fromPrepared(prepared: PreparedBatch, onRelease?: () => void): Batch {
    const batch = new Batch(null, prepared.meta, prepared.nextSeq, prepared.firstSeq);
    batch.onRelease = onRelease ?? null;
    const tables = new Map<string, TableRows>();
    for (const snapshot of prepared.tables)
      tables.set(snapshot.name, TableRows.fromSnapshot(snapshot, stagingColumns(tableDef(snapshot.name))));
    batch.prepared = { tables, landing: prepared.landing };
    batch.rejected = TableRows.fromSnapshot(prepared.rejected, REJECTED_COLUMNS);
    Object.assign(batch.counts, prepared.counts);
    batch.fastPathDocuments = prepared.fastPathDocuments;
    batch.after.push(...prepared.after);
    return batch;
  }

  /**
   * Seals and encodes the batch into plain data (the normalizer's buffers are handed over and replaced,
   * so the normalizer can go on with the next batch at once).
   */
  async prepare(): Promise<PreparedBatch> {
    const normalizer = this.normalizer!;
    const tables = [...normalizer.tables.values()].filter((t) => t.length).map((t) => t.takeSnapshot());
    normalizer.clear();
    const rejected = this.rejected.takeSnapshot();
    // Everything the normalizer shares is taken before the first await: the caller may start the next batch.
    const landing = await this.finishLanding();
    return {
      meta: this.meta,
      firstSeq: this.firstSeq,
      nextSeq: this.nextSeq,
      tables,
      rejected,
      landing,
      counts: { ...this.counts },
      fastPathDocuments: this.fastPathDocuments,
      after: [...this.after],
    };
  }

  /** The rows to write, by table. */
  private get tables(): Map<string, TableRows> {
    return this.prepared?.tables ?? this.normalizer!.tables;
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
    payload: string | Buffer,
  ): LandedMeta {
    const seq = this.nextSeq++;
    this.landing ??= new BlockWriter();
    this.landing.add({ seq, kind, stream, entity, source, payload });
    return { seq, kind, stream, entity, source };
  }

  /** Normalizes one record into staging; a value that cannot be stored exactly becomes a rejection. */
  addRecord(
    record: Record<string, unknown>,
    entity: EntityKind,
    apiVersion: string | null,
    origin: { stream: string; source: string | null; payload: string; seq: number },
    /** Where the record is in its document, when it is not the whole of it: said first in a rejection. */
    at?: string,
  ): boolean {
    try {
      this.normalizer!.normalize(record, entity, apiVersion);
      this.counts.records++;
      return true;
    } catch (error) {
      if (!(error instanceof NormalizeError)) throw error;
      const reason = at ? `${at}: ${error.reason}` : error.reason;
      this.reject({ ...origin, stage: 'normalize', key: error.key, reason });
      return false;
    }
  }

  /**
   * A document given as its bytes, normalized by the fast path when it can be (see normalize/fast.ts);
   * false when it must go the ordinary way (nothing was written).
   */
  addDocumentBytes(bytes: Uint8Array): boolean {
    if (this.normalizer!.normalizeBytes(bytes) === null) return false;
    this.counts.records++;
    this.fastPathDocuments++;
    return true;
  }

  reject(r: RejectionRow): void {
    const t = this.rejected;
    const row = t.addRow();
    const excerpt = r.payload === null ? null : payloadExcerpt(r.payload);
    t.setText(0, row, this.meta.store);
    t.setText(1, row, r.stream);
    t.setText(2, row, r.stage);
    if (r.key !== null) t.setText(3, row, r.key);
    t.setText(4, row, excerpt ? `${r.reason} ${excerpt.note}` : r.reason);
    if (r.source !== null) t.setText(5, row, r.source);
    if (r.payload !== null) t.setText(6, row, excerpt ? excerpt.text : r.payload);
    if (r.seq !== null) t.setInt64(7, row, r.seq);
    t.setInt64(8, row, this.syncedMicros);
    t.setText(9, row, this.meta.runId);
    this.counts.rejections++;
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
  ): Promise<BatchCounts> {
    const tables = this.tables;
    for (const rows of tables.values()) {
      const def = tableDef(rows.name);
      if (rows.length === 0 || !def.unit) continue;
      const family = [rows, ...ownedBy(def.name).map((t) => tables.get(t.name))].filter(
        (r): r is TableRows => r !== undefined && r.length > 0,
      );
      for (const member of family) member.seal();
      const units = await mergeUnits(connection, appenders, rows, this.meta.store, keyRanges);
      for (const member of family) {
        this.counts.rows += member.length;
        if (units) member.keepUnits(units);
        if (member.length === 0) continue;
        (await appenders.get(member.name)).append(member, this.directFeeds(member, layouts));
        this.appendedRows += member.length;
      }
    }
    this.rejected.seal();
    if (this.rejected.length)
      (await appenders.get(this.rejected.name)).append(this.rejected, identityFeeds(this.rejected));
    // The rows are in DuckDB: their buffers can go back to their maker while the landing and the ledger are
    // written. An ingest worker waits for them before it starts its next batch (ingest/worker.ts).
    this.handBack();
    const landing = this.prepared ? this.prepared.landing : await this.finishLanding();
    this.appendedRows += this.rejected.length;
    if (landing) this.appendedRows += await this.writeLanding(landing, layouts, appenders);
    const statements = this.after.filter((sql) => sql.trim() !== '');
    if (statements.length) await connection.run(statements.join(';\n'));
    return this.counts;
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

  /** Empties the buffers so the normalizer can serve the next batch (or hands them back, see fromPrepared). */
  release(): void {
    this.normalizer?.clear();
    this.prepared = null;
    this.landing?.discard();
    this.landing = null;
    this.rejected.clear();
    this.handBack();
  }

  /** Runs `onRelease` once: the rows' buffers are no longer read (see `write` and `release`). */
  private handBack(): void {
    const onRelease = this.onRelease;
    this.onRelease = null;
    onRelease?.();
  }

  /** The block of what was landed, or null when nothing was. */
  private async finishLanding(): Promise<LandingBlock | null> {
    const writer = this.landing;
    if (!writer) return null;
    return {
      payload: await writer.finish(),
      firstSeq: writer.firstSeq,
      lastSeq: writer.lastSeq,
      records: writer.records,
      streams: [...writer.streams],
    };
  }

  /**
   * The batch's `_raw_landing` row and its bytes as `_raw_landing_parts` rows (see landing.ts), through
   * pooled appenders (flushed, so their buffers are reused). Returns the rows appended.
   */
  private async writeLanding(
    block: LandingBlock,
    layouts: Layouts,
    appenders: AppenderPool,
  ): Promise<number> {
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
    const columns = layouts.columns('_raw_landing_parts');
    const rows = landingParts(block.payload).map((bytes, part) => {
      const value: Record<string, LandingValue> = {
        first_seq: { int64: block.firstSeq },
        part: { int64: part },
        bytes: { blob: bytes },
      };
      return columns.map((c) => value[c] ?? null);
    });
    (await appenders.get('_raw_landing_parts')).appendRows(rows);
    return 1 + rows.length;
  }
}

const identityFeeds = (rows: TableRows): Feed[] =>
  rows.columns.map((_, column) => ({ from: 'rows', column }));
