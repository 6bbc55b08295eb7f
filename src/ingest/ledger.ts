import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { createGunzip, type Gunzip } from 'node:zlib';
import type { DuckDBConnection } from '@duckdb/node-api';
import { literal, timestampLiteral } from '../model/index.js';
import {
  decideLedger,
  type LedgerDecision,
  type LedgerEntry,
  type LedgerEvidence,
  type LedgerInput,
  type Prefix,
} from './ledger-decision.js';

/**
 * `_ingested_files`: what ingest has read, by store and path, with size, modification time and content
 * hash. Here its rows are read and written, and the facts its decisions (ledger-decision.ts) ask of a file
 * are read from the file.
 */

const LEDGER_COLUMNS =
  'size, epoch_ms(mtime), sha256, status, byte_offset, line, documents, rejected, CAST(skipped AS VARCHAR)';

function ledgerEntry(row: unknown[]): LedgerEntry {
  const n = (v: unknown) => Number(v ?? 0);
  const entry: LedgerEntry = {
    size: n(row[0]),
    mtimeMs: n(row[1]),
    sha256: row[2] === null ? null : String(row[2]),
    status: row[3] === 'complete' ? 'complete' : 'partial',
    byteOffset: n(row[4]),
    line: n(row[5]),
    documents: n(row[6]),
    rejected: n(row[7]),
  };
  const skipped = skippedCounts(row[8]);
  if (skipped) entry.skipped = skipped;
  return entry;
}

/** The `skipped` column's counts (JSON written by writeLedgersSql), or undefined when there are none. */
function skippedCounts(value: unknown): Map<string, number> | undefined {
  if (typeof value !== 'string') return undefined;
  const counts = new Map<string, number>();
  for (const [as, n] of Object.entries(JSON.parse(value) as Record<string, unknown>))
    if (typeof n === 'number') counts.set(as, n);
  return counts.size ? counts : undefined;
}

/** The `skipped` column's value: JSON by object or event type, or NULL. */
const skippedJson = (skipped: Map<string, number> | undefined): string =>
  skipped?.size ? `${literal(JSON.stringify(Object.fromEntries(skipped)))}::JSON` : 'NULL';

export async function readLedger(
  connection: DuckDBConnection,
  store: string,
  path: string,
): Promise<LedgerEntry | null> {
  const reader = await connection.runAndReadAll(
    `SELECT ${LEDGER_COLUMNS} FROM _ingested_files WHERE _store = ${literal(store)} AND path = ${literal(path)}`,
  );
  const row = reader.getRows()[0];
  return row ? ledgerEntry(row) : null;
}

/** Paths looked up per query by readLedgers. */
export const LEDGER_PATHS_PER_QUERY = 5000;

/**
 * The entries of many paths, by path, in one query per LEDGER_PATHS_PER_QUERY paths. A query per file would
 * scan the ledger once per file: re-reading a folder of 50,000 unchanged files would take two minutes before
 * any was read.
 */
export async function readLedgers(
  connection: DuckDBConnection,
  store: string,
  paths: readonly string[],
  onQuery: () => void = () => undefined,
): Promise<Map<string, LedgerEntry>> {
  const entries = new Map<string, LedgerEntry>();
  for (let from = 0; from < paths.length; from += LEDGER_PATHS_PER_QUERY) {
    const some = paths.slice(from, from + LEDGER_PATHS_PER_QUERY);
    onQuery();
    const reader = await connection.runAndReadAll(
      `SELECT path, ${LEDGER_COLUMNS} FROM _ingested_files
       WHERE _store = ${literal(store)} AND path IN (${some.map(literal).join(', ')})`,
    );
    for (const row of reader.getRows()) entries.set(String(row[0]), ledgerEntry(row.slice(1)));
  }
  return entries;
}

export function writeLedgerSql(
  store: string,
  path: string,
  entry: LedgerEntry,
  runId: string,
  atMs: number,
): string {
  return writeLedgersSql(store, [[path, entry]], runId, atMs);
}

/**
 * The entries of several files in two statements, as a batch that ends many small files writes them: two
 * statements per file, each scanning the ledger, would take most of the time of a first ingest of 10,000
 * files.
 */
export function writeLedgersSql(
  store: string,
  entries: readonly (readonly [string, LedgerEntry])[],
  runId: string,
  atMs: number,
): string {
  if (entries.length === 0) return '';
  const paths = entries.map(([path]) => literal(path)).join(', ');
  const rows = entries.map(
    ([path, entry]) =>
      `(${literal(store)}, ${literal(path)}, ${entry.size}, ` +
      `${timestampLiteral(Math.floor(entry.mtimeMs))}, ${literal(entry.sha256)}, ${literal(entry.status)}, ` +
      `${entry.byteOffset}, ${entry.line}, ${entry.documents}, ${entry.rejected}, ${timestampLiteral(atMs)}, ${literal(runId)}, ` +
      `${skippedJson(entry.skipped)})`,
  );
  return (
    `DELETE FROM _ingested_files WHERE _store = ${literal(store)} AND path IN (${paths});\n` +
    `INSERT INTO _ingested_files VALUES ${rows.join(',\n')}`
  );
}

/** A file's chunks, or those of its first `bytes` bytes. */
function chunksOf(path: string, bytes?: number): AsyncIterable<Buffer> {
  if (bytes === 0) return Readable.from([]);
  return createReadStream(path, {
    highWaterMark: 1 << 20,
    ...(bytes === undefined ? {} : { end: bytes - 1 }),
  });
}

/** Hex SHA-256 of a file's bytes as stored, or of its first `bytes` bytes. */
export async function hashFile(path: string, bytes?: number): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of chunksOf(path, bytes)) hash.update(chunk);
  return hash.digest('hex');
}

/**
 * The hash a partial entry keeps of what its run read: the file's bytes up to `byteOffset`, the position
 * reached (a UTF-8 byte order mark, which the reader drops before it counts, is hashed too). A run resumes
 * the file from that position when its first bytes still hash the same, even if it grew meanwhile. Null for a
 * gzipped file, whose position counts uncompressed bytes: such a file is read again whole once it changes.
 */
export async function partialPrefixHash(path: string, byteOffset: number): Promise<string | null> {
  const head = Buffer.alloc(3);
  const handle = await open(path, 'r');
  try {
    await handle.read(head, 0, 3, 0);
  } finally {
    await handle.close();
  }
  if (head[0] === 0x1f && head[1] === 0x8b) return null;
  const bom = head[0] === 0xef && head[1] === 0xbb && head[2] === 0xbf ? 3 : 0;
  return hashFile(path, byteOffset + bom);
}

const LAST_LINE_LIMIT = 64 << 20;

/** Hex SHA-256 of a file's first `bytes` bytes, with how that content ends (see Prefix). */
export async function readPrefix(path: string, bytes: number): Promise<Prefix> {
  const hash = createHash('sha256');
  let last = 10;
  let tail: Buffer[] | null = [];
  let tailBytes = 0;
  let gunzip: Gunzip | null = null;
  let first = true;
  for await (const chunk of chunksOf(path, bytes)) {
    if (first && chunk[0] === 0x1f && chunk[1] === 0x8b) {
      gunzip = createGunzip();
      gunzip.on('data', (out: Buffer) => {
        if (out.length) last = out[out.length - 1]!;
      });
    }
    first = false;
    hash.update(chunk);
    if (gunzip) {
      gunzip.write(chunk);
      continue;
    }
    if (!chunk.length) continue;
    last = chunk[chunk.length - 1]!;
    const newline = chunk.lastIndexOf(10);
    if (newline >= 0) {
      tail = [Buffer.from(chunk.subarray(newline + 1))];
      tailBytes = chunk.length - newline - 1;
    } else if (tail) {
      tail.push(Buffer.from(chunk));
      tailBytes += chunk.length;
      if (tailBytes > LAST_LINE_LIMIT) tail = null;
    }
  }
  if (gunzip) {
    const inflater = gunzip;
    // A prefix that does not end where a gzip member does cannot be said to end a line: not a clean append.
    await new Promise<void>((resolve) => {
      inflater.once('end', resolve);
      inflater.once('error', () => {
        last = 0;
        resolve();
      });
      inflater.end();
    });
  }
  const endsLine = last === 10;
  const lastLine = endsLine || gunzip || !tail ? null : Buffer.concat(tail).toString('utf8');
  return { sha256: hash.digest('hex'), endsLine, lastLine };
}

/**
 * Records new modification times of files found unchanged by their content (touched, or copied anew), so
 * the next run skips them by their time, unread; the rest of their entries stays as the run that read them
 * left it.
 */
export function touchLedgerSql(store: string, touched: readonly (readonly [string, number])[]): string {
  const statements: string[] = [];
  for (let from = 0; from < touched.length; from += LEDGER_PATHS_PER_QUERY) {
    const values = touched
      .slice(from, from + LEDGER_PATHS_PER_QUERY)
      .map(([path, mtimeMs]) => `(${literal(path)}, ${timestampLiteral(Math.floor(mtimeMs))})`);
    statements.push(
      `UPDATE _ingested_files AS f SET mtime = t.mtime FROM (VALUES ${values.join(', ')}) AS t(path, mtime)
       WHERE f._store = ${literal(store)} AND f.path = t.path`,
    );
  }
  return statements.join(';\n');
}

/**
 * The ledger's decision for one input (see ledger-decision.ts), with the facts it asks for read from the file:
 * its content's hash, the hash of the bytes a stopped run read (an unreadable file has none), or what its
 * first bytes were when it has grown.
 */
export async function decideFile(
  input: LedgerInput & { path: string },
  entry: LedgerEntry | null,
): Promise<Exclude<LedgerDecision, { action: 'check' }>> {
  const evidence: LedgerEvidence = {};
  for (;;) {
    const decision = decideLedger(input, entry, evidence);
    if (decision.action !== 'check') return decision;
    if (decision.evidence === 'content_hash') evidence.contentSha256 = await hashFile(input.path);
    else if (decision.evidence === 'read_prefix_hash')
      evidence.readPrefixSha256 = await partialPrefixHash(input.path, decision.bytes).catch(() => null);
    else evidence.appendedPrefix = await readPrefix(input.path, decision.bytes);
  }
}
