import type { EntityKind } from '../contracts.js';
import { API_2023, API_2024 } from '../model/index.js';

/**
 * Document detection for `store-sync ingest` (rules in docs/ingest.md): what a JSON document is, which order
 * shape it has, and which records it holds. Documents carry no type tag, so the rules look for fields
 * only one resource has; an envelope `{api_version, data}` is unwrapped first and its version trusted.
 */

export interface DetectedRecord {
  entity: EntityKind;
  /** The order shape; null when the document does not show it (and it then does not matter). */
  apiVersion: string | null;
  record: Record<string, unknown>;
  /**
   * Where the record is in the document, when it is not the document itself (`moved_fulfillment_order`,
   * `[1]`, `data[1]`): a rejection's reason starts with it, so it says which record was refused.
   */
  at?: string;
}

/**
 * The records a document holds, and why any part of it was refused: a whole document, or the items of an
 * array one by one (an item that is not a document does not take the documents beside it down with it).
 */
export interface Detection {
  records: DetectedRecord[];
  errors: string[];
}

const refused = (error: string): Detection => ({ records: [], errors: [error] });
const found = (...records: DetectedRecord[]): Detection => ({ records, errors: [] });

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * What the rules below ask of a document, so that the same rules read a parsed object (here) and a document
 * still in bytes (scan.ts, fast.ts): whether a field is present (JSON null counts: only a missing field is
 * absent), whether it holds a string, and the objects in an array field.
 */
export interface DocumentFields<T> {
  has(doc: T, key: string): boolean;
  isString(doc: T, key: string): boolean;
  objectsIn(doc: T, key: string): readonly T[];
}

const parsed: DocumentFields<Record<string, unknown>> = {
  has: (doc, key) => doc[key] !== undefined,
  isString: (doc, key) => typeof doc[key] === 'string',
  objectsIn: (doc, key) => {
    const value = doc[key];
    return Array.isArray(value) ? value.filter(isObject) : [];
  },
};

/** The fields the rules look at, by what they tell apart (a document reader must be able to answer for these). */
export const DETECTION_FIELDS = {
  envelope: ['api_version', 'data'],
  move: ['moved_fulfillment_order', 'original_fulfillment_order'],
  /** With a string `number`, any of these makes an order. */
  order: ['lines', 'date_placed', 'order_status_url', 'total_incl_tax'],
  orderLine2023: ['product', 'stockrecord', 'price_currency', 'price_excl_tax_excl_discounts'],
  orderLine2024: ['product_id', 'sku', 'current_quantity', 'variant_id'],
  fulfillment2023: ['carrier', 'lines', 'reference', 'date_created'],
  fulfillment2024: ['line_items', 'tracking_carrier', 'origin_address', 'created_at'],
  order2024: ['total_outstanding', 'total_discount', 'original_total_discount'],
  /** The array fields of an order whose objects show its shape. */
  orderArrays: ['lines', 'fulfillments'],
} as const;

const F = DETECTION_FIELDS;

function hasAny<T>(f: DocumentFields<T>, doc: T, keys: readonly string[]): boolean {
  for (const key of keys) if (f.has(doc, key)) return true;
  return false;
}

/** The order shape a document shows by its own fields, or null when it shows none (2.2). */
export function orderShapeOf<T>(order: T, f: DocumentFields<T>): string | null {
  for (const line of f.objectsIn(order, 'lines')) {
    if (hasAny(f, line, F.orderLine2023)) return API_2023;
    if (hasAny(f, line, F.orderLine2024)) return API_2024;
  }
  for (const fulfillment of f.objectsIn(order, 'fulfillments')) {
    const shape = fulfillmentShapeOf(fulfillment, f);
    if (shape) return shape;
  }
  if (hasAny(f, order, F.order2024)) return API_2024;
  return null;
}

/** The order shape a parsed document shows by its own fields, or null when it shows none (2.2). */
export const detectOrderShape = (order: Record<string, unknown>): string | null =>
  orderShapeOf(order, parsed);

/** A fulfillment's shape by its own fields: the 2023-02-10 summary or the 2024-04-01 record (2.2, 2.5). */
function fulfillmentShapeOf<T>(fulfillment: T, f: DocumentFields<T>): string | null {
  if (hasAny(f, fulfillment, F.fulfillment2023)) return API_2023;
  if (hasAny(f, fulfillment, F.fulfillment2024)) return API_2024;
  return null;
}

/**
 * Whether a document is an order by the first rules of detectEntity, which decide before any other kind is
 * considered: not a move result, and a string `number` with one of an order's fields. False leaves the
 * document to the whole of detectDocument (it may still be refused as an order, see detectEntity).
 */
export function isPlainOrder<T>(doc: T, f: DocumentFields<T>): boolean {
  return !isMove(doc, f) && f.isString(doc, 'number') && hasAny(f, doc, F.order);
}

const isMove = <T>(doc: T, f: DocumentFields<T>): boolean => F.move.every((key) => f.has(doc, key));

/** An envelope `{api_version, data}`: its data is the document, and its version is trusted. */
export const isEnvelope = <T>(doc: T, f: DocumentFields<T>): boolean =>
  f.has(doc, 'data') && f.isString(doc, 'api_version');

/** What kind of resource a bare document is, by the fields only that resource has. */
export function detectEntity(doc: Record<string, unknown>): EntityKind | 'fulfillment_order_move' | null {
  const has = (...keys: string[]) => hasAny(parsed, doc, keys);
  if (isMove(doc, parsed)) return 'fulfillment_order_move';
  if (isPlainOrder(doc, parsed)) return 'order';
  if (has('fulfillment') && has('happened_at', 'estimated_delivery_at', 'order')) return 'fulfillment_event';
  if (
    has('assigned_location', 'request_status', 'fulfillment_holds', 'merchant_requests', 'supported_actions')
  )
    return 'fulfillment_order';
  if (has('tracking_code', 'tracking_carrier', 'origin_address', 'delivery_status', 'last_event_date'))
    return 'fulfillment';
  if (has('checkout_url', 'abandoned')) return 'cart';
  if (has('comments', 'requester', 'ticket_type', 'subject')) return 'ticket';
  // Nothing else matched, yet it has an order's fields: an order whose number is missing or not a string.
  // Taken as an order, it is refused naming the field ("number: missing, expected a string"), not as an
  // unrecognised document.
  if (typeof doc.number !== 'string' && has('number', ...F.order)) return 'order';
  return null;
}

export function detectDocument(value: unknown, insideArray = false): Detection {
  let doc = value;
  let envelopeVersion: string | null = null;
  if (isObject(doc) && isEnvelope(doc, parsed)) {
    envelopeVersion = doc.api_version as string;
    // A version this tool has no mapping for would be stored as if it were one it has: refuse it instead.
    if (envelopeVersion !== API_2023 && envelopeVersion !== API_2024)
      return refused(
        `api_version: "${envelopeVersion}" is not an API version store-sync reads; expected ${API_2023} or ${API_2024}`,
      );
    doc = doc.data;
  }
  if (Array.isArray(doc)) {
    // One level of array only: an array's items are documents or envelopes, so nesting cannot recurse deep.
    if (insideArray) return refused('expected a document or an envelope, not an array inside an array');
    const all = found();
    for (const [i, item] of doc.entries()) {
      const inner = detectDocument(
        envelopeVersion ? { api_version: envelopeVersion, data: item } : item,
        true,
      );
      const at = `${envelopeVersion ? 'data' : ''}[${i}]`;
      // The inner records are new objects: they are told where they are, not copied.
      for (const record of inner.records) {
        record.at = record.at ? `${at}.${record.at}` : at;
        all.records.push(record);
      }
      for (const error of inner.errors) all.errors.push(`${at}: ${error}`);
    }
    return all;
  }
  if (!isObject(doc))
    return refused('expected a JSON object (a document or an envelope {api_version, data})');
  const entity = detectEntity(doc);
  if (entity === null)
    return refused(
      'unrecognised document: expected an order, fulfillment, fulfillment event, cart, fulfillment order, ' +
        'fulfillment-order move result or ticket (see docs/ingest.md for the detection rules)',
    );
  if (entity === 'fulfillment_order_move') {
    const moved = doc.moved_fulfillment_order;
    const original = doc.original_fulfillment_order;
    if (!isObject(moved) || !isObject(original))
      return refused('move result: both fulfillment orders must be objects');
    const fulfillmentOrder = (record: Record<string, unknown>, at: string): DetectedRecord => ({
      entity: 'fulfillment_order',
      apiVersion: envelopeVersion ?? API_2024,
      record,
      at,
    });
    return found(
      fulfillmentOrder(original, 'original_fulfillment_order'),
      fulfillmentOrder(moved, 'moved_fulfillment_order'),
    );
  }
  // A fulfillment records the shape it has, whatever the envelope says (fulfillments.api_version): a
  // capture that labels everything with the version it called with must not make a 2024 record look 2023.
  if (entity === 'fulfillment')
    return found({
      entity,
      apiVersion: fulfillmentShapeOf(doc, parsed) ?? envelopeVersion ?? API_2024,
      record: doc,
    });
  if (entity !== 'order') return found({ entity, apiVersion: envelopeVersion ?? API_2024, record: doc });
  const ownShape = detectOrderShape(doc);
  // A mislabelled capture would be mapped with the other shape's columns and lose the fields that differ.
  if (envelopeVersion !== null && ownShape !== null && ownShape !== envelopeVersion)
    return refused(
      `api_version: the envelope says ${envelopeVersion}, but the order has the ${ownShape} shape (see docs/ingest.md for the shape rules)`,
    );
  return found({ entity, apiVersion: envelopeVersion ?? ownShape, record: doc });
}
