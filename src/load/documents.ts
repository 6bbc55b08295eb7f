import type { EntityKind } from '../contracts.js';
import { detectDocument, detectOrderShape } from '../normalize/index.js';
import type { BatchBuilder } from './batch-builder.js';
import type { LandedMeta } from './landing.js';

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
 * An ingested document (or an unreadable piece) that has already been landed as `seq`, as read (bytes) or
 * as text. Returns how many rejections it made: one for a document refused whole, one per refused record of
 * a document that holds several (a move result, an array). Bytes go to the fast path first, which loads
 * the common case (an order with nothing to refuse) without parsing it into objects.
 */
export function loadDocument(batch: BatchBuilder, landed: LandedMeta, payload: string | Uint8Array): number {
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
    if (!batch.addRecord(r.record, r.entity, r.apiVersion, origin, r.at)) rejections++;
  return rejections;
}

/** An API record of a known entity that has already been landed as `seq`. */
export function loadRecord(
  batch: BatchBuilder,
  landed: LandedMeta,
  text: string,
  record: Record<string, unknown>,
): boolean {
  const entity = landed.entity as EntityKind;
  const shape = entity === 'order' ? detectOrderShape(record) : null;
  const origin: Origin = { stream: landed.stream, source: landed.source, payload: text, seq: landed.seq };
  return !batch.addRecord(record, entity, shape, origin);
}
