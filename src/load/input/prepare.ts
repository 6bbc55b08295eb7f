import { Normalizer } from '../../normalize/index.js';
import { Batch, type PreparedBatch } from '../batch.js';
import { DOCUMENTS_STREAM, KIND, loadDocument } from '../documents.js';
import { type LedgerEntry, writeLedgerSql } from './ledger.js';
import { DocumentReader, type Format } from './reader.js';

/**
 * The reading half of `store-sync ingest`, with no DuckDB in it, so it can run in a worker thread
 * (input/worker.ts) while the main thread loads the previous batches: files are read, split, parsed,
 * detected and normalized into batches, each sealed and its raw landing compressed, with the ledger
 * statements that record how far into each file the batch reaches. The same function runs in-process for
 * stdin. Batches span files, so a folder of small files makes few, large batches.
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
  batchBytes: number;
}

/** A file read to its end. */
export interface FileRead {
  index: number;
  path: string;
  status: 'loaded' | 'resumed';
  documents: number;
  rejections: number;
  bytes: number;
  format: Format | 'empty';
  gzip: boolean;
}

/** One prepared batch, the documents it holds and the files it completes. */
export interface PreparedEvent {
  prepared: PreparedBatch;
  documents: number;
  filesRead: FileRead[];
}

export async function prepareFiles(
  job: PrepareJob,
  emit: (event: PreparedEvent) => Promise<void>,
): Promise<void> {
  const normalizer = new Normalizer();
  let nextSeq = job.firstSeq;
  const newBatch = () =>
    new Batch(normalizer, { store: job.store, runId: job.runId, syncedAtMs: Date.now() }, nextSeq);
  let batch = newBatch();
  let documents = 0;
  let chars = 0;
  let filesRead: FileRead[] = [];

  const send = async () => {
    nextSeq = batch.nextSeq;
    const prepared = await batch.prepare();
    const event: PreparedEvent = { prepared, documents, filesRead };
    batch = newBatch();
    documents = 0;
    chars = 0;
    filesRead = [];
    await emit(event);
  };

  for (const file of job.files) {
    const stdin = file.path === '-';
    const entry: LedgerEntry = { ...file.entry };
    const skipUntil = file.status === 'resumed' ? entry.byteOffset : 0;
    const read: FileRead = {
      index: file.index,
      path: file.path,
      status: file.status,
      documents: 0,
      rejections: 0,
      bytes: 0,
      format: 'empty',
      gzip: false,
    };
    const reader = new DocumentReader(file.path);
    for await (const piece of named(file.path, reader.pieces())) {
      if (piece.end <= skipUntil) continue;
      const source = `${stdin ? 'stdin' : file.path}:${piece.line}`;
      const kind = piece.error ? KIND.unreadable : KIND.document;
      const landed = batch.land(DOCUMENTS_STREAM, piece.error ?? null, kind, source, piece.bytes);
      const rejected = loadDocument(batch, landed, piece.text);
      read.documents++;
      entry.documents++;
      if (rejected) {
        read.rejections++;
        entry.rejected++;
      }
      entry.byteOffset = piece.end;
      entry.line = piece.line;
      chars += piece.text.length;
      if (++documents >= job.batchDocuments || chars >= job.batchBytes) {
        // stdin has no path to resume by: its ledger row is written once, when it has been read whole.
        if (!stdin)
          batch.after.push(writeLedgerSql(job.store, file.path, entry, job.runId, batch.meta.syncedAtMs));
        await send();
      }
    }
    read.bytes = reader.bytesRead;
    read.format = reader.format ?? 'empty';
    read.gzip = reader.gzip;
    const done: LedgerEntry = { ...entry, status: 'complete', sha256: reader.digest() };
    if (stdin) done.size = reader.bytesRead;
    const ledgerPath = stdin ? `stdin:${done.sha256}` : file.path;
    batch.after.push(writeLedgerSql(job.store, ledgerPath, done, job.runId, batch.meta.syncedAtMs));
    filesRead.push(read);
  }
  await send();
}

/** The pieces of one input; a failure to read it (a broken .gz, a file gone) names the input. */
async function* named<T>(path: string, pieces: AsyncIterable<T>): AsyncGenerator<T> {
  try {
    yield* pieces;
  } catch (error) {
    const where = path === '-' ? 'stdin' : path;
    throw new Error(`cannot read ${where}: ${(error as Error).message}`, { cause: error });
  }
}
