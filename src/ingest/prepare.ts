import { isUtf8 } from 'node:buffer';
import { BatchBuilder, type PreparedBatch } from '../load/batch-builder.js';
import { DOCUMENTS_STREAM, type DocumentTally, KIND, loadDocument } from '../load/documents.js';
import { Normalizer, type SchemaContract } from '../normalize/index.js';
import type { LedgerEntry } from './ledger-decision.js';
import { DocumentReader, type Format } from './reader.js';
import type { Piece } from './splitters.js';

/**
 * The reading half of `store-sync ingest`, with no DuckDB in it, so it runs in worker threads
 * (worker.ts) while the main thread loads earlier batches: files are read, split, parsed, detected
 * and normalized into batches, each sealed and its raw landing compressed. Batches span files, so a
 * folder of small files makes few, large batches.
 *
 * Several workers share one job by batch: every worker reads and splits all of it (cheap: no decoding),
 * so all agree on where each batch starts and ends and on every record's landing sequence number, and
 * each parses and normalizes only the batches whose index falls to it. Only the first share hashes the
 * files: it reports each file's digest as soon as it has read the file (`onDigest`), and the batch that
 * ends a file, whichever share made it, carries a null digest that the caller fills from that report
 * (parallel.ts). The same function runs alone (one share of one) on the main thread for stdin.
 */

/** One file to read, decided beforehand from the ledger (docs/ingest.md). */
export interface FilePlan {
  /** Index of the file among the run's inputs (its results are reported in input order). */
  index: number;
  /** Absolute path, or '-' for stdin. */
  path: string;
  /**
   * Read in one pass, with no size and no position to resume from: stdin, and any input that is not a regular
   * file (a named pipe, `<(…)`, a device). Such inputs are read on the main thread. '-' is always one.
   */
  stream?: boolean;
  status: 'loaded' | 'resumed';
  /** Where reading starts: the ledger entry of a resumed file, or a fresh one. */
  entry: LedgerEntry;
}

export interface PrepareJob {
  store: string;
  runId: string;
  /** Raw landing sequence number of the first record. */
  firstSeq: number;
  files: FilePlan[];
  batchDocuments: number;
  /** Raw bytes per batch. */
  batchBytes: number;
  /** Largest document read; a larger one is rejected with its size (docs/ingest.md). */
  maxDocumentBytes?: number;
  /** What to do with fields the model does not map (`streams.documents.schemaContract`); `evolve` when absent. */
  contract?: SchemaContract;
  /** This reader's share: batches whose index modulo `of` is `index`. */
  share: { index: number; of: number };
}

/**
 * What one batch holds of one file; `done` when the file ends in this batch. Skipped documents and unknown
 * version labels are counted only when met (DocumentTally).
 */
export interface FileProgress extends DocumentTally {
  index: number;
  path: string;
  /** See FilePlan.stream. */
  stream: boolean;
  documents: number;
  rejections: number;
  /** Stream offset and line just past the batch's last piece of the file (meaningless when it has none). */
  byteOffset: number;
  line: number;
  /** `sha256` is null when this share does not hash (see above). */
  done?: { sha256: string | null; bytes: number; format: Format | 'empty'; gzip: boolean };
}

/** One prepared batch, in job order (`batchIndex`), with what it holds of each file it touches. */
export interface PreparedEvent {
  batchIndex: number;
  prepared: PreparedBatch;
  documents: number;
  files: FileProgress[];
  /**
   * Hands the batch's buffers back to the normalizer that made them, once they are loaded (see
   * TableRows.reuse); set on the thread that loads the batch, never sent between threads.
   */
  giveBack?: () => void;
}

/**
 * Thrown to stop reading at a batch boundary (by the caller's `emit`, or by the reader of stdin when the
 * signal fires): the batches accepted before it are kept. The one being built is dropped when it is of files,
 * which the next run resumes from their saved positions; a batch holding stdin is sent first, because stdin
 * cannot be read again.
 */
export class IngestStopped extends Error {
  constructor() {
    super('the ingest was interrupted');
  }
}

export async function prepareFiles(
  job: PrepareJob,
  emit: (event: PreparedEvent) => Promise<void>,
  {
    onDigest,
    signal,
    normalizer = new Normalizer(),
    untilEmitted = false,
  }: {
    /** The first share's report of a file's content hash, made when the file has been read whole. */
    onDigest?: (file: number, sha256: string) => void;
    /** Stops the reading of stdin (only on the main thread: a signal cannot be sent to a worker). */
    signal?: AbortSignal | undefined;
    /** The normalizer to fill (a worker's, which takes loaded buffers back); a new one by default. */
    normalizer?: Normalizer;
    /**
     * Starts a batch only once the one before has been emitted. In a worker, emitting waits for the
     * loader's credit, and what overlaps with the loading is this thread as a whole: building a batch
     * beyond the one waiting there would keep a third set of batch buffers (about 25 MB) for no gain in
     * time (docs/performance.md, "Settings and the measurements behind them"). On the loader's own
     * thread (stdin, small inputs) emitting is the write, which the next batch's reading overlaps.
     */
    untilEmitted?: boolean;
  } = {},
): Promise<void> {
  const { index: mine, of: readers } = job.share;
  const hashes = mine === 0;
  let seq = job.firstSeq;
  let batchIndex = 0;
  let batch: BatchBuilder | null = null;
  let documents = 0;
  let bytes = 0;
  let files: FileProgress[] = [];

  const open = () => {
    if (batchIndex % readers === mine)
      batch = new BatchBuilder(
        normalizer,
        { store: job.store, runId: job.runId, syncedAtMs: Date.now() },
        seq,
      );
  };
  // The file's entry in the current batch (a batch may end a file without holding any of its pieces).
  const touch = (file: FilePlan): FileProgress => {
    let progress = files.at(-1);
    if (progress?.index !== file.index) {
      progress = {
        index: file.index,
        path: file.path,
        stream: isStream(file),
        documents: 0,
        rejections: 0,
        byteOffset: 0,
        line: 0,
      };
      files.push(progress);
    }
    return progress;
  };

  // The batch handed over last: its raw landing is compressed (on libuv's pool) and it is emitted while
  // the next batch is built; only one is in flight, so memory holds at most two batches here. A worker
  // waits instead (`untilEmitted`, see its option).
  let inFlight: Promise<void> = Promise.resolve();
  const send = async () => {
    const current = batch;
    const counts = { batchIndex, documents, files };
    batch = null;
    batchIndex++;
    documents = 0;
    bytes = 0;
    files = [];
    open();
    if (!current) return;
    const preparing = current.prepare();
    const previous = inFlight;
    inFlight = (async () => {
      const prepared = await preparing;
      await previous;
      // On this thread (stdin, small inputs) the loader hands the buffers straight back.
      await emit({ prepared, ...counts, giveBack: () => normalizer.reuse(prepared.tables) });
    })();
    inFlight.catch(() => undefined);
    await (untilEmitted ? inFlight : previous);
  };

  const take = (file: FilePlan, piece: Piece, skipped: number) => {
    const progress = touch(file);
    const own = batch as BatchBuilder | null;
    if (own) {
      const source = `${file.path === '-' ? 'stdin' : file.path}:${piece.line}`;
      // Bytes that are not UTF-8 make the document unreadable here, before either way of reading it (the fast
      // path or JSON.parse, which would store U+FFFD in their place), and its reason is landed with it, so
      // that a rebuild rejects it again the same way.
      const error = piece.error ?? (isUtf8(piece.bytes) ? undefined : invalidUtf8Message(piece, skipped));
      const kind = error ? KIND.unreadable : KIND.document;
      const landed = own.land(DOCUMENTS_STREAM, error ?? null, kind, source, piece.bytes);
      progress.rejections += loadDocument(own, landed, piece.bytes, progress, job.contract);
    }
    seq++;
    progress.documents++;
    progress.byteOffset = piece.end;
    progress.line = piece.line;
    documents++;
    bytes += piece.bytes.length;
  };

  open();
  try {
    await readAll();
  } catch (error) {
    // The batch in flight may be being written: the caller rolls back only after it has settled.
    await inFlight.catch(() => undefined);
    throw error;
  }
  await send();
  await inFlight;

  async function readAll(): Promise<void> {
    for (const file of job.files) {
      const skipUntil = file.status === 'resumed' ? file.entry.byteOffset : 0;
      const reader = new DocumentReader(file.path, isStream(file) ? undefined : file.entry.size, {
        hash: hashes,
        signal,
        stream: isStream(file),
        ...(job.maxDocumentBytes === undefined ? {} : { maxDocumentBytes: job.maxDocumentBytes }),
      });
      try {
        for await (const piece of named(file.path, reader.pieces(), signal)) {
          // Read before: the pieces that start before the saved position. That is those that end by it, for a
          // run resumed where it stopped; and, for a file that grew from a last line without its newline,
          // that line too, which now ends one newline later (see ingest.ts, appendedTo).
          if (piece.start < skipUntil) continue;
          take(file, piece, reader.skipped);
          if (documents >= job.batchDocuments || bytes >= job.batchBytes) await send();
        }
      } catch (error) {
        // Stopped while reading stdin (or a pipe): its documents read so far are sent, to be committed with
        // the rest.
        if (error instanceof IngestStopped && isStream(file) && documents > 0) await send();
        throw error;
      }
      const sha256 = reader.digest();
      touch(file).done = {
        sha256,
        bytes: reader.bytesRead,
        format: reader.format ?? 'empty',
        gzip: reader.gzip,
      };
      if (sha256 !== null) onDigest?.(file.index, sha256);
    }
  }
}

/**
 * Where the first byte that is not UTF-8 lies in `bytes` (the start of the first ill-formed sequence:
 * a stray continuation byte, a sequence cut short, an overlong encoding, an encoded surrogate or a code
 * point beyond U+10FFFF), or -1 when they are all UTF-8. Used only once isUtf8 has said no.
 */
export function invalidUtf8At(bytes: Uint8Array): number {
  const n = bytes.length;
  let i = 0;
  while (i < n) {
    const c = bytes[i]!;
    if (c < 0x80) {
      i++;
      continue;
    }
    let follow: number;
    let low = 0x80;
    let high = 0xbf;
    if (c >= 0xc2 && c <= 0xdf) follow = 1;
    else if (c >= 0xe0 && c <= 0xef) {
      follow = 2;
      if (c === 0xe0) low = 0xa0;
      else if (c === 0xed) high = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      follow = 3;
      if (c === 0xf0) low = 0x90;
      else if (c === 0xf4) high = 0x8f;
    } else return i;
    if (i + follow >= n) return i;
    const second = bytes[i + 1]!;
    if (second < low || second > high) return i;
    for (let k = 2; k <= follow; k++) if ((bytes[i + k]! & 0xc0) !== 0x80) return i;
    i += follow + 1;
  }
  return -1;
}

/** The reason a document holding bytes that are not UTF-8 is rejected: where they are, in the input and in it. */
function invalidUtf8Message(piece: Piece, skipped: number): string {
  const at = Math.max(0, invalidUtf8At(piece.bytes));
  return `invalid UTF-8 at byte ${piece.start + skipped + at} of the input (byte ${at} of the document)`;
}

/** Whether an input is read in one pass, like stdin (see FilePlan.stream). */
export const isStream = (file: { path: string; stream?: boolean }): boolean =>
  file.stream === true || file.path === '-';

/**
 * The pieces of one input; a failure to read it (a broken .gz, a file gone) names the input, and a read
 * ended by the stop signal is the stop.
 */
async function* named<T>(path: string, pieces: AsyncIterable<T>, signal?: AbortSignal): AsyncGenerator<T> {
  try {
    yield* pieces;
  } catch (error) {
    if (signal?.aborted) throw new IngestStopped();
    const where = path === '-' ? 'stdin' : path;
    throw new Error(`cannot read ${where}: ${(error as Error).message}`, { cause: error });
  }
}
