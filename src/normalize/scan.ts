/**
 * Reading a JSON document straight from its bytes into the fields normalize needs, with no JSON.parse and
 * no JavaScript object per value (see fast.ts for why and for what is done with the result).
 *
 * The reader is told, by a tree of Positions, which fields matter at each place in a document (an order's
 * `number`, its `lines[]`, each line's `tax_lines[]` …). It walks the bytes once: a field that matters gets a
 * slot recording its kind and where its value lies; an object or array that holds more wanted fields is read
 * into slots of its own; everything else is checked to be valid JSON and skipped. Nothing here decodes
 * text: a string is a byte range and two flags.
 *
 * Whatever this reader is not sure JSON.parse would read the same way makes it give up (`read` returns -1)
 * and the caller takes the ordinary path, JSON.parse and the object normalizer, which then decides: invalid
 * JSON, a repeated field, an escaped field name, a `\u` escape of a UTF-16 surrogate, nesting deeper than
 * MAX_DEPTH, anything but an object at the top or as an item of an array of wanted objects. So it never has
 * to reproduce an error message, only to agree exactly with the ordinary path on documents it accepts.
 */

/** Slot kinds. ABSENT: the field is not in the object; NULL is a JSON null (both read as missing). */
export const ABSENT = 0;
export const NULL = 1;
export const FALSE = 2;
export const TRUE = 3;
export const NUMBER = 4;
export const STRING = 5;
export const OBJECT = 6;
export const ARRAY = 7;

/** String flags (in `aux`): a backslash escape; a byte beyond ASCII (to be checked as UTF-8 when used). */
export const ESCAPED = 1;
export const NON_ASCII = 2;
/** Number flag (in `aux`): an integer of at most 15 characters, sign included, so exact as a double. */
export const SHORT_INTEGER = 4;

/**
 * Deepest nesting read here. The object path refuses records nested deeper than 1,000 levels (guard.ts);
 * documents nested beyond this are left to it, so the refusal is the same.
 */
export const MAX_DEPTH = 64;

/** Thrown inside the reader to give the document up; never escapes `read`. */
const GIVE_UP = Symbol('give up');

/**
 * Bytes that end the plain run of a string: the closing quote, a backslash, a control character (invalid
 * raw) and anything beyond ASCII (flagged). Testing one table entry per byte is what keeps the scan of
 * long strings cheap.
 */
const STRING_STOP = new Uint8Array(256);
for (let c = 0; c < 256; c++) STRING_STOP[c] = c < 32 || c === 34 || c === 92 || c > 127 ? 1 : 0;

/** A field name's hash: its length and three of its bytes (the table compares the whole name anyway). */
function nameHash(bytes: Uint8Array, start: number, end: number): number {
  const length = end - start;
  if (length === 0) return 0;
  const hash =
    Math.imul(length, 0x9e3779b1) ^
    (bytes[start]! << 16) ^
    (bytes[end - 1]! << 8) ^
    bytes[start + (length >> 1)]!;
  return (hash ^ (hash >>> 15)) | 0;
}

/**
 * Field names not wanted at a Position that it remembers anyway, so that their place in the usual order of
 * fields can be predicted too; a document with ever new names (hostile or generated) stops adding after this.
 */
const MAX_IGNORED_NAMES = 256;

/**
 * The fields wanted in the objects found at one place of a document (for example every order line).
 *
 * Every name it knows has an id: the wanted fields first (their id is their slot), then names met and not
 * wanted (no slot). Documents from one producer write their fields in one order, so the Position remembers
 * which name followed which: the reader first compares the bytes with the name expected next, closing quote
 * included, which is exact, and only looks the name up when that fails.
 */
export class Position {
  readonly names: string[] = [];
  /** Per field: where an object value is read (fields nested below are wanted), or null to keep it whole. */
  readonly objects: (Position | null)[] = [];
  /** Per field: where the objects of an array value are read (an array of rows), or null to keep it whole. */
  readonly elements: (Position | null)[] = [];
  /**
   * Whether a name not wanted here gives the document up at once. fast.ts sets it where such a name could only
   * be one the model does not map (its reader would give the document up anyway, once it was read whole);
   * elsewhere such names are counted (`DocumentScan.unknown`) for the reader to judge.
   */
  strict = false;
  private readonly byName = new Map<string, number>();
  /** Names of all ids (wanted, then ignored) as bytes followed by their closing quote, one after another. */
  tokenBytes = new Uint8Array(256);
  tokenView = new DataView(this.tokenBytes.buffer);
  tokenStart = new Int32Array(16);
  tokenEnd = new Int32Array(16);
  /** By (id of the previous name + 1, 0 at the start of the object): the id expected next, or -1. */
  after = new Int32Array(17).fill(-1);
  private ids = 0;
  private table = new Int32Array(0);
  private mask = 0;

  constructor(readonly label: string) {}

  /** Wanted fields: the slots an object here takes. */
  get size(): number {
    return this.names.length;
  }

  /** The slot of a wanted field, added when new (only before any document is read: ids would move). */
  field(name: string): number {
    let field = this.byName.get(name);
    if (field === undefined) {
      if (this.ids > this.names.length) throw new Error(`${this.label}: fields are added before reading`);
      field = this.names.length;
      this.names.push(name);
      this.objects.push(null);
      this.elements.push(null);
      this.byName.set(name, field);
      this.addId(name);
    }
    return field;
  }

  /** The slot of a wanted field, or -1. */
  has(name: string): number {
    const id = this.byName.get(name);
    return id !== undefined && id < this.names.length ? id : -1;
  }

  /** Where an object held in `name` is read (made on first use, or `into` when given). */
  objectAt(name: string, into?: Position): Position {
    const field = this.field(name);
    const position = this.objects[field] ?? into ?? new Position(`${this.label}.${name}`);
    if (into && position !== into) throw new Error(`${this.label}.${name} is already read elsewhere`);
    this.objects[field] = position;
    return position;
  }

  /** Where the objects of an array held in `name` are read (made on first use). */
  elementsAt(name: string): Position {
    const field = this.field(name);
    let position = this.elements[field];
    if (!position) {
      position = new Position(`${this.label}.${name}[]`);
      this.elements[field] = position;
    }
    return position;
  }

  /**
   * The id of the name in `bytes[start, end)`, remembering a new one while there is room; -1 for a name
   * neither wanted nor remembered.
   */
  lookup(bytes: Uint8Array, start: number, end: number): number {
    if (this.table.length === 0) this.index();
    const table = this.table;
    const length = end - start;
    const hash = nameHash(bytes, start, end);
    const tokens = this.tokenBytes;
    for (let at = hash & this.mask; ; at = (at + 1) & this.mask) {
      const entry = table[at]!;
      if (entry === 0) break;
      const from = this.tokenStart[entry - 1]!;
      if (this.tokenEnd[entry - 1]! - from - 1 !== length) continue;
      let k = 0;
      while (k < length && tokens[from + k] === bytes[start + k]) k++;
      if (k === length) return entry - 1;
    }
    if (this.ids - this.names.length >= MAX_IGNORED_NAMES) return -1;
    const name = Buffer.from(bytes.buffer, bytes.byteOffset + start, length).toString('latin1');
    this.byName.set(name, this.ids);
    return this.addId(name);
  }

  private addId(name: string): number {
    const id = this.ids++;
    const bytes = Buffer.from(name, 'latin1');
    const from = id === 0 ? 0 : this.tokenEnd[id - 1]!;
    if (from + bytes.length + 1 > this.tokenBytes.length) {
      const grown = new Uint8Array(Math.max(this.tokenBytes.length * 2, from + bytes.length + 1));
      grown.set(this.tokenBytes);
      this.tokenBytes = grown;
      this.tokenView = new DataView(grown.buffer);
    }
    this.tokenBytes.set(bytes, from);
    this.tokenBytes[from + bytes.length] = 34;
    if (id >= this.tokenStart.length) {
      const grow = (a: Int32Array, fill: number) => {
        const b = new Int32Array(a.length * 2 + 1).fill(fill);
        b.set(a);
        return b;
      };
      this.tokenStart = grow(this.tokenStart, 0);
      this.tokenEnd = grow(this.tokenEnd, 0);
      this.after = grow(this.after, -1);
    }
    this.tokenStart[id] = from;
    this.tokenEnd[id] = from + bytes.length + 1;
    // The table is rebuilt when it would be more than a quarter full.
    if (this.table.length > 0 && this.ids * 4 > this.table.length) this.table = new Int32Array(0);
    else if (this.table.length > 0) this.insert(id);
    return id;
  }

  /** An open-addressing table of the names by their hash, a quarter full at most. */
  private index(): void {
    let slots = 16;
    while (slots < this.ids * 4) slots *= 2;
    this.table = new Int32Array(slots);
    this.mask = slots - 1;
    for (let id = 0; id < this.ids; id++) this.insert(id);
  }

  private insert(id: number): void {
    const from = this.tokenStart[id]!;
    let at = nameHash(this.tokenBytes, from, this.tokenEnd[id]! - 1) & this.mask;
    while (this.table[at] !== 0) at = (at + 1) & this.mask;
    this.table[at] = id + 1;
  }
}

const EMPTY = new Uint8Array(0);

/**
 * The slots of one document, reused from document to document. An object read at a Position takes
 * `position.size` consecutive slots from `base`; slot `base + field` describes that field's value:
 *   kinds   ABSENT … ARRAY;
 *   starts, ends   the value's bytes: a string's without its quotes, a container's with its brackets;
 *   aux     a string's or a number's flags; for an object read at a Position, the base of its slots; for
 *           an array of objects read at a Position, the base of the first (then `next`), -1 when empty;
 *           -1 for a container kept whole.
 */
export class DocumentScan {
  kinds = new Uint8Array(4096);
  starts = new Int32Array(4096);
  ends = new Int32Array(4096);
  aux = new Int32Array(4096);
  /** By an array item's base: the base of the next item of the same array, or -1. */
  next = new Int32Array(4096);
  /**
   * By an object's base: how many of its fields the Position did not want (skipped unread). fast.ts gives a
   * document up when an object it reads as rows carries any, since the object path keeps those in `_extra`.
   */
  unknown = new Int32Array(4096);
  /** The document being read (valid until the next `read`). */
  bytes: Uint8Array = EMPTY;
  /** A view of the whole buffer the documents are read from, made once per buffer, not per document. */
  private view: DataView = new DataView(EMPTY.buffer);
  /** Where `bytes` starts in `view`. */
  private viewOffset = 0;
  private used = 0;
  private at = 0;
  private limit = 0;

  /**
   * Reads the document held in the whole of `bytes` as an object at `root`. Returns the base of the root's
   * slots, or -1 when the document must be read the ordinary way (see the top of this file).
   */
  read(bytes: Uint8Array, root: Position): number {
    this.bytes = bytes;
    if (this.view.buffer !== bytes.buffer) this.view = new DataView(bytes.buffer);
    this.viewOffset = bytes.byteOffset;
    this.limit = bytes.length;
    this.used = 0;
    this.at = 0;
    try {
      this.blank();
      if (bytes[this.at] !== 123) return -1;
      const base = this.object(root, 1);
      this.blank();
      return this.at === this.limit ? base : -1;
    } catch (error) {
      if (error === GIVE_UP) return -1;
      throw error;
    }
  }

  private blank(): void {
    const b = this.bytes;
    let p = this.at;
    for (;;) {
      const c = b[p];
      if (c === 32 || c === 10 || c === 13 || c === 9) p++;
      else break;
    }
    this.at = p;
  }

  private allocate(size: number): number {
    const base = this.used;
    // At least one slot, so that every item has a base of its own for `next`.
    const end = base + (size > 0 ? size : 1);
    if (end > this.kinds.length) this.grow(end);
    this.kinds.fill(ABSENT, base, end);
    this.used = end;
    return base;
  }

  private grow(needed: number): void {
    let length = this.kinds.length * 2;
    while (length < needed) length *= 2;
    const widen = <T extends Uint8Array | Int32Array>(from: T, make: (n: number) => T): T => {
      const to = make(length);
      to.set(from);
      return to;
    };
    this.kinds = widen(this.kinds, (n) => new Uint8Array(n));
    this.starts = widen(this.starts, (n) => new Int32Array(n));
    this.ends = widen(this.ends, (n) => new Int32Array(n));
    this.aux = widen(this.aux, (n) => new Int32Array(n));
    this.next = widen(this.next, (n) => new Int32Array(n));
    this.unknown = widen(this.unknown, (n) => new Int32Array(n));
  }

  /** An object at `position`, from its `{`; returns the base of its slots. */
  private object(position: Position, depth: number): number {
    if (depth > MAX_DEPTH) throw GIVE_UP;
    const size = position.size;
    const base = this.allocate(size);
    const b = this.bytes;
    const limit = this.limit;
    this.at++;
    this.blank();
    let p = this.at;
    if (b[p] === 125) {
      this.at = p + 1;
      this.unknown[base] = 0;
      return base;
    }
    let previous = -1;
    let unknown = 0;
    for (;;) {
      if (b[p] !== 34) throw GIVE_UP;
      p++;
      // The name expected next, compared with its closing quote: a match is exactly that name.
      let id = previous < -1 ? -1 : position.after[previous + 1]!;
      if (id >= 0) {
        const tokens = position.tokenBytes;
        let t = position.tokenStart[id]!;
        const stop = position.tokenEnd[id]!;
        let q = p;
        // Four bytes at a time while both have four left (names run to a dozen bytes), then byte by byte.
        const names = position.tokenView;
        const doc = this.view;
        const offset = this.viewOffset;
        while (t + 4 <= stop && q + 4 <= limit && names.getInt32(t) === doc.getInt32(q + offset)) {
          t += 4;
          q += 4;
        }
        while (t < stop && tokens[t] === b[q]) {
          t++;
          q++;
        }
        if (t === stop) p = q;
        else id = -2;
      }
      if (id < 0) {
        const nameStart = p;
        for (;;) {
          while (STRING_STOP[b[p]!] === 0) p++;
          if (p >= limit) throw GIVE_UP;
          const c = b[p]!;
          if (c === 34) break;
          // An escaped name would have to be decoded to be compared: rare enough to leave to JSON.parse.
          if (c === 92 || c < 32) throw GIVE_UP;
          p++;
        }
        id = position.lookup(b, nameStart, p);
        p++;
        if (previous >= -1) position.after[previous + 1] = id;
      }
      if (b[p] !== 58) {
        this.at = p;
        this.blank();
        p = this.at;
        if (b[p] !== 58) throw GIVE_UP;
      }
      this.at = p + 1;
      this.blank();
      if (id >= 0 && id < size) {
        const slot = base + id;
        // JSON.parse keeps the last of a repeated field; this reader would keep both.
        if (this.kinds[slot] !== ABSENT) throw GIVE_UP;
        this.value(slot, position.objects[id]!, position.elements[id]!, depth);
      } else {
        if (position.strict) throw GIVE_UP;
        unknown++;
        this.skip(depth);
      }
      // An unremembered name (-1) breaks the chain of predictions until the next object.
      previous = id >= 0 ? id : -2;
      p = this.at;
      let c = b[p];
      if (c === 32 || c === 10 || c === 13 || c === 9) {
        this.blank();
        p = this.at;
        c = b[p];
      }
      if (c === 44) {
        this.at = p + 1;
        this.blank();
        p = this.at;
      } else if (c === 125) {
        this.at = p + 1;
        this.unknown[base] = unknown;
        return base;
      } else throw GIVE_UP;
    }
  }

  /** A wanted field's value into `slot`. */
  private value(slot: number, object: Position | null, elements: Position | null, depth: number): void {
    const b = this.bytes;
    const start = this.at;
    const c = b[start];
    let kind: number;
    let aux = -1;
    if (c === 34) {
      aux = this.string();
      this.kinds[slot] = STRING;
      this.starts[slot] = start + 1;
      this.ends[slot] = this.at - 1;
      this.aux[slot] = aux;
      return;
    }
    if (c === 123) {
      kind = OBJECT;
      if (object) aux = this.object(object, depth + 1);
      else this.skip(depth);
    } else if (c === 91) {
      kind = ARRAY;
      if (elements) aux = this.items(elements, depth + 1);
      else this.skip(depth);
    } else if (c === 110) {
      kind = NULL;
      this.literal(110, 117, 108, 108);
    } else if (c === 116) {
      kind = TRUE;
      this.literal(116, 114, 117, 101);
    } else if (c === 102) {
      kind = FALSE;
      this.literal(102, 97, 108, 115);
      if (b[this.at] !== 101) throw GIVE_UP;
      this.at++;
    } else {
      kind = NUMBER;
      aux = this.number();
    }
    // Written after the value is read: reading it may have grown (replaced) the slot arrays.
    this.kinds[slot] = kind;
    this.starts[slot] = start;
    this.ends[slot] = this.at;
    this.aux[slot] = aux;
  }

  /** The items of an array of objects at `position`, from its `[`; returns the first item's base or -1. */
  private items(position: Position, depth: number): number {
    if (depth > MAX_DEPTH) throw GIVE_UP;
    const b = this.bytes;
    this.at++;
    this.blank();
    if (b[this.at] === 93) {
      this.at++;
      return -1;
    }
    let first = -1;
    let last = -1;
    for (;;) {
      // An item that is not an object: the object path refuses the document and names it.
      if (b[this.at] !== 123) throw GIVE_UP;
      const base = this.object(position, depth + 1);
      this.next[base] = -1;
      if (last < 0) first = base;
      else this.next[last] = base;
      last = base;
      this.blank();
      const c = b[this.at];
      if (c === 44) {
        this.at++;
        this.blank();
      } else if (c === 93) {
        this.at++;
        return first;
      } else throw GIVE_UP;
    }
  }

  /** Checks and passes over any value that is not wanted. */
  private skip(depth: number): void {
    const b = this.bytes;
    const c = b[this.at];
    if (c === 34) {
      this.string();
      return;
    }
    if (c === 123 || c === 91) {
      if (depth + 1 > MAX_DEPTH) throw GIVE_UP;
      const close = c === 123 ? 125 : 93;
      this.at++;
      this.blank();
      if (b[this.at] === close) {
        this.at++;
        return;
      }
      for (;;) {
        if (close === 125) {
          if (b[this.at] !== 34) throw GIVE_UP;
          this.string();
          this.blank();
          if (b[this.at] !== 58) throw GIVE_UP;
          this.at++;
          this.blank();
        }
        this.skip(depth + 1);
        this.blank();
        const d = b[this.at];
        if (d === 44) {
          this.at++;
          this.blank();
        } else if (d === close) {
          this.at++;
          return;
        } else throw GIVE_UP;
      }
    }
    if (c === 110) this.literal(110, 117, 108, 108);
    else if (c === 116) this.literal(116, 114, 117, 101);
    else if (c === 102) {
      this.literal(102, 97, 108, 115);
      if (b[this.at] !== 101) throw GIVE_UP;
      this.at++;
    } else this.number();
  }

  /** Four bytes of a literal (`fals` of false: the caller checks the fifth). */
  private literal(a: number, b: number, c: number, d: number): void {
    const bytes = this.bytes;
    const p = this.at;
    if (bytes[p] !== a || bytes[p + 1] !== b || bytes[p + 2] !== c || bytes[p + 3] !== d) throw GIVE_UP;
    this.at = p + 4;
  }

  /** A string from its opening quote to past its closing one; returns its flags. */
  private string(): number {
    const b = this.bytes;
    const limit = this.limit;
    let p = this.at + 1;
    let flags = 0;
    for (;;) {
      while (STRING_STOP[b[p]!] === 0) p++;
      if (p >= limit) throw GIVE_UP;
      const c = b[p]!;
      if (c === 34) break;
      if (c === 92) {
        flags |= ESCAPED;
        p = this.escape(p);
        continue;
      }
      // A raw control character is invalid JSON.
      if (c < 32) throw GIVE_UP;
      if (c > 127) flags |= NON_ASCII;
      p++;
    }
    this.at = p + 1;
    return flags;
  }

  /** An escape at `p` (its backslash); returns the position after it. */
  private escape(p: number): number {
    const b = this.bytes;
    const e = b[p + 1];
    if (e === 34 || e === 92 || e === 47 || e === 98 || e === 102 || e === 110 || e === 114 || e === 116)
      return p + 2;
    if (e !== 117) throw GIVE_UP;
    let code = 0;
    for (let k = p + 2; k < p + 6; k++) {
      const h = b[k];
      let digit: number;
      if (h === undefined) throw GIVE_UP;
      if (h >= 48 && h <= 57) digit = h - 48;
      else if (h >= 97 && h <= 102) digit = h - 87;
      else if (h >= 65 && h <= 70) digit = h - 55;
      else throw GIVE_UP;
      code = code * 16 + digit;
    }
    // A surrogate, paired or not: the object path decides (guard.ts refuses an unpaired one).
    if (code >= 0xd800 && code <= 0xdfff) throw GIVE_UP;
    return p + 6;
  }

  /** A number in JSON's grammar; returns SHORT_INTEGER for a plain integer of at most 15 characters. */
  private number(): number {
    const b = this.bytes;
    const start = this.at;
    let p = start;
    if (b[p] === 45) p++;
    const first = b[p];
    if (first === 48) p++;
    else if (first !== undefined && first >= 49 && first <= 57) {
      p++;
      while (isDigit(b[p])) p++;
    } else throw GIVE_UP;
    let flags = p - start <= 15 ? SHORT_INTEGER : 0;
    if (b[p] === 46) {
      flags = 0;
      p++;
      if (!isDigit(b[p])) throw GIVE_UP;
      while (isDigit(b[p])) p++;
    }
    if (b[p] === 101 || b[p] === 69) {
      flags = 0;
      p++;
      if (b[p] === 43 || b[p] === 45) p++;
      if (!isDigit(b[p])) throw GIVE_UP;
      while (isDigit(b[p])) p++;
    }
    this.at = p;
    return flags;
  }
}

const isDigit = (c: number | undefined): boolean => c !== undefined && c >= 48 && c <= 57;
