import { isUtf8 } from 'node:buffer';
import type { EntityKind } from '../contracts.js';
import {
  API_2023,
  API_2024,
  type ColumnDef,
  type PlanNode,
  plans,
  sourceFor,
  tableDef,
} from '../model/index.js';
import { AFTER_ROW_TOKENS, ENVELOPE_TOKENS } from './compile.js';
import { applyDerived, type DerivedColumn, derivedColumns } from './derive.js';
import { DETECTION_FIELDS, type DocumentFields, isEnvelope, isPlainOrder, orderShapeOf } from './detect.js';
import { type KnownTree, knownTree, trackedFields } from './known.js';
import type { TableRows } from './rows.js';
import {
  ABSENT,
  ARRAY,
  DocumentScan,
  ESCAPED,
  FALSE,
  NON_ASCII,
  NULL,
  NUMBER,
  OBJECT,
  Position,
  SHORT_INTEGER,
  STRING,
  TRUE,
} from './scan.js';
import {
  type Converted,
  commonTimestampFromBytes,
  converterFor,
  decimalFromBytes,
  type Int64,
  toBigint,
  toDecimal,
  toDouble,
  toJsonText,
  toTimestamp,
  ValueError,
} from './values.js';

/**
 * The fast path of document ingest: an order document read from its bytes (scan.ts) straight into rows,
 * without JSON.parse and without a JavaScript object per value. JSON.parse alone costs as much as the
 * benchmark's whole bound (read + parse), and the objects it makes are half of the normalizer's garbage.
 *
 * It is an optimisation only, held to one rule: for every document it accepts, the rows are exactly those
 * the object path (normalizer.ts) writes for JSON.parse of the same text, `_unit` numbers included, and it
 * accepts a document only if the object path would load it whole, with no rejection. Anything else it gives
 * up on, writing nothing, and the object path does all the work, including every refusal and its message:
 * a value of the wrong type, money that does not fit, a missing key, a document that is not an order, an
 * envelope whose version disagrees. So is a document carrying a field the model does not map (ObjectCheck):
 * the object path keeps it in the row's `_extra`, and names it in `_schema_changes`, which this path never
 * writes. `test/warehouse/fast-path.test.ts` compares the two paths on many documents, bad ones included.
 *
 * The rows are written by generated code, one writer per table and order shape, from the same registry and
 * plans as the object path: each source path becomes a chain of slot reads.
 */

/** Thrown by a writer to give the document up (what it wrote is taken back). */
const GIVE_UP = Symbol('give up on the fast path');
const giveUp = (): never => {
  throw GIVE_UP;
};

/** Where a source path starts: the row's item, its parent item, its unit's item, or the document. */
type Base = 'item' | 'parent' | 'unit' | 'doc';

interface FastNode {
  rows: TableRows;
  unit: boolean;
  optionalKey: boolean;
  keyIndex: number;
  /** Column indexes that must be filled, else the object path refuses the document. */
  keys: number[];
  write: FastWriter;
  /** Columns computed from the row once it is written (derive.ts, as the object path does). */
  derived: DerivedColumn[];
  /** For a unit: its tracked fields (known.ts) and their slots, for `_absent_fields` (as the object path writes it). */
  absent: {
    column: number;
    names: readonly string[];
    fields: readonly (readonly number[])[];
    /** Scratch: the indexes (in `names`) of the fields the row at hand lacks. */
    absentNow: Int32Array;
    /** The indexes the last row written lacked, and its text's bytes. */
    last: Int32Array;
    lastCount: number;
    bytes: Uint8Array;
  } | null;
  children: { field: number; single: boolean; node: FastNode }[];
  /** What the model does not map in this node's items, for this shape (see ObjectCheck); set once all Positions are placed. */
  check: ObjectCheck;
}

/**
 * How to tell, from the slots of an object read at a Position, that it carries a field the model does not
 * map there (known.ts `knownTree`), which the object path keeps in the row's `_extra`: any name the
 * Position did not want (`DocumentScan.unknown`), any `foreign` slot present (wanted at this Position for
 * detection, another shape or another node, but not known here), and the same inside each object field whose
 * inner fields columns read (`trees`; `check` null when the scanner reads no slots there). Fields known whole
 * (a JSON column such as `metadata`) are not looked into: any name inside them is the model's.
 */
interface ObjectCheck {
  foreign: Int32Array;
  trees: { field: number; check: ObjectCheck | null }[];
}

const NO_CHECK: ObjectCheck = { foreign: new Int32Array(0), trees: [] };

type FastWriter = (
  item: number,
  parent: number,
  unit: number,
  doc: number,
  index: number,
  row: number,
) => void;

/** The shapes an order document can be read as: those detection tells, or none (null). */
const SHAPES = [API_2023, API_2024, null] as const;

const TWO_53 = 2 ** 53;
/** 10^0 … 10^22: every one an exact double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, n) => 10 ** n);

export interface FastResult {
  entity: EntityKind;
  apiVersion: string | null;
}

/**
 * One normalizer's fast path: its own scan buffers and writers over the normalizer's tables. `units` is the
 * normalizer's unit counter, read and written through the accessors so both paths number units alike.
 */
export class FastPath {
  private readonly scan = new DocumentScan();
  private readonly root: Position;
  /** Per shape, the writers of a bare order, and of one in an envelope `{api_version, data}` (its label). */
  private readonly roots = new Map<string | null, FastNode>();
  private readonly labelled = new Map<string | null, FastNode>();
  private readonly touched: TableRows[];
  private readonly marks: number[];
  private readonly fields: DocumentFields<Item>;
  private readonly apiVersion: number;
  private readonly data: number;

  constructor(
    tables: Map<string, TableRows>,
    private readonly units: { get(): number; set(units: number): void },
  ) {
    this.root = new Position('order');
    const plan = plans.order;
    // Positions first (the readers' fields), for every shape, then the writers that read them.
    const positions = new Map<PlanNode, Position>();
    const place = (node: PlanNode, at: Position) => {
      positions.set(node, at);
      for (const child of node.children ?? [])
        place(child, child.single ? at.objectAt(child.field!) : at.elementsAt(child.field!));
    };
    place(plan, this.root);
    const compiler = new WriterCompiler(this.scan, positions, plan);
    for (const shape of SHAPES) {
      this.roots.set(shape, compiler.node(plan, null, tables, shape, null));
      // An envelope's label is a version it knows, which is then the shape the order is read with.
      if (shape !== null) this.labelled.set(shape, compiler.node(plan, null, tables, shape, shape));
    }
    this.touched = [...new Set(compiler.tables)];
    this.marks = this.touched.map(() => 0);
    // What detection reads (detect.ts): an envelope's data is read as the document itself.
    for (const key of [...DETECTION_FIELDS.move, ...DETECTION_FIELDS.order, 'number', 'fulfillments'])
      this.root.field(key);
    for (const key of DETECTION_FIELDS.order2024) this.root.field(key);
    const lines = this.root.elementsAt('lines');
    for (const key of [...DETECTION_FIELDS.orderLine2023, ...DETECTION_FIELDS.orderLine2024])
      lines.field(key);
    const fulfillments = this.root.elementsAt('fulfillments');
    for (const key of [...DETECTION_FIELDS.fulfillment2023, ...DETECTION_FIELDS.fulfillment2024])
      fulfillments.field(key);
    this.apiVersion = this.root.field('api_version');
    this.data = this.root.field('data');
    this.root.objectAt('data', this.root);
    this.fields = slotFields(this.scan);
    // Every wanted name is placed now: what is foreign at each Position is known.
    compiler.placeChecks();
  }

  /**
   * Rows of the document in `bytes` when it is an order the object path would load whole; null (and
   * nothing written) otherwise.
   */
  normalize(bytes: Uint8Array): FastResult | null {
    const scan = this.scan;
    const base = scan.read(bytes, this.root);
    if (base < 0) return null;
    let doc: Item = { base, at: this.root };
    let envelope: string | null = null;
    if (isEnvelope(doc, this.fields)) {
      envelope = textOf(scan, base + this.apiVersion);
      if (envelope !== API_2023 && envelope !== API_2024) return null;
      // Only `{api_version, data}`: anything more (an event's id, type or time, `object`, a proxy's field) is
      // for the object path, which keeps it in the unit rows' `_event_*` and `_envelope` columns; the writers
      // here write only the label (`_api_version_label`).
      if (scan.unknown[base] !== 0) return null;
      const kinds = scan.kinds;
      for (let field = this.root.size - 1; field >= 0; field--)
        if (field !== this.apiVersion && field !== this.data && kinds[base + field] !== ABSENT) return null;
      if (kinds[base + this.data] !== OBJECT) return null;
      doc = { base: scan.aux[base + this.data]!, at: this.root };
    }
    if (!isPlainOrder(doc, this.fields)) return null;
    const own = orderShapeOf(doc, this.fields);
    if (envelope !== null && own !== null && own !== envelope) return null;
    const apiVersion = envelope ?? own;
    const touched = this.touched;
    for (let t = 0; t < touched.length; t++) this.marks[t] = touched[t]!.length;
    const units = this.units.get();
    try {
      const root = envelope === null ? this.roots.get(apiVersion)! : this.labelled.get(apiVersion)!;
      this.emit(root, doc.base, -1, doc.base, doc.base, 0, 0);
    } catch (error) {
      for (let t = 0; t < touched.length; t++) touched[t]!.truncate(this.marks[t]!);
      this.units.set(units);
      if (error === GIVE_UP) return null;
      throw error;
    }
    return { entity: 'order', apiVersion };
  }

  /** `_absent_fields` of a unit row: the same text as absentFields (known.ts) makes from the parsed item. */
  private writeAbsent(
    absent: NonNullable<FastNode['absent']>,
    item: number,
    rows: TableRows,
    row: number,
  ): void {
    const kinds = this.scan.kinds;
    const absentNow = absent.absentNow;
    let count = 0;
    let same = true;
    for (let i = 0; i < absent.fields.length; i++) {
      const fields = absent.fields[i]!;
      let carried = false;
      for (let f = 0; f < fields.length; f++) if (kinds[item + fields[f]!] !== ABSENT) carried = true;
      if (carried) continue;
      if (count >= absent.lastCount || absent.last[count] !== i) same = false;
      absentNow[count++] = i;
    }
    if (count === 0) return;
    // Documents from one producer lack the same fields time after time: the text is made again only when
    // they lack others than the row before, and each row copies its bytes (no string per row).
    if (!same || count !== absent.lastCount) {
      let text = absent.names[absentNow[0]!]!;
      for (let k = 1; k < count; k++) text = `${text},${absent.names[absentNow[k]!]!}`;
      absent.bytes = Buffer.from(text, 'utf8');
      absent.last.set(absentNow.subarray(0, count));
      absent.lastCount = count;
    }
    rows.setTextBytes(absent.column, row, absent.bytes, 0, absent.bytes.length);
  }

  /** Gives the document up when the object at `base` carries a field the model does not map (see ObjectCheck). */
  private check(check: ObjectCheck, base: number): void {
    const scan = this.scan;
    if (scan.unknown[base] !== 0) throw GIVE_UP;
    const kinds = scan.kinds;
    const foreign = check.foreign;
    for (let i = 0; i < foreign.length; i++) if (kinds[base + foreign[i]!] !== ABSENT) throw GIVE_UP;
    const trees = check.trees;
    for (let i = 0; i < trees.length; i++) {
      const tree = trees[i]!;
      const slot = base + tree.field;
      const kind = kinds[slot]!;
      if (kind <= NULL) continue;
      // Anything but an object where columns read inside one: the object path decides what it is.
      if (kind !== OBJECT || tree.check === null) throw GIVE_UP;
      this.check(tree.check, scan.aux[slot]!);
    }
  }

  /** Normalizer.walk over slots: the same rows, in the same order, with the same unit numbers. */
  private emit(
    c: FastNode,
    item: number,
    parent: number,
    unitItem: number,
    doc: number,
    index: number,
    unit: number,
  ): void {
    if (c.unit) {
      unit = this.units.get() + 1;
      this.units.set(unit);
      unitItem = item;
    }
    const rows = c.rows;
    const row = rows.addRow();
    rows.setInt64(0, row, unit);
    c.write(item, parent, unitItem, doc, index, row);
    // Before a skipped optional key too: the object path keeps a skipped user's unknown fields in its parent's `_extra`.
    this.check(c.check, item);
    if (c.derived.length) applyDerived(rows, row, c.derived);
    if (c.absent !== null) this.writeAbsent(c.absent, item, rows, row);
    if (c.optionalKey && !rows.valid[c.keyIndex]![row]) {
      rows.truncate(row);
      this.units.set(this.units.get() - 1);
      return;
    }
    for (const key of c.keys) if (!rows.valid[key]![row]) throw GIVE_UP;
    const scan = this.scan;
    for (const child of c.children) {
      const slot = item + child.field;
      const kind = scan.kinds[slot]!;
      if (kind <= NULL) continue;
      if (child.single) {
        if (kind !== OBJECT) throw GIVE_UP;
        this.emit(child.node, scan.aux[slot]!, item, unitItem, doc, 0, unit);
        continue;
      }
      if (kind !== ARRAY) throw GIVE_UP;
      let i = 0;
      for (let element = scan.aux[slot]!; element >= 0; element = scan.next[element]!, i++)
        this.emit(child.node, element, item, unitItem, doc, i, unit);
    }
  }
}

/** An object of the document: the base of its slots and the Position it was read at. */
interface Item {
  base: number;
  at: Position;
}

/** detect.ts's questions, answered from slots. */
function slotFields(scan: DocumentScan): DocumentFields<Item> {
  const slot = (item: Item, key: string): number => {
    const field = item.at.has(key);
    if (field < 0)
      throw new Error(`detection reads ${key}, which the fast path does not read at ${item.at.label}`);
    return item.base + field;
  };
  return {
    has: (item, key) => scan.kinds[slot(item, key)] !== ABSENT,
    isString: (item, key) => scan.kinds[slot(item, key)] === STRING,
    objectsIn: (item, key) => {
      const at = slot(item, key);
      const position = item.at.elements[item.at.has(key)];
      // Items of a wanted array are all objects (the reader gives up otherwise).
      if (scan.kinds[at] !== ARRAY || !position) return [];
      const out: Item[] = [];
      for (let e = scan.aux[at]!; e >= 0; e = scan.next[e]!) out.push({ base: e, at: position });
      return out;
    },
  };
}

/** A string slot's text (for the few strings read as text: the envelope's version). */
function textOf(scan: DocumentScan, slot: number): string | null {
  if (scan.kinds[slot] !== STRING) return null;
  return decode(scan, slot);
}

/** Bytes decoded exactly as the object path decoded the document's (Buffer's UTF-8, U+FFFD for bad bytes). */
const utf8Text = (b: Uint8Array, start: number, end: number): string =>
  Buffer.from(b.buffer, b.byteOffset + start, end - start).toString('utf8');

/** A string slot decoded as the object path sees it (escapes and all). */
function decode(scan: DocumentScan, slot: number): string {
  const b = scan.bytes;
  const start = scan.starts[slot]!;
  const end = scan.ends[slot]!;
  if (scan.aux[slot]! & ESCAPED) return JSON.parse(utf8Text(b, start - 1, end + 1)) as string;
  return utf8Text(b, start, end);
}

/** An ASCII range as text (numbers). */
function ascii(b: Uint8Array, start: number, end: number): string {
  let text = '';
  for (let i = start; i < end; i++) text += String.fromCharCode(b[i]!);
  return text;
}

/**
 * Value readers for the generated writers: the slot's value as the column's converter would make it from
 * JSON.parse's value, or GIVE_UP where the converter would refuse it (the object path then names why).
 */
export class SlotValues {
  constructor(private readonly scan: DocumentScan) {}

  integer(slot: number): Int64 {
    const scan = this.scan;
    if (scan.kinds[slot] !== NUMBER) return giveUp();
    const b = scan.bytes;
    const start = scan.starts[slot]!;
    const end = scan.ends[slot]!;
    if (scan.aux[slot]! & SHORT_INTEGER) {
      let i = start;
      const negative = b[i] === 45;
      if (negative) i++;
      let n = 0;
      for (; i < end; i++) n = n * 10 + (b[i]! - 48);
      return negative ? -n : n;
    }
    const value = Number(ascii(b, start, end));
    if (!Number.isInteger(value) || Math.abs(value) >= TWO_53) return giveUp();
    return toBigint(value);
  }

  /**
   * A number as JSON.parse reads it. With at most 15 digits and a power of ten up to 22 both operands are
   * exact doubles, so one multiplication or division is the correctly rounded value (Clinger's fast path),
   * which is what JSON.parse returns; anything longer is read by Number().
   */
  double(slot: number): number {
    const scan = this.scan;
    if (scan.kinds[slot] !== NUMBER) return giveUp();
    const b = scan.bytes;
    const start = scan.starts[slot]!;
    const end = scan.ends[slot]!;
    let i = start;
    const negative = b[i] === 45;
    if (negative) i++;
    let significand = 0;
    let digits = 0;
    let exponent = 0;
    for (; i < end && b[i]! >= 48 && b[i]! <= 57; i++, digits++) significand = significand * 10 + b[i]! - 48;
    if (b[i] === 46)
      for (i++; i < end && b[i]! >= 48 && b[i]! <= 57; i++, digits++, exponent--)
        significand = significand * 10 + b[i]! - 48;
    if (i < end) {
      // An exponent: e, an optional sign and digits (the reader checked the grammar).
      i++;
      const minus = b[i] === 45;
      if (b[i] === 43 || minus) i++;
      let power = 0;
      for (; i < end && power < 1000; i++) power = power * 10 + b[i]! - 48;
      exponent += minus ? -power : power;
    }
    if (digits > 15 || exponent < -22 || exponent > 22) {
      // The object path's converter decides (1e400 is Infinity, which it refuses).
      const value = Number(ascii(b, start, end));
      return Number.isFinite(value) ? toDouble(value) : giveUp();
    }
    const value =
      exponent >= 0 ? significand * POWERS_OF_TEN[exponent]! : significand / POWERS_OF_TEN[-exponent]!;
    return negative ? -value : value;
  }

  boolean(slot: number): boolean {
    const kind = this.scan.kinds[slot];
    if (kind === TRUE) return true;
    if (kind === FALSE) return false;
    return giveUp();
  }

  decimal(slot: number, precision: number, scale: number): Int64 {
    const scan = this.scan;
    if (scan.kinds[slot] !== STRING) return giveUp();
    try {
      if (scan.aux[slot]! & ESCAPED) return toDecimal(decode(scan, slot), precision, scale);
      return decimalFromBytes(scan.bytes, scan.starts[slot]!, scan.ends[slot]!, precision, scale);
    } catch (error) {
      if (error instanceof ValueError) return giveUp();
      throw error;
    }
  }

  timestamp(slot: number): Int64 {
    const scan = this.scan;
    if (scan.kinds[slot] !== STRING) return giveUp();
    try {
      if (!(scan.aux[slot]! & ESCAPED)) {
        const common = commonTimestampFromBytes(scan.bytes, scan.starts[slot]!, scan.ends[slot]!);
        if (common !== null) return common;
      }
      return toTimestamp(decode(scan, slot));
    } catch (error) {
      if (error instanceof ValueError) return giveUp();
      throw error;
    }
  }

  /** A text column: the bytes as they are when they need no decoding, else the decoded string. */
  text(rows: TableRows, column: number, row: number, slot: number): void {
    const scan = this.scan;
    if (scan.kinds[slot] !== STRING) giveUp();
    const flags = scan.aux[slot]!;
    const start = scan.starts[slot]!;
    const end = scan.ends[slot]!;
    // Bytes that are not well-formed UTF-8 are decoded (to U+FFFD), as the object path's text was.
    if (flags === 0 || (flags === NON_ASCII && isUtf8(scan.bytes.subarray(start, end))))
      rows.setTextBytes(column, row, scan.bytes, start, end);
    else rows.setText(column, row, decode(scan, slot));
  }

  /**
   * A JSON column: JSON.stringify of the value. An object or array already written the way JSON.stringify
   * writes it (see canonicalJson) is copied as it is; anything else is parsed and written again.
   */
  json(rows: TableRows, column: number, row: number, slot: number): void {
    const scan = this.scan;
    const kind = scan.kinds[slot];
    const start = scan.starts[slot]!;
    const end = scan.ends[slot]!;
    if ((kind === OBJECT || kind === ARRAY) && canonicalJson(scan.bytes, start, end)) {
      rows.setTextBytes(column, row, scan.bytes, start, end);
      return;
    }
    // Through the column's converter, which refuses a number JSON.parse would change: the object path names it.
    rows.setText(column, row, this.converted(slot, toJsonText) as string);
  }

  /** Any other column (lists): its converter applied to JSON.parse's value. */
  converted(slot: number, convert: (value: unknown) => Converted): Converted {
    try {
      return convert(this.parsed(slot));
    } catch (error) {
      if (error instanceof ValueError) return giveUp();
      throw error;
    }
  }

  /** JSON.parse's value of a slot. */
  private parsed(slot: number): unknown {
    const scan = this.scan;
    if (scan.kinds[slot] === STRING) return decode(scan, slot);
    return JSON.parse(utf8Text(scan.bytes, scan.starts[slot]!, scan.ends[slot]!));
  }
}

/** Objects with more fields than this are not checked for repeated names: they are parsed and rewritten. */
const CANONICAL_MAX_FIELDS = 16;

/**
 * Whether the JSON value in `bytes[start, end)` (valid JSON: the reader checked it) is exactly what
 * JSON.stringify(JSON.parse(it)) gives back: no whitespace, strings without escapes in well-formed UTF-8,
 * integers as JSON.stringify prints them (no `-0`, at most 15 digits), no field name JSON.parse would move
 * to the front (one that starts with a digit, as an array index does) and no name repeated.
 */
export function canonicalJson(bytes: Uint8Array, start: number, end: number): boolean {
  const reader = { at: start };
  return canonicalValue(bytes, reader, 0) && reader.at === end;
}

function canonicalValue(b: Uint8Array, r: { at: number }, depth: number): boolean {
  if (depth > 32) return false;
  const c = b[r.at];
  if (c === 34) return canonicalString(b, r);
  if (c === 123 || c === 91) {
    const object = c === 123;
    const close = object ? 125 : 93;
    r.at++;
    if (b[r.at] === close) {
      r.at++;
      return true;
    }
    const names: number[] = [];
    for (;;) {
      if (object) {
        const name = r.at + 1;
        if (b[name]! >= 48 && b[name]! <= 57) return false;
        if (!canonicalString(b, r) || b[r.at] !== 58) return false;
        const nameEnd = r.at - 1;
        for (let n = 0; n < names.length; n += 2)
          if (sameBytes(b, names[n]!, names[n + 1]!, name, nameEnd)) return false;
        if (names.length >= CANONICAL_MAX_FIELDS * 2) return false;
        names.push(name, nameEnd);
        r.at++;
      }
      if (!canonicalValue(b, r, depth + 1)) return false;
      const d = b[r.at];
      r.at++;
      if (d === close) return true;
      if (d !== 44) return false;
    }
  }
  const from = r.at;
  if (c === 116 || c === 110) r.at += 4;
  else if (c === 102) r.at += 5;
  else {
    let p = from;
    if (b[p] === 45) p++;
    if (b[p] === 48 && p > from) return false;
    while (b[p]! >= 48 && b[p]! <= 57) p++;
    if (p - from > 15 || b[p] === 46 || b[p] === 101 || b[p] === 69) return false;
    r.at = p;
  }
  return true;
}

/** A string from its quote: canonical when it has no escape and its bytes are well-formed UTF-8. */
function canonicalString(b: Uint8Array, r: { at: number }): boolean {
  const start = r.at + 1;
  let p = start;
  let ascii = true;
  for (;;) {
    const c = b[p];
    if (c === 34) break;
    if (c === 92 || c === undefined) return false;
    if (c > 127) ascii = false;
    p++;
  }
  r.at = p + 1;
  return ascii || isUtf8(b.subarray(start, p));
}

function sameBytes(b: Uint8Array, s1: number, e1: number, s2: number, e2: number): boolean {
  if (e1 - s1 !== e2 - s2) return false;
  for (let i = 0; i < e1 - s1; i++) if (b[s1 + i] !== b[s2 + i]) return false;
  return true;
}

/** Makes every field of `tree` wanted at `at`, and the fields inside those read as object trees. */
function want(at: Position, tree: KnownTree): void {
  for (const [name, entry] of tree) {
    if (entry instanceof Map) want(at.objectAt(name), entry);
    else at.field(name);
  }
}

/** Adds to `loose` the Positions inside fields of `tree` kept whole (a leaf read into elsewhere), and all below them. */
function keptWhole(at: Position, tree: KnownTree, loose: Set<Position>): void {
  const all = (inner: Position | null) => {
    if (inner === null || loose.has(inner)) return;
    loose.add(inner);
    inner.objects.forEach(all);
    inner.elements.forEach(all);
  };
  for (const [name, entry] of tree) {
    const field = at.has(name);
    if (field < 0) continue;
    if (entry instanceof Map) {
      const inner = at.objects[field];
      if (inner) keptWhole(inner, entry, loose);
    } else if (entry === 'leaf') all(at.objects[field] ?? null);
  }
}

/** What to check of objects read at `at` whose known fields are `tree` (see ObjectCheck). */
function objectCheck(at: Position, tree: KnownTree): ObjectCheck {
  const foreign: number[] = [];
  for (let field = 0; field < at.size; field++) if (!tree.has(at.names[field]!)) foreign.push(field);
  const trees: ObjectCheck['trees'] = [];
  for (const [name, entry] of tree) {
    if (!(entry instanceof Map)) continue;
    const field = at.has(name);
    if (field < 0) throw new Error(`${at.label}.${name}: known to the model but not wanted (see want)`);
    const inner = at.objects[field];
    trees.push({ field, check: inner ? objectCheck(inner, entry) : null });
  }
  return { foreign: Int32Array.from(foreign), trees };
}

/** Generates the fast writers of a plan, per shape, over positions already placed. */
class WriterCompiler {
  readonly tables: TableRows[] = [];
  private readonly values: SlotValues;
  /** The nodes made, for placeChecks. */
  private readonly made: { fast: FastNode; node: PlanNode; shape: string | null }[] = [];

  constructor(
    private readonly scan: DocumentScan,
    private readonly positions: Map<PlanNode, Position>,
    private readonly root: PlanNode,
  ) {
    this.values = new SlotValues(scan);
  }

  node(
    node: PlanNode,
    parent: PlanNode | null,
    tables: Map<string, TableRows>,
    shape: string | null,
    /** The envelope's label (`@label`); the other envelope tokens are null here (see FastPath's constructor). */
    label: string | null,
    unitNode: PlanNode | null = null,
  ): FastNode {
    const def = tableDef(node.table);
    const rows = tables.get(node.table)!;
    this.tables.push(rows);
    const ownUnit = node.unit ? node : unitNode;
    const keyName = def.unit?.key ?? '';
    const keyIndex = def.unit ? rows.columns.findIndex((c) => c.name === keyName) : -1;
    const keys: number[] = [];
    rows.columns.forEach((column, index) => {
      if (def.key.includes(column.name) && !(node.optionalKey && index === keyIndex)) keys.push(index);
    });
    const at = this.positions.get(node)!;
    const tracked = node.unit ? trackedFields(this.root, node, shape) : [];
    const absentColumn = rows.columns.findIndex((c) => c.source === '@absent');
    const fast: FastNode = {
      check: NO_CHECK,
      absent:
        absentColumn < 0 || tracked.length === 0
          ? null
          : {
              column: absentColumn,
              names: tracked.map((t) => t.name),
              fields: tracked.map((t) => t.fields.map((field) => at.field(field))),
              absentNow: new Int32Array(tracked.length),
              last: new Int32Array(tracked.length),
              lastCount: 0,
              bytes: new Uint8Array(0),
            },
      rows,
      unit: node.unit ?? false,
      optionalKey: node.optionalKey ?? false,
      keyIndex,
      keys,
      write: this.writer(node, parent, ownUnit!, rows, shape, label),
      derived: derivedColumns(rows.columns),
      children: (node.children ?? []).map((child) => ({
        field: at.field(child.field!),
        single: child.single ?? false,
        node: this.node(child, node, tables, shape, label, ownUnit),
      })),
    };
    this.made.push({ fast, node, shape });
    return fast;
  }

  /**
   * Each node's ObjectCheck. Every name the model maps is wanted first, read or not (a key's repeat such as a
   * refund's `order_number`): a name the scanner skipped would count as unknown. Then no more names are
   * wanted at any Position, and what is foreign at each is known.
   */
  placeChecks(): void {
    for (const { node, shape } of this.made)
      want(this.positions.get(node)!, knownTree(this.root, node, shape));
    for (const { fast, node, shape } of this.made)
      fast.check = objectCheck(this.positions.get(node)!, knownTree(this.root, node, shape));
    // Strict: every Position but the root's (an envelope's own fields are not the order's) and those inside a
    // value some node and shape keep whole. An unwanted name anywhere else is unmapped in every shape, so the
    // scan stops there instead of reading on a document its check would give up.
    const rootAt = this.positions.get(this.root)!;
    const loose = new Set<Position>([rootAt]);
    for (const { node, shape } of this.made)
      keptWhole(this.positions.get(node)!, knownTree(this.root, node, shape), loose);
    const all = new Set<Position>();
    const visit = (at: Position | null) => {
      if (at === null || all.has(at)) return;
      all.add(at);
      at.objects.forEach(visit);
      at.elements.forEach(visit);
    };
    visit(rootAt);
    for (const at of all) at.strict = !loose.has(at);
  }

  /** One table's writer for one shape: like compile.ts's, reading slots instead of properties. */
  private writer(
    node: PlanNode,
    parent: PlanNode | null,
    unitNode: PlanNode,
    rows: TableRows,
    shape: string | null,
    label: string | null,
  ): FastWriter {
    const bases: Record<Base, Position | null> = {
      item: this.positions.get(node)!,
      parent: parent ? this.positions.get(parent)! : null,
      unit: this.positions.get(unitNode)!,
      doc: this.positions.get(this.root)!,
    };
    const constants: Converted[] = [];
    const converters: ((value: unknown) => Converted)[] = [];
    const body: string[] = [];
    rows.columns.forEach((column: ColumnDef, k: number) => {
      if (k === 0) return;
      const source = node.sources?.[column.name] ?? column.source;
      const text = source === undefined ? null : sourceFor(source, shape);
      if (text === null || AFTER_ROW_TOKENS.has(text)) return;
      // Built from the last alternative back: each is tried when those before it were missing or null.
      let code = '';
      for (const alternative of text.split('|').reverse()) {
        // An item without its id, keyed by its position: rare, so the object path writes the document. The
        // give-up sits where a missing id already led to one, so documents with ids do no more work.
        if (alternative === '#-' || alternative === '^#-') {
          code = 'G();';
          continue;
        }
        const read = this.read(alternative, bases, shape, label);
        if (read.code === undefined) {
          // No shape (`@api_version`), no envelope field (`@label` …): null, the next one is tried.
          if (read.constant === null) continue;
          if (read.constant === '#') code = `rows.setInt64(${k}, row, index);`;
          else {
            try {
              constants[k] = converterFor(column.type)(read.constant);
              code = `rows.set(${k}, row, C[${k}]);`;
            } catch {
              code = 'G();';
            }
          }
          continue;
        }
        const convert = this.convert(column, k, converters);
        code = `${read.code}\n    if (v >= 0 && K[v] > ${NULL}) ${convert}${code ? ` else { ${code} }` : ''}`;
      }
      if (code) body.push(`{ ${code} }`);
    });
    const source = `return function fastWriteRow(item, parent, unit, doc, index, row) {
  const K = scan.kinds, A = scan.aux, S = scan.starts, E = scan.ends, B = scan.bytes;
  let v;
  ${body.join('\n  ')}
};`;
    return new Function('scan', 'rows', 'V', 'C', 'X', 'G', source)(
      this.scan,
      rows,
      this.values,
      constants,
      converters,
      giveUp,
    ) as FastWriter;
  }

  /**
   * Code that leaves `v` at the slot a source alternative names (-1 when an object on the way is missing or
   * null), or the constant it stands for. Any other non-object on the way gives up: the object path
   * refuses it.
   */
  private read(
    alternative: string,
    bases: Record<Base, Position | null>,
    shape: string | null,
    label: string | null,
  ): { code: string; constant?: undefined } | { constant: string | null; code?: undefined } {
    if (alternative === '#') return { constant: '#' };
    if (alternative.startsWith('=')) return { constant: alternative.slice(1) };
    if (alternative === '@api_version') return { constant: shape };
    if (alternative === '@label') return { constant: label };
    if (ENVELOPE_TOKENS[alternative] !== undefined) return { constant: null };
    let base: Base = 'item';
    let path = alternative;
    if (alternative.startsWith('$$.')) [base, path] = ['doc', alternative.slice(3)];
    else if (alternative.startsWith('$.')) [base, path] = ['unit', alternative.slice(2)];
    else if (alternative.startsWith('^.')) [base, path] = ['parent', alternative.slice(2)];
    const parts = path.split('.');
    let position = bases[base];
    // The root has no parent: `^.` there reads nothing, as the object path reads null.
    if (!position) return { code: 'v = -1;' };
    const steps = [`v = ${base} + ${position.field(parts[0]!)};`];
    for (let i = 1; i < parts.length; i++) {
      position = position.objectAt(parts[i - 1]!);
      const field = position.field(parts[i]!);
      steps.push(
        `if (v >= 0) { if (K[v] === ${OBJECT}) v = A[v] + ${field}; else if (K[v] > ${NULL}) G(); else v = -1; }`,
      );
    }
    return { code: steps.join(' ') };
  }

  /** Code converting the value at slot `v` into column `k` (its kind is neither missing nor null). */
  private convert(column: ColumnDef, k: number, converters: ((value: unknown) => Converted)[]): string {
    const type = column.type;
    if (type === 'BIGINT') return `rows.setInt64(${k}, row, V.integer(v));`;
    if (type === 'DOUBLE') return `rows.setDouble(${k}, row, V.double(v));`;
    if (type === 'BOOLEAN') return `rows.setBoolean(${k}, row, V.boolean(v));`;
    if (type === 'TIMESTAMPTZ') return `rows.setInt64(${k}, row, V.timestamp(v));`;
    // Text that needs no decoding is copied here; V.text handles the rest.
    if (type === 'VARCHAR' || type === 'DATE')
      return `{ if (K[v] === ${STRING} && A[v] === 0) rows.setTextBytes(${k}, row, B, S[v], E[v]); else V.text(rows, ${k}, row, v); }`;
    if (type === 'JSON') return `V.json(rows, ${k}, row, v);`;
    const decimal = /^DECIMAL\((\d+),(\d+)\)$/.exec(type);
    if (decimal) return `rows.setInt64(${k}, row, V.decimal(v, ${decimal[1]}, ${decimal[2]}));`;
    converters[k] = converterFor(type);
    return `rows.set(${k}, row, V.converted(v, X[${k}]));`;
  }
}
