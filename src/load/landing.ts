import { promisify } from 'node:util';
import { brotliCompress, brotliDecompress, constants } from 'node:zlib';

/**
 * The raw landing's block format. Every batch lands the records it received as one row of
 * `_raw_landing`: a brotli-compressed text (quality 1: fast, and JSON shrinks five to ten times) in which
 * each record is a header line, a JSON array `[seq, kind, stream, entity, source, length]`, followed by
 * `length` characters (UTF-16 code units, as JavaScript counts them) of the record exactly as received,
 * and a newline. Storing documents uncompressed would double the warehouse's size and its write volume.
 */

export interface LandedRecord {
  seq: number;
  /** record (API page item), document (ingested JSON), full_scan_complete (marker replayed by rebuild). */
  kind: string;
  stream: string;
  entity: string | null;
  source: string | null;
  text: string;
}

export const CODEC = 'brotli-1';

const compress = promisify(brotliCompress);
const decompress = promisify(brotliDecompress);

export async function encodeBlock(records: readonly LandedRecord[]): Promise<Buffer> {
  const parts: string[] = [];
  for (const r of records) {
    parts.push(
      JSON.stringify([r.seq, r.kind, r.stream, r.entity, r.source, r.text.length]),
      '\n',
      r.text,
      '\n',
    );
  }
  const text = Buffer.from(parts.join(''), 'utf8');
  return compress(text, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 1,
      [constants.BROTLI_PARAM_SIZE_HINT]: text.length,
    },
  });
}

export async function decodeBlock(codec: string, payload: Uint8Array): Promise<LandedRecord[]> {
  if (codec !== CODEC)
    throw new Error(`raw landing block uses codec ${codec}, which this version cannot read`);
  const text = (await decompress(payload)).toString('utf8');
  const out: LandedRecord[] = [];
  let pos = 0;
  while (pos < text.length) {
    const nl = text.indexOf('\n', pos);
    const [seq, kind, stream, entity, source, length] = JSON.parse(text.slice(pos, nl)) as [
      number,
      string,
      string,
      string | null,
      string | null,
      number,
    ];
    const start = nl + 1;
    out.push({ seq, kind, stream, entity, source, text: text.slice(start, start + length) });
    pos = start + length + 1;
  }
  return out;
}
