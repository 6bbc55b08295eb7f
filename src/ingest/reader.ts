import { createHash } from 'node:crypto';
import { closeSync, constants, openSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { addAbortSignal, Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import {
  DEFAULT_MAX_DOCUMENT_BYTES,
  LineSplitter,
  type Piece,
  type Splitter,
  skipBlanks,
  ValueSplitter,
} from './splitters.js';

/**
 * Streams one input (a file or stdin) as document texts, in bounded memory: bytes are hashed as they
 * arrive (the ledger's content hash is of the file as stored), gunzipped when they start with the gzip
 * magic number, and split by the format the content shows (docs/ingest.md):
 *   - `.ndjson` / `.jsonl` names, or a first line that holds one complete value: one document per line;
 *   - a first non-blank character `[`: the elements of a JSON array;
 *   - otherwise: JSON values one after another (a pretty-printed document, or several).
 * A file that is not a regular file (a named pipe, `<(…)`'s /dev/fd/N, a character device) is streamed as
 * stdin is: its size says nothing, and it can be read only once.
 */

export type Format = 'ndjson' | 'array' | 'values';

const CHUNK = 1 << 20;
/** How much of an input is held to find the end of its first line before the format is chosen anyway. */
const FORMAT_HEAD_LIMIT = 64 << 20;

async function* tapAndHash(
  source: AsyncIterable<Buffer>,
  hash: ReturnType<typeof createHash> | null,
  counter: { bytes: number },
) {
  for await (const chunk of source) {
    hash?.update(chunk);
    counter.bytes += chunk.length;
    yield chunk;
  }
}

/**
 * A file's bytes, at most `limit` of them, in chunks read into two buffers taken in turn (the next chunk
 * is read while the caller works on this one). A chunk is only valid until the next is asked for; the
 * splitters copy what they keep of it. A fresh buffer per read would allocate, and leave V8 to collect,
 * the whole file's size again for every worker reading it.
 */
async function* readChunks(path: string, limit: number | undefined): AsyncGenerator<Buffer> {
  const handle = await open(path, 'r');
  const end = limit ?? Number.POSITIVE_INFINITY;
  // No larger than the file: two megabytes per file of a folder of 10,000 small ones kept V8's collector
  // busy for half the run.
  const size = Math.max(1, Math.min(CHUNK, end));
  const buffers = [Buffer.allocUnsafeSlow(size), Buffer.allocUnsafeSlow(size)];
  let position = 0;
  const readInto = async (buffer: Buffer): Promise<Buffer> => {
    const length = Math.min(size, end - position);
    if (length <= 0) return buffer.subarray(0, 0);
    const { bytesRead } = await handle.read(buffer, 0, length, position);
    position += bytesRead;
    return buffer.subarray(0, bytesRead);
  };
  let next = readInto(buffers[0]!);
  try {
    for (let turn = 1; ; turn++) {
      const chunk = await next;
      if (chunk.length === 0) {
        // Ended before the size the run planned to read: the file was cut while it was read. Taken as its
        // end, the half read would be recorded as the whole file, and a cut line rejected as malformed.
        if (limit !== undefined && position < limit)
          throw new Error(
            `the file shrank while it was read: it ended after ${position} of its ${end} bytes`,
          );
        return;
      }
      next = readInto(buffers[turn % 2]!);
      yield chunk;
    }
  } finally {
    // A caller that stops early leaves a read in flight: it must end before the file is closed.
    await next.catch(() => undefined);
    await handle.close();
  }
}

/**
 * A pipe or a device, read in one pass (stdin aside). Opening a named pipe waits, on libuv's pool, until a
 * writer opens it, which may be never: a stopped run would wait with it, and so would its exit, which joins
 * the pool's threads (a second Ctrl-C would not end it). So a stop opens the pipe for writing and closes it
 * at once, which ends the wait with an empty pipe.
 */
async function* readStream(path: string, signal: AbortSignal | undefined): AsyncGenerator<Buffer> {
  const stopped = () => new Error('the ingest was stopped');
  if (signal?.aborted) throw stopped();
  let opened = false;
  const release = () => {
    if (opened) return;
    try {
      closeSync(openSync(path, constants.O_WRONLY | constants.O_NONBLOCK));
    } catch {
      // Not a pipe, or no longer waiting.
    }
  };
  signal?.addEventListener('abort', release, { once: true });
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(path, 'r');
  } finally {
    opened = true;
    signal?.removeEventListener('abort', release);
  }
  try {
    if (signal?.aborted) throw stopped();
    const stream = handle.createReadStream({ highWaterMark: CHUNK, autoClose: false });
    yield* signal ? addAbortSignal(signal, stream) : stream;
  } finally {
    await handle.close();
  }
}

function firstLineIsOneValue(head: Buffer): boolean {
  const nl = head.indexOf(10);
  const line = head.subarray(0, nl === -1 ? head.length : nl);
  const splitter = new ValueSplitter(false);
  const pieces = [...splitter.push(line), ...splitter.finish()];
  return pieces.length === 1 && !pieces[0]!.error;
}

function chooseFormat(name: string, head: Buffer): Format {
  if (/\.(ndjson|jsonl)(\.gz)?$/i.test(name)) return 'ndjson';
  const i = skipBlanks(head);
  if (head[i] === 91) return 'array';
  return firstLineIsOneValue(head.subarray(i)) ? 'ndjson' : 'values';
}

export class DocumentReader {
  private readonly hash: ReturnType<typeof createHash> | null;
  private readonly signal: AbortSignal | undefined;
  private readonly counter = { bytes: 0 };
  private readonly stream: boolean;
  private readonly maxDocumentBytes: number;
  format: Format | null = null;
  gzip = false;
  /** Bytes dropped before the content's offset 0: a UTF-8 byte order mark (3), or none. */
  skipped = 0;

  constructor(
    /** A path, or '-' for stdin. */
    readonly path: string,
    /**
     * Bytes of the file to read (its size when the run was planned): a file that grows meanwhile is read
     * to the same end by every ingest worker, and recorded in the ledger as what was read.
     */
    private readonly limit?: number,
    /**
     * Whether to hash the bytes. Every ingest worker reads the whole input, and one hash of it is enough:
     * the others skip it (SHA-256 of the input is about 8 % of a second worker's CPU).
     */
    options: {
      hash?: boolean;
      /**
       * Ends the reading of stdin when it fires (with an AbortError): a stopped ingest must not wait for a
       * producer that keeps stdin open and writes nothing. Files end by themselves.
       */
      signal?: AbortSignal | undefined;
      /** Not a regular file (a pipe, a device): streamed in one pass, like stdin (see above). */
      stream?: boolean;
      /** Largest document; a larger one is passed on as an error piece with its size (see splitters.ts). */
      maxDocumentBytes?: number;
    } = {},
  ) {
    this.hash = options.hash === false ? null : createHash('sha256');
    this.signal = options.signal;
    this.stream = options.stream === true || path === '-';
    this.maxDocumentBytes = options.maxDocumentBytes ?? DEFAULT_MAX_DOCUMENT_BYTES;
  }

  /** Bytes of the input as stored, read so far. */
  get bytesRead(): number {
    return this.counter.bytes;
  }

  /** Hex SHA-256 of the stored bytes, complete once `pieces()` is exhausted; null when not hashing. */
  digest(): string | null {
    return this.hash ? this.hash.copy().digest('hex') : null;
  }

  /** Document texts in order, each with its start line and the offset just past it. */
  async *pieces(): AsyncGenerator<Piece> {
    const raw: AsyncIterable<Buffer> =
      this.path === '-'
        ? this.signal
          ? addAbortSignal(this.signal, process.stdin)
          : process.stdin
        : this.stream
          ? readStream(this.path, this.signal)
          : this.limit === 0
            ? Readable.from([])
            : readChunks(this.path, this.limit);
    const tapped = tapAndHash(raw, this.hash, this.counter);
    const first = await tapped.next();
    if (first.done) return;
    this.gzip = first.value.length >= 2 && first.value[0] === 0x1f && first.value[1] === 0x8b;
    const rest = async function* () {
      yield first.value;
      yield* tapped;
    };
    // Gunzip reads its input later, after the read buffer has been reused: it gets copies.
    const copies = async function* () {
      for await (const chunk of rest()) yield Buffer.from(chunk);
    };
    const content: AsyncIterable<Buffer> = this.gzip
      ? Readable.from(copies()).pipe(createGunzip({ chunkSize: CHUNK }))
      : rest();
    let splitter: Splitter | null = null;
    // The format is chosen from the whole first line: stdin comes in 64 KB chunks and a large order's line
    // can be longer than a read, and a first line judged from its first chunk alone would read an NDJSON
    // input as values, where one truncated line then swallows every document after it. The head is copied,
    // as the read buffers are reused.
    let head: Buffer[] = [];
    let headBytes = 0;
    // The head is complete once a line holding something other than blanks has ended.
    let holdsContent = false;
    const endsFirstLine = (chunk: Buffer): boolean => {
      let from = 0;
      if (!holdsContent) {
        from = skipBlanks(chunk);
        if (from === chunk.length) return false;
        holdsContent = true;
      }
      return chunk.indexOf(10, from) !== -1;
    };
    const start = (bytes: Buffer): Splitter => {
      this.format = chooseFormat(this.path, bytes);
      const options = { maxDocumentBytes: this.maxDocumentBytes, skipped: this.skipped };
      return this.format === 'ndjson'
        ? new LineSplitter(options)
        : new ValueSplitter(this.format === 'array', options);
    };
    for await (let chunk of content) {
      if (headBytes === 0 && chunk[0] === 0xef && chunk[1] === 0xbb && chunk[2] === 0xbf) {
        chunk = chunk.subarray(3);
        this.skipped = 3;
      }
      if (!splitter) {
        head.push(Buffer.from(chunk));
        headBytes += chunk.length;
        if (!endsFirstLine(chunk) && headBytes < FORMAT_HEAD_LIMIT) continue;
        const bytes = Buffer.concat(head);
        head = [];
        splitter = start(bytes);
        yield* splitter.push(bytes);
        continue;
      }
      yield* splitter.push(chunk);
    }
    if (!splitter && headBytes > 0) {
      const bytes = Buffer.concat(head);
      splitter = start(bytes);
      yield* splitter.push(bytes);
    }
    if (splitter) yield* splitter.finish();
  }
}
