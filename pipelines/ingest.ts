import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { DOCUMENTS_STREAM, KIND, loadDocument } from '../src/load/documents.js';
import type { Batch, BatchCounts, Transaction, Warehouse } from '../src/load/index.js';
import { expandInputs, type InputFile } from '../src/load/input/inputs.js';
import {
  hashFile,
  type LedgerEntry,
  readLedger,
  sameTime,
  writeLedgerSql,
} from '../src/load/input/ledger.js';
import { DocumentReader } from '../src/load/input/reader.js';
import type { Logger } from '../src/log.js';

/**
 * `store-sync ingest`: documents from files, folders or stdin into the warehouse (docs/ingest.md).
 * Documents go to DuckDB in batches of thousands; a transaction takes several batches and the ledger
 * position of every file they touched, so a killed run resumes after the last commit and a finished file
 * is never read twice. While DuckDB merges one batch, the next one is parsed and normalized.
 */

export interface IngestOptions {
  store: string;
  runId: string;
  logger: Logger;
  /** Documents per batch (default 5000), raw characters per batch (default 32 M), documents per commit (default 200000: each commit checkpoints, so fewer, larger commits load much faster). */
  batchDocuments?: number;
  batchBytes?: number;
  commitDocuments?: number;
}

export interface IngestFileResult {
  path: string;
  status: 'loaded' | 'resumed' | 'unchanged';
  documents: number;
  rejections: number;
}

export interface IngestSummary {
  files: IngestFileResult[];
  documents: number;
  records: number;
  rows: number;
  rejections: number;
  bytes: number;
}

class IngestRun {
  private tx!: Transaction;
  /** Settles once `tx` is open: a commit and the next BEGIN run while the next batch is being built. */
  private txReady: Promise<void> = Promise.resolve();
  private batch!: Batch;
  private pending: Promise<BatchCounts> | null = null;
  private batchDocs = 0;
  private batchChars = 0;
  private txDocs = 0;
  readonly summary: IngestSummary = { files: [], documents: 0, records: 0, rows: 0, rejections: 0, bytes: 0 };

  constructor(
    private readonly warehouse: Warehouse,
    private readonly options: IngestOptions,
  ) {}

  async start(): Promise<void> {
    this.tx = await this.warehouse.begin();
    this.batch = this.newBatch();
  }

  private newBatch(): Batch {
    return this.warehouse.newBatch({
      store: this.options.store,
      runId: this.options.runId,
      syncedAtMs: Date.now(),
    });
  }

  private account(counts: BatchCounts): void {
    this.summary.records += counts.records;
    this.summary.rows += counts.rows;
    this.summary.rejections += counts.rejections;
  }

  /**
   * Hands the batch to the transaction and starts the next. One batch is merged while the next is built;
   * with `commit`, the transaction commits (and the next begins) while the next batch is built too.
   */
  private async rotate(commit: boolean): Promise<void> {
    await this.txReady;
    const writing = this.tx.write(this.batch);
    writing.catch(() => undefined);
    await this.settle();
    this.pending = writing;
    this.batch = this.newBatch();
    this.batchDocs = 0;
    this.batchChars = 0;
    if (!commit) return;
    const tx = this.tx;
    const last = this.pending;
    this.pending = null;
    this.txDocs = 0;
    this.txReady = (async () => {
      this.account(await last);
      await tx.commit();
      this.tx = await this.warehouse.begin();
    })();
    this.txReady.catch(() => undefined);
  }

  private async settle(): Promise<void> {
    if (!this.pending) return;
    const pending = this.pending;
    this.pending = null;
    this.account(await pending);
  }

  async finish(): Promise<void> {
    await this.rotate(false);
    await this.settle();
    await this.txReady;
    await this.tx.commit();
    this.warehouse.discard(this.batch);
  }

  async abort(): Promise<void> {
    this.warehouse.discard(this.batch);
    await this.pending?.catch(() => undefined);
    await this.txReady.catch(() => undefined);
    await this.tx.rollback();
  }

  async file(input: InputFile): Promise<void> {
    const { store, runId, logger } = this.options;
    const stdin = input.path === '-';
    await this.txReady;
    const ledger = stdin
      ? null
      : await this.tx.read((connection) => readLedger(connection, store, input.path));
    const result: IngestFileResult = { path: input.path, status: 'loaded', documents: 0, rejections: 0 };
    this.summary.files.push(result);
    if (ledger && ledger.size === input.size && (await this.unchanged(input, ledger))) {
      result.status = 'unchanged';
      logger.debug('ingest_file_unchanged', { path: input.path });
      return;
    }
    const resume =
      ledger?.status === 'partial' && ledger.size === input.size && sameTime(ledger.mtimeMs, input.mtimeMs);
    const skipUntil = resume ? ledger.byteOffset : 0;
    if (resume) result.status = 'resumed';
    const entry: LedgerEntry = {
      size: input.size,
      mtimeMs: input.mtimeMs,
      sha256: null,
      status: 'partial',
      byteOffset: skipUntil,
      line: resume ? ledger.line : 0,
      documents: resume ? ledger.documents : 0,
      rejected: resume ? ledger.rejected : 0,
    };
    const reader = new DocumentReader(input.path);
    const limitDocs = this.options.batchDocuments ?? 5000;
    const limitChars = this.options.batchBytes ?? 32 << 20;
    const limitTx = this.options.commitDocuments ?? 200_000;
    for await (const piece of reader.pieces()) {
      if (piece.end <= skipUntil) continue;
      const source = `${stdin ? 'stdin' : input.path}:${piece.line}`;
      const kind = piece.error ? KIND.unreadable : KIND.document;
      const landed = this.batch.land(DOCUMENTS_STREAM, piece.error ?? null, kind, source, piece.bytes);
      const rejected = loadDocument(this.batch, landed, piece.text);
      result.documents++;
      entry.documents++;
      if (rejected) {
        result.rejections++;
        entry.rejected++;
      }
      entry.byteOffset = piece.end;
      entry.line = piece.line;
      this.batchChars += piece.text.length;
      if (++this.batchDocs >= limitDocs || this.batchChars >= limitChars) {
        if (!stdin)
          this.batch.after.push(writeLedgerSql(store, input.path, entry, runId, this.batch.meta.syncedAtMs));
        this.txDocs += this.batchDocs;
        await this.rotate(this.txDocs >= limitTx);
      }
    }
    this.summary.documents += result.documents;
    this.summary.bytes += reader.bytesRead;
    const done: LedgerEntry = { ...entry, status: 'complete', sha256: reader.digest() };
    if (stdin) done.size = reader.bytesRead;
    const ledgerPath = stdin ? `stdin:${done.sha256}` : input.path;
    this.batch.after.push(writeLedgerSql(store, ledgerPath, done, runId, this.batch.meta.syncedAtMs));
    logger.info('ingest_file', {
      path: input.path,
      status: result.status,
      documents: result.documents,
      rejections: result.rejections,
      format: reader.format ?? 'empty',
      gzip: reader.gzip,
    });
  }

  /** Same size: unchanged when the time matches too, or when the content hash does (a touched file). */
  private async unchanged(input: InputFile, ledger: LedgerEntry): Promise<boolean> {
    if (ledger.status !== 'complete') return false;
    if (sameTime(ledger.mtimeMs, input.mtimeMs)) return true;
    return ledger.sha256 !== null && (await hashFile(input.path)) === ledger.sha256;
  }
}

export async function ingestPaths(
  warehouse: Warehouse,
  inputs: string[],
  options: IngestOptions,
): Promise<IngestSummary> {
  const files = await expandInputs(inputs);
  const run = new IngestRun(warehouse, options);
  await run.start();
  try {
    for (const file of files) await run.file(file);
    await run.finish();
  } catch (error) {
    await run.abort();
    if (error instanceof StoreSyncError) throw error;
    throw new StoreSyncError(ERROR_CODES.INGEST, `ingest failed: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return run.summary;
}
