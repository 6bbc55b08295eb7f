import { constants, createBrotliCompress, createBrotliDecompress } from 'node:zlib';
import type { DuckDBConnection } from '@duckdb/node-api';

/**
 * The raw landing's block format. Every batch lands the records it received as one block, a row of
 * `_raw_landing` whose bytes are rows of `_raw_landing_parts`: brotli-compressed bytes (quality 1: fast,
 * and JSON shrinks five to ten times) in which
 * each record is a header line, a JSON array `[seq, kind, stream, entity, source, length]`, followed by
 * `length` bytes of the record exactly as received (UTF-8) and a newline. Ingested documents are landed
 * from the very bytes read from the file, so nothing is encoded twice. Storing documents uncompressed
 * would double the warehouse's size and its write volume. A block is compressed as its records arrive
 * (see BlockWriter), so a batch never holds a second, concatenated copy of what it read.
 */

/** Where a landed record came from; its sequence number is its place in the arrival order. */
export interface LandedMeta {
  seq: number;
  /** record (API page item), document (ingested JSON), unreadable, full_scan_complete (see documents.ts). */
  kind: string;
  stream: string;
  entity: string | null;
  source: string | null;
}

/** A record as it goes into a block: its text, or the bytes it was read as. */
export interface LandingEntry extends LandedMeta {
  payload: string | Buffer;
}

/** A record read back from a block. */
export interface LandedRecord extends LandedMeta {
  /** The record's bytes as landed (a view of the decompressed block). */
  bytes: Buffer;
}

export const CODEC = 'brotli-1';

/**
 * Landing parts whose block row is missing. Only a torn commit leaves them: before commits of many rows went
 * through a checkpoint (see commitThroughCheckpoint), DuckDB replayed part of a commit cut short by a crash,
 * landing parts included. They are deleted when a writer opens: their sequence numbers are handed out again,
 * and a rebuild reading two blocks' parts under one number failed ("Decompression failed") for good.
 */
export const DELETE_ORPHAN_LANDING_PARTS_SQL =
  'DELETE FROM _raw_landing_parts p WHERE NOT EXISTS (SELECT 1 FROM _raw_landing l WHERE l.first_seq = p.first_seq)';

/**
 * A block's bytes are stored as rows of `_raw_landing_parts`, a row per part of at most this many bytes.
 * Two DuckDB (1.5) behaviours rule out storing a block in its `_raw_landing` row:
 * - A value of more than about 60 KB is stored apart from its column, and all such values of a row group
 *   are pinned together to commit or checkpoint it. With a blob per batch, once the landing outgrows the
 *   memory limit a commit fails with "failed to pin block", or its checkpoint fails and invalidates the
 *   database.
 * - A checkpoint rewrites the last row group of every table it appended to, and a row group holds
 *   122,880 rows: the landing's few rows (one per batch) would all share one, so every checkpoint would
 *   rewrite the whole landing, a cost that grows with the warehouse. Parts as values of a list (one row per
 *   batch) have the same problem.
 * With a row per part of 1 KB, values are stored inline (below DuckDB's 4 KB string limit) and evicted like
 * any others, and a row group holds at most 120 MB of landing, which bounds what a checkpoint rewrites.
 * docs/performance.md, "How ingest spends its time", has the measurements.
 */
export const LANDING_PART_BYTES = 1 << 10;

/**
 * The stored bytes of the given blocks (by their first_seq): each block's parts put back together, in
 * order. The range lets DuckDB skip the row groups of other blocks by their min/max. A block with no parts
 * is an error: every block written has at least one.
 *
 * The parts are read chunk by chunk as raw bytes (DuckDBBlobVector.getItemBytes), not as rows of values: a
 * block is some 2,400 parts, and a value object and a second copy for each (getRows, a list per block) cost
 * a rebuild's main thread about a second per 200,000 documents, on the thread that sets its pace
 * (docs/performance.md, "Issue 31: landing blocks handed over, and their parts read as bytes").
 */
export async function storedBlocks(
  connection: DuckDBConnection,
  firstSeqs: readonly number[],
): Promise<Map<number, Uint8Array>> {
  const blocks = new Map<number, Uint8Array>();
  if (firstSeqs.length === 0) return blocks;
  const result = await connection.run(
    `SELECT first_seq, bytes FROM _raw_landing_parts WHERE first_seq IN (${firstSeqs.join(', ')}) ` +
      `AND first_seq BETWEEN ${Math.min(...firstSeqs)} AND ${Math.max(...firstSeqs)} ORDER BY first_seq, part`,
  );
  let seq: number | null = null;
  let parts: Uint8Array[] = [];
  const finish = () => {
    if (seq !== null) blocks.set(seq, parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    parts = [];
  };
  for (
    let chunk = await result.fetchChunk();
    chunk && chunk.rowCount > 0;
    chunk = await result.fetchChunk()
  ) {
    const seqs = chunk.getColumnVector(0);
    const bytes = chunk.getColumnVector(1) as unknown as RawBlobs;
    for (let row = 0; row < chunk.rowCount; row++) {
      const rowSeq = Number(seqs.getItem(row));
      if (rowSeq !== seq) {
        finish();
        seq = rowSeq;
      }
      const part = bytes.getItemBytes(row);
      if (part === null) throw new Error(`raw landing block ${rowSeq} has a part with no bytes`);
      // Parts of up to 12 bytes are views of the result's own memory, freed with the result once it is
      // garbage: a block of one such part would outlive it. Longer parts are copies already.
      parts.push(part.byteLength <= 12 ? part.slice() : part);
    }
  }
  finish();
  for (const first of firstSeqs)
    if (!blocks.has(first)) throw new Error(`raw landing block ${first} has no parts in _raw_landing_parts`);
  return blocks;
}

/** A BLOB column's vector, read as raw bytes (`@duckdb/node-api`'s DuckDBBlobVector). */
interface RawBlobs {
  getItemBytes(row: number): Uint8Array | null;
}

/**
 * Output chunk of a block's decompression, copied at once into the block's decode buffer. It is kept under
 * glibc's mmap threshold (MALLOC_ENV in runtime-profile.ts, 128 KB) so each chunk comes from the heap and
 * its memory is used again by the next: chunks above it were fresh pages every time, and with the
 * concatenation after them, page faults and copies were a fifth of a rebuild's CPU (docs/performance.md,
 * "Issue 31: decoded blocks in reused buffers").
 */
const DECOMPRESSED_CHUNK = 64 << 10;

/** A decode buffer's first size: a block is some 20 to 30 MB decoded; a larger one makes it grow. */
const DECODE_BUFFER_BYTES = 32 << 20;

/**
 * Decode buffers a block has given back (DecodedBlock.release), for the next block this thread decodes:
 * a rebuild worker decodes a few blocks ahead of the one it normalizes, so a few are in use at once.
 */
const spareDecodeBuffers: Buffer[] = [];
const SPARE_DECODE_BUFFERS_KEPT = 4;

/** The block's decompressed bytes, in a spare decode buffer (grown if the block does not fit). */
function inflate(payload: Uint8Array): Promise<{ buffer: Buffer; length: number }> {
  let buffer = spareDecodeBuffers.pop() ?? Buffer.allocUnsafeSlow(DECODE_BUFFER_BYTES);
  let length = 0;
  return new Promise((resolve, reject) => {
    const decompressor = createBrotliDecompress({ chunkSize: DECOMPRESSED_CHUNK });
    decompressor.on('data', (chunk: Buffer) => {
      if (length + chunk.length > buffer.length) {
        const grown = Buffer.allocUnsafeSlow(Math.max(2 * buffer.length, length + chunk.length));
        buffer.copy(grown, 0, 0, length);
        buffer = grown;
      }
      length += chunk.copy(buffer, length);
    });
    decompressor.once('end', () => resolve({ buffer, length }));
    decompressor.once('error', reject);
    decompressor.end(payload);
  });
}

/** A decoded block: its records' bytes are views of a decode buffer that `release` lets the next block use. */
export interface DecodedBlock {
  records: LandedRecord[];
  /**
   * Gives the decode buffer back for the next block; the records' bytes must not be read after. Not
   * calling it is safe: the buffer is then collected as any other.
   */
  release(): void;
}

/** Bytes gathered before they go to the compressor: big enough that a batch makes few thread-pool tasks. */
const STAGING_BYTES = 1 << 20;

/**
 * Staging buffers the compressor has finished with, shared by the blocks this thread writes: brotli runs
 * behind the normalizer, so a block fills about ten of them, and buffers kept only for their own block would
 * be left to V8 to collect at every batch (external memory, which also brings on mark-compacts).
 */
const spareStaging: Buffer[] = [];
const SPARE_STAGING_KEPT = 16;
const takeStaging = (): Buffer => spareStaging.pop() ?? Buffer.allocUnsafeSlow(STAGING_BYTES);
const returnStaging = (buffer: Buffer): void => {
  if (buffer.length === STAGING_BYTES && spareStaging.length < SPARE_STAGING_KEPT) spareStaging.push(buffer);
};
const NO_STAGING = Buffer.alloc(0);
const NEWLINE = 10;

/**
 * One block being written: each record's header and bytes are copied into a staging buffer that goes to
 * brotli (on libuv's thread pool) whenever it fills, so compression runs while the batch is still being
 * normalized, and the buffers a record was read into can be freed as soon as the batch is done with them.
 */
export class BlockWriter {
  private readonly compressor = createBrotliCompress({
    chunkSize: 1 << 18,
    params: { [constants.BROTLI_PARAM_QUALITY]: 1 },
  });
  private readonly compressed: Buffer[] = [];
  private readonly ended: Promise<Buffer>;
  private staging: Buffer = takeStaging();
  private used = 0;
  private result: Promise<Buffer> | null = null;
  records = 0;
  firstSeq = -1;
  lastSeq = -1;
  readonly streams = new Set<string>();

  constructor() {
    this.compressor.on('data', (chunk: Buffer) => this.compressed.push(chunk));
    this.ended = new Promise((resolve, reject) => {
      this.compressor.once('end', () => resolve(Buffer.concat(this.compressed)));
      this.compressor.once('error', reject);
    });
    // finish() hands the failure on; a writer that is discarded must not leave it unhandled.
    this.ended.catch(() => undefined);
  }

  add(r: LandingEntry): void {
    if (this.result) throw new Error('raw landing block already finished');
    const { payload } = r;
    const length = typeof payload === 'string' ? Buffer.byteLength(payload, 'utf8') : payload.length;
    this.put(`${JSON.stringify([r.seq, r.kind, r.stream, r.entity, r.source, length])}\n`);
    this.put(payload);
    this.reserve(1);
    this.staging[this.used++] = NEWLINE;
    if (this.records === 0) this.firstSeq = r.seq;
    this.lastSeq = r.seq;
    this.records++;
    this.streams.add(r.stream);
  }

  /** The compressed block (the same promise on every call); no record can be added after. */
  finish(): Promise<Buffer> {
    if (!this.result) {
      this.flush();
      this.releaseStaging();
      this.compressor.end();
      this.result = this.ended;
    }
    return this.result;
  }

  /** Frees the compressor of a block that will not be written. */
  discard(): void {
    this.result ??= this.ended;
    this.releaseStaging();
    this.compressor.destroy();
  }

  /** The staging buffer, empty now, goes back to the shared spares (the block takes no more records). */
  private releaseStaging(): void {
    returnStaging(this.staging);
    this.staging = NO_STAGING;
  }

  private reserve(bytes: number): void {
    if (this.used + bytes > this.staging.length) this.flush();
  }

  /**
   * Text or bytes of a record: encoded or copied into staging (text straight from the string, with no
   * Buffer in between), or, when large, copied straight to the compressor.
   */
  private put(data: string | Buffer): void {
    const text = typeof data === 'string';
    const most = text ? data.length * 3 : data.length;
    if (most <= STAGING_BYTES / 2) {
      this.reserve(most);
      this.used += text ? this.staging.write(data, this.used) : data.copy(this.staging, this.used);
      return;
    }
    this.flush();
    // Copied: the compressor reads it later, and an ingested record's bytes are in a reused read buffer.
    this.compressor.write(text ? Buffer.from(data, 'utf8') : Buffer.from(data));
  }

  /**
   * Hands the staged bytes to the compressor, which reads them later: staging goes on in a spare buffer,
   * and this one becomes spare again once compressed (fresh memory for every megabyte costs page faults).
   */
  private flush(): void {
    if (this.used === 0) return;
    const full = this.staging;
    this.compressor.write(full.subarray(0, this.used), () => returnStaging(full));
    this.staging = takeStaging();
    this.used = 0;
  }
}

export async function decodeBlock(codec: string, payload: Uint8Array): Promise<DecodedBlock> {
  if (codec !== CODEC)
    throw new Error(`raw landing block uses codec ${codec}, which this version cannot read`);
  const inflated = await inflate(payload);
  const block = inflated.buffer.subarray(0, inflated.length);
  const out: LandedRecord[] = [];
  let pos = 0;
  while (pos < block.length) {
    const nl = block.indexOf(10, pos);
    const [seq, kind, stream, entity, source, length] = JSON.parse(block.toString('utf8', pos, nl)) as [
      number,
      string,
      string,
      string | null,
      string | null,
      number,
    ];
    const start = nl + 1;
    out.push({ seq, kind, stream, entity, source, bytes: block.subarray(start, start + length) });
    pos = start + length + 1;
  }
  let released = false;
  return {
    records: out,
    release: () => {
      if (released) return;
      released = true;
      if (spareDecodeBuffers.length < SPARE_DECODE_BUFFERS_KEPT) spareDecodeBuffers.push(inflated.buffer);
    },
  };
}
