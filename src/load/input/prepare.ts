import { Normalizer } from '../../normalize/index.js';
import { Batch, type PreparedBatch } from '../batch.js';
import { DOCUMENTS_STREAM, KIND, loadDocument } from '../documents.js';
import type { LedgerEntry } from './ledger.js';
import { DocumentReader, type Format } from './reader.js';
import type { Piece } from './splitters.js';

/**
 * The reading half of `store-sync ingest`, with no DuckDB in it, so it runs in worker threads
 * (input/worker.ts) while the main thread loads earlier batches: files are read, split, parsed, detected
 * and normalized into batches, each sealed and its raw landing compressed. Batches span files, so a
 * folder of small files makes few, large batches.
 *
 * Several workers share one job by batch: every worker reads and splits all of it (cheap: no decoding),
 * so all agree on where each batch starts and ends and on every record's landing sequence number, and
 * each parses and normalizes only the batches whose index falls to it. Only the first share hashes the
 * files: it reports each file's digest as soon as it has read the file (`onDigest`), and the batch that
 * ends a file, whichever share made it, carries a null digest that the caller fills from that report
 * (input/parallel.ts). The same function runs alone (one share of one) on the main thread for stdin.
 */

/** One file to read, decided beforehand from the ledger (docs/ingest.md). */
export interface FilePlan {
  /** Index of the file among the run's inputs (its results are reported in input order). */
  index: number;
  /** Absolute path, or '-' for stdin. */
  path: string;
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
  /** This reader's share: batches whose index modulo `of` is `index`. */
  share: { index: number; of: number };
}

/** What one batch holds of one file; `done` when the file ends in this batch. */
export interface FileProgress {
  index: number;
  path: string;
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
     * beyond the one waiting there kept a third set of batch buffers (about 25 MB) for no gain in time
     * (200,000 documents, two rounds taken in turn: 12.9 to 13.0 s either way). On the loader's own
     * thread (stdin, small inputs) emitting is the write, which the next batch's reading overlaps.
     */
    untilEmitted?: boolean;
  } = {},
): Promise<void> {
  const { index: mine, of: readers } = job.share;
  const hashes = mine === 0;
  let seq = job.firstSeq;
  let batchIndex = 0;
  let batch: Batch | null = null;
  let documents = 0;
  let bytes = 0;
  let files: FileProgress[] = [];

  const open = () => {
    if (batchIndex % readers === mine)
      batch = new Batch(normalizer, { store: job.store, runId: job.runId, syncedAtMs: Date.now() }, seq);
  };
  // The file's entry in the current batch (a batch may end a file without holding any of its pieces).
  const touch = (file: FilePlan): FileProgress => {
    let progress = files.at(-1);
    if (progress?.index !== file.index) {
      progress = { index: file.index, path: file.path, documents: 0, rejections: 0, byteOffset: 0, line: 0 };
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

  const take = (file: FilePlan, piece: Piece) => {
    const progress = touch(file);
    const own = batch as Batch | null;
    if (own) {
      const source = `${file.path === '-' ? 'stdin' : file.path}:${piece.line}`;
      const kind = piece.error ? KIND.unreadable : KIND.document;
      const landed = own.land(DOCUMENTS_STREAM, piece.error ?? null, kind, source, piece.bytes);
      progress.rejections += loadDocument(own, landed, piece.bytes);
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
      const reader = new DocumentReader(file.path, file.path === '-' ? undefined : file.entry.size, {
        hash: hashes,
        signal,
      });
      try {
        for await (const piece of named(file.path, reader.pieces(), signal)) {
          // Read before: the pieces that start before the saved position. That is those that end by it, for a
          // run resumed where it stopped; and, for a file that grew from a last line without its newline, that
          // line too, which now ends one newline later (see ingest.ts, appendedTo).
          if (piece.start < skipUntil) continue;
          take(file, piece);
          if (documents >= job.batchDocuments || bytes >= job.batchBytes) await send();
        }
      } catch (error) {
        // Stopped while reading stdin: its documents read so far are sent, to be committed with the rest.
        if (error instanceof IngestStopped && file.path === '-' && documents > 0) await send();
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
