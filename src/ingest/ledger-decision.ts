/**
 * What the ledger (`_ingested_files`) says to do with one input, as a pure function: read it whole, skip it
 * as unchanged, or resume it from the position a run reached. The facts that cost I/O (a file's content
 * hash, the hash of its first bytes) are asked for one at a time, only when the decision depends on them,
 * so an unchanged file is skipped by its size and time without being opened. `decideFile` in ledger.ts
 * gathers them; docs/ingest.md tells the rules from the user's side.
 */

/** A file's row in `_ingested_files`. */
export interface LedgerEntry {
  size: number;
  mtimeMs: number;
  /** complete: the content's hash; partial: the hash of the bytes before `byteOffset`, when a stop left it. */
  sha256: string | null;
  status: 'partial' | 'complete';
  byteOffset: number;
  line: number;
  documents: number;
  rejected: number;
  /** Documents skipped inside envelopes (no table, not recognised), by object or event type; absent when none. */
  skipped?: Map<string, number>;
}

/** An input as it is now. */
export interface LedgerInput {
  size: number;
  mtimeMs: number;
  /** Read in one pass (stdin, a pipe, a device): it has no position to resume from and no entry is looked up. */
  stream: boolean;
}

/** What an earlier run read of a file that has grown since. */
export interface Prefix {
  sha256: string;
  /** Whether the content (gunzipped, for gzip) ends at a line break: then nothing straddles its end. */
  endsLine: boolean;
  /** When it does not: its unfinished last line, for a plain file and up to 64 MB (else null). */
  lastLine: string | null;
}

/** Facts about the file that cost reading it, each gathered when a decision asks for it. */
export interface LedgerEvidence {
  /** SHA-256 of the whole file (`content_hash`). */
  contentSha256?: string;
  /**
   * SHA-256 of its bytes before the entry's `byteOffset`, a byte order mark included (`read_prefix_hash`);
   * null for a gzipped file, whose positions count uncompressed bytes, or one that could not be read.
   */
  readPrefixSha256?: string | null;
  /** What its first `entry.size` bytes are now (`appended_prefix`). */
  appendedPrefix?: Prefix;
}

/** Where a resumed file's reading starts, with what was counted of it before. */
export type LedgerPosition = Pick<LedgerEntry, 'byteOffset' | 'line' | 'documents' | 'rejected'>;

export type LedgerDecision =
  /** Unchanged: by its time (not opened), or by its content's hash (touched, or copied anew). */
  | { action: 'skip'; by: 'time' | 'content' }
  /** New, changed, rewritten, truncated or read in one pass: read from its start. */
  | { action: 'load' }
  /**
   * Read from `from`: `stopped`, a run stopped inside it and it is the same file; `stopped_then_grew`, its bytes
   * up to where the stopped run was are the same; `appended`, a complete file that only grew.
   */
  | { action: 'resume'; from: LedgerPosition; why: 'stopped' | 'stopped_then_grew' | 'appended' }
  /** The decision needs a fact read from the file: its first `bytes` bytes, or all of them. */
  | { action: 'check'; evidence: 'content_hash' | 'read_prefix_hash' | 'appended_prefix'; bytes: number };

/** Modification times are compared at millisecond precision (what the ledger stores). */
export const sameTime = (a: number, b: number): boolean => Math.floor(a) === Math.floor(b);

/**
 * The ledger's name for an input read in one pass: stdin is `stdin:<sha256>`, as it always was; a pipe or a
 * device `stream:<sha256>:<path>` (`/dev/fd/63` means nothing in the next run, the content hash does).
 */
export const streamLedgerKey = (path: string, sha256: string | null): string =>
  path === '-' ? `stdin:${sha256}` : `stream:${sha256}:${path}`;

const LOAD: LedgerDecision = { action: 'load' };

function resume(entry: LedgerEntry, why: 'stopped' | 'stopped_then_grew' | 'appended'): LedgerDecision {
  const { byteOffset, line, documents, rejected } = entry;
  return { action: 'resume', from: { byteOffset, line, documents, rejected }, why };
}

function isJson(text: string): boolean {
  try {
    JSON.parse(text);
    return true;
  } catch {
    return false;
  }
}

/** The decision for `input` given its ledger entry (null: none) and the evidence gathered so far. */
export function decideLedger(
  input: LedgerInput,
  entry: LedgerEntry | null,
  evidence: LedgerEvidence = {},
): LedgerDecision {
  if (input.stream || entry === null) return LOAD;
  if (entry.status === 'complete') {
    if (input.size === entry.size) {
      if (sameTime(entry.mtimeMs, input.mtimeMs)) return { action: 'skip', by: 'time' };
      if (entry.sha256 === null) return LOAD;
      if (evidence.contentSha256 === undefined)
        return { action: 'check', evidence: 'content_hash', bytes: input.size };
      return evidence.contentSha256 === entry.sha256 ? { action: 'skip', by: 'content' } : LOAD;
    }
    // Grown, and its first bytes are what the last run read whole: only appended to. Read again from the start,
    // its documents would be loaded again, and for records without a version (carts, fulfillment orders without updated_at) the
    // file's older states would replace newer ones loaded since from other files; its old rejections would be
    // recorded again at every run.
    if (entry.sha256 === null || input.size < entry.size) return LOAD;
    const prefix = evidence.appendedPrefix;
    if (prefix === undefined) return { action: 'check', evidence: 'appended_prefix', bytes: entry.size };
    if (prefix.sha256 !== entry.sha256) return LOAD;
    // An old content that did not end at a line break is judged by its last line: a complete JSON value was
    // loaded, and is not read again once a newline completes it (the piece is skipped because it starts
    // before the old end); a cut-short one was rejected, so the file is read again whole and the completed
    // document loads.
    if (prefix.endsLine || (prefix.lastLine !== null && isJson(prefix.lastLine)))
      return resume(entry, 'appended');
    return LOAD;
  }
  if (input.size === entry.size && sameTime(entry.mtimeMs, input.mtimeMs)) return resume(entry, 'stopped');
  // Changed since a run stopped inside it: resumed when the bytes that run read are still the same (a
  // capture still being written). A run killed outright left no hash, and the file is read again whole.
  if (entry.sha256 === null || input.size < entry.byteOffset) return LOAD;
  if (evidence.readPrefixSha256 === undefined)
    return { action: 'check', evidence: 'read_prefix_hash', bytes: entry.byteOffset };
  return evidence.readPrefixSha256 === entry.sha256 ? resume(entry, 'stopped_then_grew') : LOAD;
}
