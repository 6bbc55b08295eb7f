import type { EntityKind } from '../contracts.js';
import { API_2023, API_2024 } from '../model/index.js';
import { toTimestamp } from './values.js';

/**
 * Document detection for `store-sync ingest` (rules in docs/ingest.md): what a JSON document is, which order
 * shape it has, and which records it holds. Containers are unwrapped first: a list page `{next, previous,
 * results}`, a webhook envelope `{object, data, event_id, event_type, webhook, api_version}`, an event envelope
 * `{event_version, event_type, timestamp, context, data}` and `{api_version, data}`. A bare document carries
 * no type tag, so the rules look for fields only one resource has; an envelope's `object` (or its event
 * type's resource) names the resource instead.
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
  /** What the envelope it came in said of it; absent for a bare document (a list page is no envelope). */
  envelope?: EnvelopeMeta;
}

/**
 * What an envelope says of the documents in its `data`, kept with the rows they make (`_event_id`,
 * `_event_type`, `_event_at`, `_api_version_label`, `_envelope`: src/model/tables/index.ts). Each is null when
 * the envelope does not carry it; a value that is not a string is kept as its JSON text, but `eventAt`, which
 * is left as given for its column to read as a date-time (or refuse, naming it).
 */
export interface EnvelopeMeta {
  eventId: string | null;
  eventType: string | null;
  eventAt: unknown;
  /** `api_version` as given, known or not. */
  label: string | null;
  /**
   * Every other field of the envelope, in its order (`object`, `webhook`, `event_version`, `context`, what a
   * proxy added …), and any of the four above that its column cannot hold as sent (a `timestamp` that is not
   * a date-time, an `event_id` that is a number): nothing an envelope carries is dropped. Null when none.
   */
  rest: Record<string, unknown> | null;
}

/**
 * The records a document holds, and why any part of it was refused: a whole document, or the items of an
 * array one by one (an item that is not a document does not take the documents beside it down with it).
 */
export interface Detection {
  records: DetectedRecord[];
  errors: string[];
  /**
   * Documents inside a webhook or event envelope that have no table (a customer, a dispute …) or that no
   * rule recognises: one entry per envelope, its `object ?? event_type ?? 'unknown'`. Not rejections.
   */
  skipped: string[];
  /** Records read under a version label store-sync does not know: the label, and the shape they were read as. */
  labels: UnknownLabel[];
}

export interface UnknownLabel {
  label: string;
  readAs: string;
}

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

/**
 * The fields that make a bare document a subscription, a product, a metadata definition or a location
 * (spec 2.1, 2.7–2.9; docs/ingest.md): any one of them, once the rules before (orders first) have not
 * claimed the document. No order, cart, fulfillment, fulfillment order, fulfillment event or ticket has
 * any of them at its top level, and none of the four has another's.
 */
const BARE_RESOURCE_FIELDS = {
  subscription: [
    'next_renewal_date',
    'frequency',
    'num_orders',
    'num_lines',
    'cancel_reason',
    'cancel_reason_other_message',
    'is_tax_known',
  ],
  /** `children` holds the variants of a 2023-02-10 product. */
  product: [
    'variants',
    'children',
    'variant_attributes',
    'recommended_products',
    'structure',
    'enable_subscription',
    'is_discountable',
    'interval_counts',
  ],
  metadataDefinition: ['enable_export', 'enable_filter', 'validations'],
  location: ['accept_return', 'callback_url'],
} as const;

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
  // The resources below carry `lines` (a subscription) or nothing of an order at all, but came after the
  // order fallback's fields were chosen: each is claimed by fields no order, and no kind above, has.
  if (has(...BARE_RESOURCE_FIELDS.subscription)) return 'subscription';
  if (has(...BARE_RESOURCE_FIELDS.product)) return 'product';
  if (has(...BARE_RESOURCE_FIELDS.metadataDefinition)) return 'metadata_definition';
  if (has(...BARE_RESOURCE_FIELDS.location)) return 'location';
  // A 2023-02-10 cart has neither `checkout_url` nor `abandoned`: its `date_created` (an order has
  // `created_at`) with `lines`, and no `number`, tell it apart.
  if (has('date_created') && has('lines') && !has('number')) return 'cart';
  // Nothing else matched, yet it has an order's fields: an order whose number is missing or not a string.
  // Taken as an order, it is refused naming the field ("number: missing, expected a string"), not as an
  // unrecognised document.
  if (typeof doc.number !== 'string' && has('number', ...F.order)) return 'order';
  return null;
}

/**
 * Resource names an envelope's `object` (or the part of its `event_type` before the dot) may give, with the
 * entity whose table they fill. Any other name has no table of its own here (a customer, a dispute, a
 * gateway, a transaction, a store, an app, an export …). Refunds and variants have tables, but only as
 * children of their order or product, with which they are replaced: alone they are skipped too.
 */
const RESOURCE_ENTITIES: Readonly<Record<string, EntityKind>> = {
  order: 'order',
  fulfillment: 'fulfillment',
  fulfillment_event: 'fulfillment_event',
  fulfillment_order: 'fulfillment_order',
  cart: 'cart',
  ticket: 'ticket',
  support_ticket: 'ticket',
  product: 'product',
  subscription: 'subscription',
  location: 'location',
  metadata: 'metadata_definition',
  metadata_definition: 'metadata_definition',
};

const resourceEntity = (name: string): EntityKind | null =>
  Object.hasOwn(RESOURCE_ENTITIES, name) ? RESOURCE_ENTITIES[name]! : null;

/**
 * What an envelope's `object` and `event_type` (each null unless a string) say its data is: the entity
 * `object` names, else the one named by the event type's part before the dot; `untabled` when `object`
 * names something with no table; null when neither names a resource (the bare rules decide). Shared with
 * the fast path (fast.ts), which reads only envelopes that this sends to the orders or leaves to the rules.
 */
export function envelopeEntity(
  object: string | null,
  eventType: string | null,
): EntityKind | 'untabled' | null {
  if (object !== null) return resourceEntity(object) ?? 'untabled';
  return eventType === null ? null : resourceEntity(eventType.split('.', 1)[0]!);
}

/**
 * The shape a cart or a product shows by its own fields, or null: a 2023-02-10 cart has `date_created` (a
 * 2024-04-01 one `created_at`) and lines carrying `product` or `stockrecord` objects; a 2023-02-10 product
 * puts its variants under `children`. Both shapes map to the same columns; the shape only says how a
 * document under an unknown version label was read.
 */
function resourceShapeOf(entity: EntityKind, doc: Record<string, unknown>): string | null {
  if (entity === 'product') return doc.children !== undefined ? API_2023 : null;
  if (entity !== 'cart') return null;
  if (doc.date_created !== undefined) return API_2023;
  const lines = parsed.objectsIn(doc, 'lines');
  return lines.some((line) => line.product !== undefined || line.stockrecord !== undefined) ? API_2023 : null;
}

/** The versions store-sync maps; any other label is read with the document's own shape. */
const KNOWN_VERSIONS: readonly string[] = [API_2023, API_2024];

/** What an envelope says about the document(s) in its `data`. */
interface Envelope {
  /** A webhook or event envelope: what it holds may be skipped (no table, not recognised), not rejected. */
  event: boolean;
  /** The version label, as text; null when the envelope gives none. */
  label: string | null;
  /** The entity its `object` or event type names, when that is a resource with a table. */
  entity: EntityKind | null;
  /** What a skipped document is counted under: `object ?? event_type ?? 'unknown'`. */
  skipAs: string;
  /** `object` names something with no table: the envelope is skipped whatever its data. */
  untabled: boolean;
  /** Kept with the records of its data. */
  meta: EnvelopeMeta;
}

/**
 * `{next, previous, results}` (a `count` is allowed): a captured page of a list operation. An order by the
 * first rules (isPlainOrder) stays an order whatever else it carries, as the fast path reads it.
 */
const isListPage = (doc: Record<string, unknown>): boolean =>
  Array.isArray(doc.results) &&
  (doc.next !== undefined || doc.previous !== undefined) &&
  !isPlainOrder(doc, parsed);

/** The envelope a document is, or null for a bare document (docs/ingest.md, "Envelopes and containers"). */
function envelopeOf(doc: Record<string, unknown>): Envelope | null {
  const object = typeof doc.object === 'string' ? doc.object : null;
  const eventType = typeof doc.event_type === 'string' ? doc.event_type : null;
  const hasData = doc.data !== undefined;
  const webhook =
    hasData &&
    (doc.event_id !== undefined ||
      doc.event_type !== undefined ||
      doc.webhook !== undefined ||
      object !== null);
  const event =
    doc.event_version !== undefined ||
    (doc.event_type !== undefined && (doc.timestamp !== undefined || doc.context !== undefined));
  // `{api_version, data}`, the version of any type (a label that is not a string is an unknown label).
  const plain = hasData && doc.api_version !== undefined && doc.api_version !== null;
  if (!webhook && !event && !plain) return null;
  const label = textOf(doc.api_version);
  const named = envelopeEntity(object, eventType);
  return {
    event: webhook || event,
    label,
    entity: named === 'untabled' ? null : named,
    skipAs: object ?? eventType ?? 'unknown',
    untabled: named === 'untabled',
    meta: {
      eventId: textOf(doc.event_id),
      eventType: textOf(doc.event_type),
      eventAt: doc.timestamp ?? null,
      label,
      rest: restOf(doc),
    },
  };
}

/**
 * A list page's own fields (`count`, `next`, `previous`, any other) go with each record it held, in
 * `_envelope` under `list_page`: they are what the store sent too.
 */
function keepPageFields(page: Record<string, unknown>, records: readonly DetectedRecord[]): void {
  const fields = ownFields(page, 'results');
  if (fields === null) return;
  for (const record of records) {
    const meta = record.envelope ?? {
      eventId: null,
      eventType: null,
      eventAt: null,
      label: null,
      rest: null,
    };
    record.envelope = { ...meta, rest: { ...meta.rest, list_page: fields } };
  }
}

/** The envelope fields whose columns keep them as sent when they are strings (`_event_id` …). */
const TEXT_FIELDS: ReadonlySet<string> = new Set(['event_id', 'event_type', 'api_version']);

/** EnvelopeMeta.rest: what of the envelope no `_event_*` column keeps as sent. */
function restOf(doc: Record<string, unknown>): Record<string, unknown> | null {
  let rest: Record<string, unknown> | null = null;
  for (const key of Object.keys(doc)) {
    if (key === 'data') continue;
    const value = doc[key];
    if (TEXT_FIELDS.has(key) && (value === null || typeof value === 'string')) continue;
    if (key === 'timestamp' && (value === null || isDateTime(value))) continue;
    // Without a prototype, a field named `__proto__` is assigned as a field like any other.
    rest ??= Object.create(null) as Record<string, unknown>;
    rest[key] = value;
  }
  return rest;
}

/** Every field of `doc` but `held`; null when there is none. */
function ownFields(doc: Record<string, unknown>, held: string): Record<string, unknown> | null {
  let fields: Record<string, unknown> | null = null;
  for (const key of Object.keys(doc)) {
    if (key === held) continue;
    fields ??= Object.create(null) as Record<string, unknown>;
    fields[key] = doc[key];
  }
  return fields;
}

function isDateTime(value: unknown): boolean {
  try {
    toTimestamp(value);
    return true;
  } catch {
    return false;
  }
}

/** An envelope field as text: null when missing or null, a string as it is, anything else as its JSON. */
const textOf = (value: unknown): string | null =>
  value === undefined || value === null ? null : typeof value === 'string' ? value : JSON.stringify(value);

const join = (at: string, next: string): string => (at ? `${at}.${next}` : next);

function refuse(out: Detection, at: string, error: string): void {
  out.errors.push(at ? `${at}: ${error}` : error);
}

function add(out: Detection, at: string, record: DetectedRecord): void {
  const where = record.at ? join(at, record.at) : at;
  if (where) record.at = where;
  out.records.push(record);
}

const NOT_AN_OBJECT = 'expected a JSON object (a document or an envelope {api_version, data})';
const ARRAY_IN_ARRAY = 'expected a document or an envelope, not an array inside an array';
const PAGE_IN_PAGE =
  'a list page inside a list page: expected the documents of one page in results, each a document or an envelope';

/** Where a value is met: an item of an array (arrays do not nest), inside a list page (pages do not nest). */
interface Place {
  inArray: boolean;
  inPage: boolean;
}

/**
 * The records a JSON value holds, detected by the rules in docs/ingest.md: a document, an envelope, a list
 * page, or an array of them (one level of array, one level of page, one envelope: the nesting is bounded,
 * whatever the input).
 */
export function detectDocument(value: unknown, insideArray = false): Detection {
  const out: Detection = { records: [], errors: [], skipped: [], labels: [] };
  detectValue(value, '', { inArray: insideArray, inPage: false }, out);
  return out;
}

function detectValue(value: unknown, at: string, place: Place, out: Detection): void {
  if (Array.isArray(value)) {
    if (place.inArray) {
      refuse(out, at, ARRAY_IN_ARRAY);
      return;
    }
    for (const [i, item] of value.entries())
      detectValue(item, `${at}[${i}]`, { inArray: true, inPage: place.inPage }, out);
    return;
  }
  if (!isObject(value)) {
    refuse(out, at, NOT_AN_OBJECT);
    return;
  }
  // An order by the first rules is an order, whatever event fields it carries, unless it is an envelope
  // `{api_version, data}`: the fast path (fast.ts) decides the same from the same rules.
  if (isPlainOrder(value, parsed) && !isEnvelope(value, parsed)) {
    detectBare(value, at, null, out);
    return;
  }
  const envelope = isEnvelope(value, parsed) ? envelopeOf(value) : null;
  if (envelope === null && isListPage(value)) {
    if (place.inPage) {
      refuse(out, at, PAGE_IN_PAGE);
      return;
    }
    // The page's `next` is not followed: a capture holds what it holds.
    const first = out.records.length;
    for (const [i, item] of (value.results as unknown[]).entries())
      detectValue(item, join(at, `results[${i}]`), { inArray: true, inPage: true }, out);
    keepPageFields(value, out.records.slice(first));
    return;
  }
  const enveloped = envelope ?? envelopeOf(value);
  if (enveloped === null) {
    detectBare(value, at, null, out);
    return;
  }
  if (enveloped.event && (enveloped.untabled || value.data === undefined || value.data === null)) {
    out.skipped.push(enveloped.skipAs);
    return;
  }
  detectData(value.data, at, place, enveloped, out);
}

/** An envelope's `data`: a document, an array of documents, or a list page of them. */
function detectData(data: unknown, at: string, place: Place, envelope: Envelope, out: Detection): void {
  if (Array.isArray(data)) {
    if (place.inArray) {
      refuse(out, at, ARRAY_IN_ARRAY);
      return;
    }
    for (const [i, item] of data.entries()) {
      const where = join(at, `data[${i}]`);
      if (!isObject(item)) refuse(out, where, Array.isArray(item) ? ARRAY_IN_ARRAY : NOT_AN_OBJECT);
      else detectBare(item, where, envelope, out);
    }
    return;
  }
  if (!isObject(data)) {
    refuse(out, at, NOT_AN_OBJECT);
    return;
  }
  if (isListPage(data)) {
    if (place.inPage) {
      refuse(out, at, PAGE_IN_PAGE);
      return;
    }
    const first = out.records.length;
    for (const [i, item] of (data.results as unknown[]).entries()) {
      const where = join(at, `data.results[${i}]`);
      if (!isObject(item)) refuse(out, where, NOT_AN_OBJECT);
      else detectBare(item, where, envelope, out);
    }
    keepPageFields(data, out.records.slice(first));
    return;
  }
  detectBare(data, at, envelope, out);
}

/** One document, bare or from an envelope's data, with what the envelope says of it. */
function detectBare(
  doc: Record<string, unknown>,
  at: string,
  envelope: Envelope | null,
  out: Detection,
): void {
  const found = detectEntity(doc);
  const entity =
    found === 'fulfillment_order_move' && (envelope?.entity ?? 'fulfillment_order') === 'fulfillment_order'
      ? found
      : (envelope?.entity ?? found);
  if (entity === null) {
    if (envelope?.event) {
      out.skipped.push(envelope.skipAs);
      return;
    }
    refuse(
      out,
      at,
      'unrecognised document: expected an order, fulfillment, fulfillment event, cart, fulfillment order, ' +
        'fulfillment-order move result, ticket, subscription, product, metadata definition or location ' +
        '(see docs/ingest.md for the detection rules)',
    );
    return;
  }
  const label = envelope?.label ?? null;
  // A known label is trusted (and checked against an order's shape); an unknown one (`unstable`, a newer
  // date) says nothing the tool can map: the document is read with the shape it shows, else the newest.
  const known = label !== null && KNOWN_VERSIONS.includes(label) ? label : null;
  const unknown = label !== null && known === null ? label : null;
  const record = (r: DetectedRecord) => {
    if (envelope !== null) r.envelope = envelope.meta;
    if (unknown !== null) out.labels.push({ label: unknown, readAs: r.apiVersion ?? API_2024 });
    add(out, at, r);
  };
  if (entity === 'fulfillment_order_move') {
    const moved = doc.moved_fulfillment_order;
    const original = doc.original_fulfillment_order;
    if (!isObject(moved) || !isObject(original)) {
      refuse(out, at, 'move result: both fulfillment orders must be objects');
      return;
    }
    const fulfillmentOrder = (r: Record<string, unknown>, where: string): DetectedRecord => ({
      entity: 'fulfillment_order',
      apiVersion: known ?? API_2024,
      record: r,
      at: where,
    });
    record(fulfillmentOrder(original, 'original_fulfillment_order'));
    record(fulfillmentOrder(moved, 'moved_fulfillment_order'));
    return;
  }
  // A fulfillment records the shape it has, whatever the envelope says (fulfillments.api_version): a
  // capture that labels everything with the version it called with must not make a 2024 record look 2023.
  if (entity === 'fulfillment') {
    record({
      entity,
      apiVersion: fulfillmentShapeOf(doc, parsed) ?? known ?? API_2024,
      record: doc,
    });
    return;
  }
  if (entity !== 'order') {
    record({ entity, apiVersion: known ?? resourceShapeOf(entity, doc) ?? API_2024, record: doc });
    return;
  }
  const ownShape = detectOrderShape(doc);
  // A mislabelled capture would be mapped with the other shape's columns and lose the fields that differ.
  if (known !== null && ownShape !== null && ownShape !== known) {
    refuse(
      out,
      at,
      `api_version: the envelope says ${known}, but the order has the ${ownShape} shape (see docs/ingest.md for the shape rules)`,
    );
    return;
  }
  record({ entity, apiVersion: known ?? ownShape ?? (unknown !== null ? API_2024 : null), record: doc });
}
