import type { EntityKind, SchemaContract } from '../contracts.js';
import { type Detection, detectDocument, detectOrderShape } from '../normalize/index.js';
import type { BatchBuilder } from './batch-builder.js';
import type { LandedMeta } from './landing.js';
import { windowOfSource } from './window-events.js';

/**
 * What happens to one received text, shared by ingest, commitPage and rebuild so a rebuild takes exactly
 * the path the original load took. Returns true when any of it was rejected.
 */

export const DOCUMENTS_STREAM = 'documents';

/** Kinds of landed records. */
export const KIND = {
  record: 'record',
  document: 'document',
  /** A piece the splitter could not delimit; `entity` holds why (see landing.ts). */
  unreadable: 'unreadable',
  fullScan: 'full_scan_complete',
} as const;

type Origin = { stream: string; source: string | null; payload: string; seq: number };

function reject(batch: BatchBuilder, origin: Origin, stage: 'parse' | 'normalize', reason: string): 1 {
  batch.reject({ ...origin, stage, key: null, reason });
  return 1;
}

/**
 * What documents of a file were besides loaded or rejected, for its summary and ledger entry (made only
 * when there is something to count: ordinary documents add nothing).
 */
export interface DocumentTally {
  /**
   * Documents skipped inside webhook or event envelopes (no table, not recognised), by object or event type.
   * Maps, not objects: the names come from the input (`__proto__` is a name like any other).
   */
  skipped?: Map<string, number>;
  /** Records read under a version label store-sync does not know, by label, with the shapes they were read as. */
  unknownVersions?: Map<string, UnknownVersionCount>;
}

export interface UnknownVersionCount {
  documents: number;
  readAs: string[];
}

/** Adds one tally's counts into another (a file's batches into the file's total). */
export function addTally(into: DocumentTally, from: DocumentTally): void {
  for (const [as, n] of from.skipped ?? []) {
    into.skipped ??= new Map();
    into.skipped.set(as, (into.skipped.get(as) ?? 0) + n);
  }
  for (const [label, { documents, readAs }] of from.unknownVersions ?? []) {
    into.unknownVersions ??= new Map();
    const seen = into.unknownVersions.get(label) ?? { documents: 0, readAs: [] };
    into.unknownVersions.set(label, seen);
    seen.documents += documents;
    for (const shape of readAs) if (!seen.readAs.includes(shape)) seen.readAs.push(shape);
  }
}

/**
 * An ingested document (or an unreadable piece) that has already been landed as `seq`, as read (bytes) or
 * as text. Returns how many rejections it made: one for a document refused whole, one per refused record of
 * a document that holds several (a move result, an array). Bytes go to the fast path first, which loads
 * the common case (an order with nothing to refuse) without parsing it into objects. Skipped documents and
 * unknown version labels are counted into `tally` when one is given (a rebuild has none). `contract` says
 * what to do with fields the model does not map (the fast path reads only documents that have none).
 */
export function loadDocument(
  batch: BatchBuilder,
  landed: LandedMeta,
  payload: string | Uint8Array,
  tally?: DocumentTally,
  contract: SchemaContract = 'evolve',
): number {
  if (typeof payload !== 'string') {
    if (landed.kind !== KIND.unreadable && batch.addDocumentBytes(payload)) return 0;
    payload = Buffer.from(payload.buffer, payload.byteOffset, payload.length).toString('utf8');
  }
  const text = payload;
  const origin: Origin = { stream: landed.stream, source: landed.source, payload: text, seq: landed.seq };
  if (landed.kind === KIND.unreadable) return reject(batch, origin, 'parse', landed.entity ?? 'unreadable');
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return reject(batch, origin, 'parse', `malformed JSON: ${(error as Error).message}`);
  }
  const detected = detectDocument(value);
  let rejections = 0;
  for (const error of detected.errors) rejections += reject(batch, origin, 'normalize', error);
  for (const r of detected.records)
    rejections += batch.addRecord(r.record, r.entity, r.apiVersion, origin, r.at, r.envelope, contract);
  if (tally && (detected.skipped.length || detected.labels.length)) count(tally, detected);
  return rejections;
}

function count(tally: DocumentTally, detected: Detection): void {
  for (const as of detected.skipped) {
    tally.skipped ??= new Map();
    tally.skipped.set(as, (tally.skipped.get(as) ?? 0) + 1);
  }
  for (const { label, readAs } of detected.labels) {
    tally.unknownVersions ??= new Map();
    const seen = tally.unknownVersions.get(label) ?? { documents: 0, readAs: [] };
    tally.unknownVersions.set(label, seen);
    seen.documents++;
    if (!seen.readAs.includes(readAs)) seen.readAs.push(readAs);
  }
}

/**
 * An API record of a known entity that has already been landed as `seq`; true when any of it was rejected.
 * `contract` as for loadDocument.
 */
export function loadRecord(
  batch: BatchBuilder,
  landed: LandedMeta,
  text: string,
  record: Record<string, unknown>,
  contract: SchemaContract = 'evolve',
): boolean {
  const entity = landed.entity as EntityKind;
  const shape = entity === 'order' ? detectOrderShape(record) : null;
  const origin: Origin = { stream: landed.stream, source: landed.source, payload: text, seq: landed.seq };
  const window = windowOfSource(landed.source);
  // Dated whether or not a field of it was refused: the window returned it either way.
  if (window && (typeof record.id === 'number' || typeof record.id === 'string'))
    batch.dated.push({ stream: landed.stream, recordId: String(record.id), ...window });
  return batch.addRecord(record, entity, shape, origin, undefined, undefined, contract) > 0;
}
