import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';

/**
 * The raw landing's block format. Every batch lands the records it received as one row of
 * `_raw_landing`: brotli-compressed bytes (quality 1: fast, and JSON shrinks five to ten times) in which
 * each record is a header line, a JSON array `[seq, kind, stream, entity, source, length]`, followed by
 * `length` bytes of the record exactly as received (UTF-8) and a newline. Ingested documents are landed
 * from the very bytes read from the file, so nothing is encoded twice. Storing documents uncompressed
 * would double the warehouse's size and its write volume.
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
  text: string;
}

export const CODEC = 'brotli-1';

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);

const NEWLINE = Buffer.from('\n');

export async function encodeBlock(records: readonly LandingEntry[]): Promise<Buffer> {
  const parts: Buffer[] = [];
  for (const r of records) {
    const bytes = typeof r.payload === 'string' ? Buffer.from(r.payload, 'utf8') : r.payload;
    const header = JSON.stringify([r.seq, r.kind, r.stream, r.entity, r.source, bytes.length]);
    parts.push(Buffer.from(`${header}\n`), bytes, NEWLINE);
  }
  const block = Buffer.concat(parts);
  return compress(block, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_SIZE_HINT]: block.length,
    },
  });
}

export async function decodeBlock(codec: string, payload: Uint8Array): Promise<LandedRecord[]> {
  if (codec !== CODEC)
    throw new Error(`raw landing block uses codec ${codec}, which this version cannot read`);
  const block = await decompress(payload);
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
    out.push({ seq, kind, stream, entity, source, text: block.toString('utf8', start, start + length) });
    pos = start + length + 1;
  }
  return out;
}
