import type { EntityKind } from '../contracts.js';
import { tableDef } from '../model/index.js';
import {
  type EnvelopeMeta,
  NormalizeError,
  type Normalizer,
  type RowsSnapshot,
  type SchemaChange,
  type SchemaContract,
  snapshotBuffers,
  TableRows,
} from '../normalize/index.js';
import { BlockWriter, type LandedMeta } from './landing.js';
import { type DatedRecord, windowEventsSql } from './window-events.js';

/**
 * The work of one transaction, built in memory first, with no DuckDB call: records are landed raw (the
 * landing compressed as they arrive) and normalized into per-column buffers, and what cannot be stored
 * becomes a rejection row. It runs in the ingest workers (sealed into a PreparedBatch that moves between
 * threads) and on the main thread for a sync's page; batch-writer.ts then writes the buffers into DuckDB
 * inside the warehouse's transaction, so the next batch can be built while DuckDB merges the previous one.
 */

export interface BatchMeta {
  store: string;
  runId: string;
  /** `_synced_at` of every row written (rebuild passes the original time). */
  syncedAtMs: number;
  /**
   * No other batch of its run is dated `syncedAtMs`: its rows are told apart by their time and run alone (a
   * sync's groups of pages, Warehouse.commitPagesBatch; an ingest's workers may date two batches alike).
   */
  ownTime?: boolean;
  /** The API pages the batch holds (commitPages), each with its records: what `status` shows of a sync. */
  pages?: readonly { stream: string; records: number }[];
}

export interface RejectionRow {
  stream: string;
  stage: 'extract' | 'parse' | 'normalize';
  key: string | null;
  reason: string;
  source: string | null;
  payload: string | null;
  seq: number | null;
  /** `record` (the default): the record was not loaded; `field`: it loaded with one column NULL. */
  level?: 'record' | 'field';
  /** The field to blame, as a path in the record, when one is. */
  fieldPath?: string | null;
}

export interface BatchCounts {
  records: number;
  /**
   * Data rows the batch stored, new or replacing stored ones: rows of its own that lost to a newer document
   * (a customer repeated in its orders, a document older than the stored one) are not counted.
   */
  rows: number;
  /** `_rejected_records` rows, of both levels. */
  rejections: number;
  /** Of `rejections`, those of level `field`: their records were stored (with one value refused). */
  fieldRejections: number;
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
  /** Field paths the model does not map that the batch's loaded records carried. */
  schemaChanges: SchemaChange[];
}

/**
 * Detaches a throwaway ArrayBuffer on the calling thread. V8 compiles typed-array code on the promise that
 * no ArrayBuffer has ever been detached (its "detaching protector"); the first batch whose buffers move to
 * another thread breaks that promise, and V8 then throws away every optimized function that relied on it
 * (about 80 on an ingest worker, the generated table writers among them) and compiles them again. Broken
 * before any of them is compiled, they are compiled once: about 0.3 CPU-seconds less per ingest
 * (docs/performance.md, "Issue 31: compiled once, and fewer calls per part"). Called by each thread that
 * moves batch buffers, as it starts: the worker, and the main thread as it starts a worker.
 */
export function expectDetachedBuffers(): void {
  const buffer = new ArrayBuffer(8);
  structuredClone(buffer, { transfer: [buffer] });
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

/** The columns of `_rejected_records`, as a batch's rejection rows hold them. */
export const REJECTED_COLUMNS = tableDef('_rejected_records').columns;

export class BatchBuilder {
  readonly counts: BatchCounts = { records: 0, rows: 0, rejections: 0, fieldRejections: 0 };
  /** Documents the fast path read into this batch (see PreparedBatch). */
  fastPathDocuments = 0;
  /** The raw landing of the records landed so far, compressed as they arrive (made by the first record). */
  private landing: BlockWriter | null = null;
  /** The batch's rejections, in `_rejected_records`' columns. */
  readonly rejected = new TableRows('_rejected_records', REJECTED_COLUMNS);
  /** Statements to run in the same transaction after the merge (state, ledger, soft deletes). */
  readonly after: string[] = [];
  /** Records received from a window that dates an event (window-events.ts), for `_window_events`. */
  readonly dated: DatedRecord[] = [];
  /** Where the batch's landing starts. */
  readonly firstSeq: number;

  constructor(
    /** Normalizes the records into its tables' buffers, which the batch's rows are. */
    readonly normalizer: Normalizer,
    readonly meta: BatchMeta,
    /** The next raw landing sequence number; advanced as records land. */
    public nextSeq: number,
  ) {
    this.firstSeq = nextSeq;
  }

  /**
   * Seals and encodes the batch into plain data (the normalizer's buffers are handed over and replaced,
   * so the normalizer can go on with the next batch at once).
   */
  async prepare(): Promise<PreparedBatch> {
    const normalizer = this.normalizer;
    const tables = [...normalizer.tables.values()].filter((t) => t.length).map((t) => t.takeSnapshot());
    // Before clear(), which drops the tally with the buffers.
    const schemaChanges = normalizer.takeSchemaChanges();
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
      after: this.afterStatements(),
      schemaChanges,
    };
  }

  /** The statements to run after the merge: `after`, then the dating of the records of dating windows. */
  afterStatements(): string[] {
    if (this.dated.length === 0) return [...this.after];
    return [
      ...this.after,
      windowEventsSql(this.meta.store, this.meta.runId, this.meta.syncedAtMs, this.dated),
    ];
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
    /** What the envelope the record came in said of it (detect.ts); none for a bare document or a synced record. */
    envelope?: EnvelopeMeta,
    /** What to do with fields the model does not map (the stream's `schemaContract`). */
    contract: SchemaContract = 'evolve',
  ): number {
    try {
      const fields = this.normalizer.normalize(record, entity, apiVersion, envelope ?? null, contract);
      this.counts.records++;
      for (const field of fields) {
        const reason = at ? `${at}: ${field.reason}` : field.reason;
        this.reject({
          ...origin,
          stage: 'normalize',
          key: field.key,
          reason: `${field.table}: ${reason}`,
          payload: field.value === undefined ? null : (JSON.stringify(field.value) ?? null),
          level: 'field',
          fieldPath: field.fieldPath,
        });
      }
      return fields.length;
    } catch (error) {
      if (!(error instanceof NormalizeError)) throw error;
      const reason = at ? `${at}: ${error.reason}` : error.reason;
      this.reject({ ...origin, stage: 'normalize', key: error.key, reason, fieldPath: error.fieldPath });
      return 1;
    }
  }

  /**
   * A document given as its bytes, normalized by the fast path when it can be (see normalize/fast.ts);
   * false when it must go the ordinary way (nothing was written).
   */
  addDocumentBytes(bytes: Uint8Array): boolean {
    if (this.normalizer.normalizeBytes(bytes) === null) return false;
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
    // `_synced_at` (column 8) is the batch's, given as it is written (BatchWriter.write).
    t.setText(9, row, this.meta.runId);
    t.setText(10, row, r.level ?? 'record');
    if (r.fieldPath) t.setText(11, row, r.fieldPath);
    this.counts.rejections++;
    if (r.level === 'field') this.counts.fieldRejections++;
  }

  /** Empties the buffers so the normalizer can serve the next batch. */
  release(): void {
    this.normalizer.clear();
    this.landing?.discard();
    this.landing = null;
    this.rejected.clear();
  }

  /** The block of what was landed, or null when nothing was. */
  async finishLanding(): Promise<LandingBlock | null> {
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
}
