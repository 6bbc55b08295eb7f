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

/** One document per line; blank lines are skipped but counted. */
export class LineSplitter implements Splitter {
  private carry: Buffer | null = null;
  private offset = 0;
  private line = 1;

  push(chunk: Buffer): Piece[] {
    const pieces: Piece[] = [];
    const buf = chunk;
    let pos = 0;
    if (this.carry) {
      // Only the line that straddles the two chunks is copied, not the whole chunk.
      const nl = chunk.indexOf(10);
      if (nl === -1) {
        this.carry = Buffer.concat([this.carry, chunk]);
        return pieces;
      }
      const joined = Buffer.concat([this.carry, chunk.subarray(0, nl + 1)]);
      this.carry = null;
      this.take(joined, 0, joined.length - 1, joined.length, pieces);
      pos = nl + 1;
    }
    for (let nl = buf.indexOf(10, pos); nl !== -1; nl = buf.indexOf(10, pos)) {
      this.take(buf, pos, nl, nl + 1, pieces);
      pos = nl + 1;
    }
    // The chunk's buffer is read into again (see reader.ts): the unfinished line is copied out of it.
    this.carry = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
    return pieces;
  }

  finish(): Piece[] {
    const pieces: Piece[] = [];
    if (this.carry) this.take(this.carry, 0, this.carry.length, this.carry.length, pieces);
    this.carry = null;
    return pieces;
  }

  private take(buf: Buffer, start: number, end: number, next: number, pieces: Piece[]): void {
    const begin = this.offset;
    this.offset += next - start;
    if (!isBlank(buf, start, end)) {
      const stop = end > start && buf[end - 1] === 13 ? end - 1 : end;
      pieces.push(new Piece(buf.subarray(start, stop), this.line, this.offset, begin));
    }
    this.line++;
  }
}

/**
 * Top-level values (`{…}{…}` or pretty-printed documents one after another) or, with `array`, the elements
 * of one top-level array. Scalars at the top are passed on as pieces too, for detection to refuse.
 */
export class ValueSplitter implements Splitter {
  private carry: Buffer = Buffer.alloc(0);
  /** Absolute stream offset of carry[0]. */
  private base = 0;
  private line = 1;
  private depth = 0;
  private inString = false;
  private escape = false;
  /** Index in carry where the current value starts, -1 between values. */
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

  constructor(private readonly array: boolean) {
    this.top = array ? 1 : 0;
  }

  push(chunk: Buffer): Piece[] {
    const from = this.carry.length;
    const buf = from ? Buffer.concat([this.carry, chunk]) : chunk;
    const pieces: Piece[] = [];
    let top = this.top;
    for (let i = from; i < buf.length; i++) {
      const b = buf[i]!;
      if (this.inString) {
        if (this.escape) this.escape = false;
        else if (b === 92) this.escape = true;
        else if (b === 34) {
          this.inString = false;
          if (this.depth === top) this.emit(buf, i + 1, pieces);
        }
        if (b === 10) this.line++;
        continue;
      }
      if (b === 10) this.line++;
      if (this.array && !this.opened) {
        if (b === 91) {
          this.opened = true;
          this.depth = 1;
        } else if (!isBlank(buf, i, i + 1))
          this.unexpected(buf, i, pieces, 'expected a JSON array to start with [');
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
          if (this.start >= 0) this.emit(buf, i, pieces);
          if (this.array && !this.closed && b === 93) {
            this.closed = true;
            this.depth = 0;
            top = this.top = 0;
          } else this.unexpected(buf, i, pieces, `unbalanced ${String.fromCharCode(b)}`);
          continue;
        }
        this.depth--;
        if (this.depth === top) this.emit(buf, i + 1, pieces);
      } else if (this.depth === top) {
        const separator = b === 44 || b === 32 || b === 9 || b === 13 || b === 10;
        if (separator && this.start >= 0) this.emit(buf, i, pieces);
        else if (!separator) this.begin(i);
      }
    }
    // Keep only the value in progress; everything before it is done.
    const keep = this.start >= 0 ? this.start : buf.length;
    this.base += keep;
    // The chunk's buffer is read into again (see reader.ts): the value in progress is copied out of it.
    this.carry = from ? buf.subarray(keep) : Buffer.from(buf.subarray(keep));
    if (this.start >= 0) this.start = 0;
    return pieces;
  }

  finish(): Piece[] {
    const pieces: Piece[] = [];
    if (this.start >= 0 && this.depth === this.top) this.emit(this.carry, this.carry.length, pieces);
    else if (this.start >= 0 || this.inString) {
      pieces.push(
        new Piece(
          this.carry.subarray(Math.max(this.start, 0)),
          this.startLine,
          this.base + this.carry.length,
          this.base + Math.max(this.start, 0),
          'the file ends inside a JSON value (truncated?)',
        ),
      );
    } else if (this.array && this.opened && !this.closed) {
      const error = 'the JSON array is not closed with ]';
      pieces.push(new Piece(Buffer.alloc(0), this.line, this.base, this.base, error));
    }
    return pieces;
  }

  private begin(i: number): void {
    this.junk = false;
    if (this.start < 0 && this.depth === this.top) {
      this.start = i;
      this.startLine = this.line;
    }
  }

  private emit(buf: Buffer, end: number, pieces: Piece[]): void {
    if (this.start < 0) return;
    const bytes = buf.subarray(this.start, end);
    pieces.push(new Piece(bytes, this.startLine, this.base + end, this.base + this.start));
    this.start = -1;
  }

  private unexpected(buf: Buffer, i: number, pieces: Piece[], error: string): void {
    if (this.junk) return;
    this.junk = true;
    const bytes = buf.subarray(i, Math.min(buf.length, i + 80));
    pieces.push(new Piece(bytes, this.line, this.base + i + 1, this.base + i, error));
  }
}
