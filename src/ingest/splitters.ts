/**
 * Splitting a byte stream into JSON document texts without holding the file: NDJSON by lines, and JSON
 * arrays or concatenated JSON values by bracket depth (strings and escapes respected). Each piece carries
 * the line it starts on and the stream offset just past it, which is what the ingest ledger saves so a
 * resumed run can skip what was committed.
 */

/**
 * One document's bytes as read: a view into the read buffer, no copy, valid until the next chunk is read.
 * The text is decoded when asked for, each time (callers ask once): an ingest worker never decodes the
 * pieces another worker normalizes, and a cached text would live as long as the piece, until the whole
 * chunk's pieces were taken, long enough to be promoted to V8's old generation, document after document.
 */
export class Piece {
  constructor(
    readonly bytes: Buffer,
    /** 1-based line where the piece starts. */
    readonly line: number,
    /** Bytes of the (decompressed) stream consumed once this piece is taken. */
    readonly end: number,
    /** Stream offset where the piece's bytes begin. */
    readonly start: number,
    /** Set when the piece is structurally broken (not worth JSON.parse); `text` holds what was read. */
    readonly error?: string,
  ) {}

  get text(): string {
    return this.bytes.toString('utf8');
  }
}

export interface Splitter {
  push(chunk: Buffer): Piece[];
  finish(): Piece[];
}

/** Index of the first byte from `start` that is not JSON whitespace (space, tab, CR, LF); `end` if none. */
export function skipBlanks(buf: Buffer, start = 0, end = buf.length): number {
  let i = start;
  while (i < end) {
    const b = buf[i]!;
    if (b !== 32 && b !== 9 && b !== 13 && b !== 10) break;
    i++;
  }
  return i;
}

const isBlank = (buf: Buffer, start: number, end: number) => skipBlanks(buf, start, end) === end;

/** Largest document read when none is configured (`maxDocumentBytes`): a larger one is rejected with its size. */
export const DEFAULT_MAX_DOCUMENT_BYTES = 64 << 20;

/** What is kept of a document over the limit: its first 64 KiB (as of any rejected payload, see load/batch-builder.ts). */
export const EXCERPT_BYTES = 64 << 10;

export interface SplitterOptions {
  /** Largest document; a larger one becomes an error piece holding its first EXCERPT_BYTES (and its size). */
  maxDocumentBytes?: number;
  /** Bytes of the input before the stream's offset 0 (a byte order mark the reader dropped), for messages. */
  skipped?: number;
}

/**
 * Bytes the splitters have copied to hold documents that run across chunks, for the test that proves the
 * copying linear (test/warehouse/input-hardening.test.ts): each byte is copied at most twice, once when its
 * chunk ends and once when the document is put together.
 */
export const splitterCopies = { bytes: 0 };

const EMPTY = Buffer.alloc(0);

/**
 * A document that runs across chunks: its bytes from earlier chunks, each chunk's share copied once (the
 * read buffers are reused) and the whole put together once, when it ends: putting it together at every
 * chunk would be quadratic, seconds for a 64 MB line and endless for 256 MB on stdin (64 KB chunks).
 * Past the size limit only its first EXCERPT_BYTES are kept, while the splitter reads on to its end.
 */
class Held {
  private parts: Buffer[] = [];
  private kept = 0;
  /** Bytes of the document seen so far, kept or not. */
  seen = 0;
  /** Over the limit: only the first EXCERPT_BYTES are kept. */
  over = false;
  /** The last byte seen (a CR before the newline that ends the line is not the document's). */
  last = -1;

  constructor(private readonly max: number) {}

  add(bytes: Buffer): void {
    if (bytes.length === 0) return;
    this.seen += bytes.length;
    this.last = bytes[bytes.length - 1]!;
    if (!this.over && this.seen > this.max) {
      this.over = true;
      const head = this.head(EMPTY);
      this.parts = [head];
      this.kept = head.length;
    }
    const take = this.over ? Math.min(bytes.length, EXCERPT_BYTES - this.kept) : bytes.length;
    if (take <= 0) return;
    this.parts.push(Buffer.from(bytes.subarray(0, take)));
    this.kept += take;
    splitterCopies.bytes += take;
  }

  /** The whole document: what was held, then `tail` (the current chunk's share). */
  whole(tail: Buffer): Buffer {
    const all = this.parts.length === 0 ? Buffer.from(tail) : Buffer.concat([...this.parts, tail]);
    splitterCopies.bytes += all.length;
    return all;
  }

  /** The document's first EXCERPT_BYTES (what was held, then `tail`). */
  head(tail: Buffer): Buffer {
    const out = Buffer.allocUnsafe(Math.min(EXCERPT_BYTES, this.kept + tail.length));
    let at = 0;
    for (const part of [...this.parts, tail]) {
      if (at === out.length) break;
      at += part.copy(out, at, 0, Math.min(part.length, out.length - at));
    }
    return out;
  }

  clear(): void {
    this.parts = [];
    this.kept = 0;
    this.seen = 0;
    this.over = false;
    this.last = -1;
  }
}

/** The reason a document over the limit is rejected: its size, where it starts, and the limit. */
export const tooLargeMessage = (size: number, at: number, max: number): string =>
  `document too large: ${size} bytes from byte ${at}, over the limit of ${max} bytes (maxDocumentBytes); only its first ${Math.min(size, EXCERPT_BYTES)} bytes are kept`;

/** One document per line; blank lines are skipped but counted. */
export class LineSplitter implements Splitter {
  private readonly max: number;
  private readonly skipped: number;
  /** The line in progress, from earlier chunks. */
  private readonly held: Held;
  /** Whether the line in progress holds only blanks so far. */
  private blank = true;
  private offset = 0;
  private line = 1;

  constructor(options: SplitterOptions = {}) {
    this.max = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    this.skipped = options.skipped ?? 0;
    this.held = new Held(this.max);
  }

  push(chunk: Buffer): Piece[] {
    const pieces: Piece[] = [];
    let pos = 0;
    if (this.held.seen > 0) {
      // Only the new bytes are searched for the line's end.
      const nl = chunk.indexOf(10);
      if (nl === -1) {
        this.hold(chunk, 0);
        return pieces;
      }
      this.takeHeld(chunk.subarray(0, nl), nl + 1, pieces);
      pos = nl + 1;
    }
    for (let nl = chunk.indexOf(10, pos); nl !== -1; nl = chunk.indexOf(10, pos)) {
      this.take(chunk, pos, nl, nl + 1, pieces);
      pos = nl + 1;
    }
    // The chunk's buffer is read into again (see reader.ts): the unfinished line is copied out of it.
    if (pos < chunk.length) this.hold(chunk, pos);
    return pieces;
  }

  finish(): Piece[] {
    const pieces: Piece[] = [];
    if (this.held.seen > 0) this.takeHeld(EMPTY, 0, pieces);
    return pieces;
  }

  private hold(chunk: Buffer, from: number): void {
    if (this.blank) this.blank = skipBlanks(chunk, from) === chunk.length;
    this.held.add(chunk.subarray(from));
  }

  /** The held line, ending with `tail` (its newline excluded), which consumes `consumed` bytes of the chunk. */
  private takeHeld(tail: Buffer, consumed: number, pieces: Piece[]): void {
    const held = this.held;
    const begin = this.offset;
    this.offset += held.seen + consumed;
    if (!this.blank || !isBlank(tail, 0, tail.length)) {
      const cr = (tail.length ? tail[tail.length - 1] : held.last) === 13 ? 1 : 0;
      const size = held.seen + tail.length - cr;
      if (size > this.max) pieces.push(this.tooLarge(held.head(tail), size, begin));
      else {
        const bytes = held.whole(tail);
        pieces.push(new Piece(cr ? bytes.subarray(0, size) : bytes, this.line, this.offset, begin));
      }
    }
    held.clear();
    this.blank = true;
    this.line++;
  }

  private take(buf: Buffer, start: number, end: number, next: number, pieces: Piece[]): void {
    const begin = this.offset;
    this.offset += next - start;
    if (!isBlank(buf, start, end)) {
      const stop = end > start && buf[end - 1] === 13 ? end - 1 : end;
      if (stop - start > this.max)
        pieces.push(
          this.tooLarge(Buffer.from(buf.subarray(start, start + EXCERPT_BYTES)), stop - start, begin),
        );
      else pieces.push(new Piece(buf.subarray(start, stop), this.line, this.offset, begin));
    }
    this.line++;
  }

  private tooLarge(excerpt: Buffer, size: number, begin: number): Piece {
    const error = tooLargeMessage(size, begin + this.skipped, this.max);
    return new Piece(excerpt, this.line, this.offset, begin, error);
  }
}

/**
 * Top-level values (`{…}{…}` or pretty-printed documents one after another) or, with `array`, the elements
 * of one top-level array, document by document as NDJSON is read: an array is never held whole, and an
 * element that does not end (a bracket missing) is held only up to the size limit, the elements before it
 * being passed on as they end. Scalars at the top are passed on as pieces too, for detection to refuse.
 */
export class ValueSplitter implements Splitter {
  private readonly max: number;
  private readonly skipped: number;
  /** The value in progress, from earlier chunks. */
  private readonly held: Held;
  /** Stream offset of the chunk being pushed (during push), of the end of what was pushed (between). */
  private base = 0;
  private line = 1;
  private depth = 0;
  private inString = false;
  private escape = false;
  /** Stream offset where the current value starts, -1 between values. */
  private start = -1;
  private startLine = 1;
  private opened = false;
  private closed = false;
  /**
   * Depth at which values are documents: 1 inside the array of an array file, 0 otherwise. After the array
   * closes it drops to 0: what follows (more arrays, one a line, or more values) is read as values, each a
   * document, rather than dropped as one complaint about stray content.
   */
  private top: number;
  /** After one complaint about stray content, the rest of that stretch is not reported again. */
  private junk = false;

  constructor(
    private readonly array: boolean,
    options: SplitterOptions = {},
  ) {
    this.top = array ? 1 : 0;
    this.max = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
    this.skipped = options.skipped ?? 0;
    this.held = new Held(this.max);
  }

  push(chunk: Buffer): Piece[] {
    const pieces: Piece[] = [];
    let top = this.top;
    for (let i = 0; i < chunk.length; i++) {
      const b = chunk[i]!;
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (b === 92) this.escape = true;
        else if (b === 34) {
          this.inString = false;
          if (this.depth === top) this.emit(chunk, i + 1, pieces);
        }
        if (b === 10) this.line++;
        continue;
      }
      if (b === 10) this.line++;
      if (this.array && !this.opened) {
        if (b === 91) {
          this.opened = true;
          this.depth = 1;
        } else if (!isBlank(chunk, i, i + 1))
          this.unexpected(chunk, i, pieces, 'expected a JSON array to start with [');
        continue;
      }
      if (b === 34) {
        this.begin(i);
        this.inString = true;
      } else if (b === 123 || b === 91) {
        this.begin(i);
        this.depth++;
      } else if (b === 125 || b === 93) {
        if (this.depth === top) {
          if (this.start >= 0) this.emit(chunk, i, pieces);
          if (this.array && !this.closed && b === 93) {
            this.closed = true;
            this.depth = 0;
            top = this.top = 0;
          } else this.unexpected(chunk, i, pieces, `unbalanced ${String.fromCharCode(b)}`);
          continue;
        }
        this.depth--;
        if (this.depth === top) this.emit(chunk, i + 1, pieces);
      } else if (this.depth === top) {
        const separator = b === 44 || b === 32 || b === 9 || b === 13 || b === 10;
        if (separator && this.start >= 0) this.emit(chunk, i, pieces);
        else if (!separator) this.begin(i);
      }
    }
    // The chunk's buffer is read into again (see reader.ts): the value in progress is copied out of it.
    if (this.start >= 0)
      this.held.add(this.start > this.base ? chunk.subarray(this.start - this.base) : chunk);
    this.base += chunk.length;
    return pieces;
  }

  finish(): Piece[] {
    const pieces: Piece[] = [];
    if (this.start >= 0 && this.depth === this.top) this.emit(EMPTY, 0, pieces);
    else if (this.start >= 0 || this.inString) {
      const begin = Math.max(this.start, 0);
      const size = this.base - begin;
      const bytes = this.held.over ? this.held.head(EMPTY) : this.held.whole(EMPTY);
      this.held.clear();
      const error =
        `the file ends inside a JSON value (truncated?): the value that starts at byte ${begin + this.skipped} ` +
        `(line ${this.startLine}) is not closed in the ${size} bytes to the end`;
      pieces.push(new Piece(bytes, this.startLine, this.base, begin, error));
    } else if (this.array && this.opened && !this.closed) {
      const error = `the JSON array is not closed with ]: the input ends at byte ${this.base + this.skipped}`;
      pieces.push(new Piece(EMPTY, this.line, this.base, this.base, error));
    }
    return pieces;
  }

  private begin(i: number): void {
    this.junk = false;
    if (this.start < 0 && this.depth === this.top) {
      this.start = this.base + i;
      this.startLine = this.line;
    }
  }

  /** The value in progress, ending at `end` in `chunk`. */
  private emit(chunk: Buffer, end: number, pieces: Piece[]): void {
    const begin = this.start;
    if (begin < 0) return;
    this.start = -1;
    const next = this.base + end;
    const size = next - begin;
    if (begin >= this.base) {
      // Within this chunk: a view of it, no copy.
      const from = begin - this.base;
      if (size <= this.max) pieces.push(new Piece(chunk.subarray(from, end), this.startLine, next, begin));
      else pieces.push(this.tooLarge(Buffer.from(chunk.subarray(from, from + EXCERPT_BYTES)), size, begin));
      return;
    }
    const tail = chunk.subarray(0, end);
    if (size <= this.max) pieces.push(new Piece(this.held.whole(tail), this.startLine, next, begin));
    else pieces.push(this.tooLarge(this.held.head(tail), size, begin));
    this.held.clear();
  }

  private tooLarge(excerpt: Buffer, size: number, begin: number): Piece {
    const error = tooLargeMessage(size, begin + this.skipped, this.max);
    return new Piece(excerpt, this.startLine, begin + size, begin, error);
  }

  private unexpected(chunk: Buffer, i: number, pieces: Piece[], error: string): void {
    if (this.junk) return;
    this.junk = true;
    const bytes = chunk.subarray(i, Math.min(chunk.length, i + 80));
    const at = this.base + i;
    pieces.push(new Piece(bytes, this.line, at + 1, at, `${error} at byte ${at + this.skipped}`));
  }
}
