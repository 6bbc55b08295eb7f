import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { expandInputs, type InputFile } from '../src/ingest/inputs.js';
import {
  decideFile,
  partialPrefixHash,
  readLedgers,
  touchLedgerSql,
  writeLedgerSql,
  writeLedgersSql,
} from '../src/ingest/ledger.js';
import { type LedgerEntry, streamLedgerKey } from '../src/ingest/ledger-decision.js';
import { prepareInWorkers, workersFor } from '../src/ingest/parallel.js';
import {
  type FilePlan,
  type FileProgress,
  IngestStopped,
  isStream,
  type PreparedEvent,
  type PrepareJob,
  prepareFiles,
} from '../src/ingest/prepare.js';
import { addTally, type DocumentTally, type UnknownVersionCount } from '../src/load/documents.js';
import type { BatchCounts, BatchWriter, Transaction, Warehouse } from '../src/load/index.js';
import { INGEST_BATCH_DOCUMENTS, RUNTIME_PROFILES } from '../src/load/runtime-profile.js';
import { logNewFields, type NewFields } from '../src/load/schema-changes.js';
import { newFieldsOfRun } from '../src/load/status.js';
import type { LogFields, Logger } from '../src/log.js';
import type { SchemaContract } from '../src/normalize/index.js';

/**
 * `store-sync ingest`: documents from files, folders or stdin into the warehouse (docs/ingest.md).
 * First the ledger decides, per file, whether it is unchanged (skipped), partly read (resumed) or new
 * (src/ingest/ledger-decision.ts).
 * Then the files are read, parsed and normalized in worker threads (src/ingest/prepare.ts) into batches of
 * thousands of documents, while this thread writes earlier batches into DuckDB. Each batch carries the
 * ledger position of every file it touched and a transaction takes several batches, so a killed run
 * resumes after the last commit and a finished file is never read twice. stdin is read on this thread.
 */

export interface IngestOptions {
  store: string;
  runId: string;
  logger: Logger;
  /** Documents per batch (default INGEST_BATCH_DOCUMENTS, runtime-profile.ts), raw characters per batch (default 32 M), documents per commit (default 200000: each commit checkpoints, so fewer, larger commits load much faster). */
  batchDocuments?: number;
  batchBytes?: number;
  commitDocuments?: number;
  /**
   * Hold customers until each commit (src/load/held-units.ts; default off). The tables are the same either
   * way; held, a million documents peaked 50 to 70 MB higher, past the ingest's 512 MB, for no measured gain
   * at that size (docs/performance.md, "Issue 31: customers held until the commit").
   */
  holdUnits?: boolean;
  /**
   * Worker threads that read, parse and normalize files (default: one per core, at most 4, for inputs of
   * 16 MB or more; none below); 0 does it on this thread, as for stdin.
   */
  workers?: number;
  /** Largest document read (default 64 MB, `maxDocumentBytes`): a larger one is rejected with its size. */
  maxDocumentBytes?: number;
  /** The inputs already expanded (by the command, which checks them before opening the warehouse). */
  files?: InputFile[];
  /**
   * What to do with fields the model does not map (`streams.documents.schemaContract`, `--schema-contract`):
   * keep them in `_extra` (`evolve`, the default), reject the documents that carry any (`freeze`), or drop
   * them (`discard`).
   */
  contract?: SchemaContract;
  /**
   * Stops the run at the next batch boundary (Ctrl-C, SIGTERM): what was read up to there commits with its
   * ledger positions, so the next run resumes after it, and the summary says `interrupted`.
   */
  signal?: AbortSignal;
  /** Called after each batch is accepted, and once the plan is made: what a progress bar and a heartbeat show. */
  onProgress?: (progress: IngestProgress) => void;
}

/** How far an ingest has read: bytes of its inputs, documents, files. */
export interface IngestProgress {
  /** Bytes read of the inputs to read (a resumed file from where it resumes). */
  bytesRead: number;
  /** The bytes to read; null when an input has no size known in advance (stdin, a pipe). */
  bytesTotal: number | null;
  documents: number;
  rejections: number;
  filesDone: number;
  filesTotal: number;
  /** Where the reading is: the first input before any batch, then the input of the batch accepted last. */
  reading: string | null;
}

export interface IngestFileResult {
  path: string;
  /**
   * interrupted: the run was stopped before the file's end, and the next run resumes it where this one
   * stopped; not_started: stopped before the file was begun.
   */
  status: 'loaded' | 'resumed' | 'unchanged' | 'interrupted' | 'not_started';
  documents: number;
  rejections: number;
  /**
   * Documents skipped inside webhook or event envelopes (no table, not recognised), by object or event type;
   * present only when some were. Not rejections.
   */
  skipped?: Record<string, number>;
  /** Documents read under a version label store-sync does not know, by label; present only when some were. */
  unknownVersions?: Record<string, number>;
}

export interface IngestSummary {
  files: IngestFileResult[];
  documents: number;
  records: number;
  rows: number;
  rejections: number;
  /** The files' skipped documents and unknown version labels, added up; present only when some were. */
  skipped?: Record<string, number>;
  unknownVersions?: Record<string, number>;
  /**
   * Field paths the model does not map that this run was the first to see, per table (their values are in
   * the rows' `_extra`, the paths in `_schema_changes`); empty when none.
   */
  newFields: NewFields[];
  bytes: number;
  /** Worker threads that read the files (0: they were read on the main thread). */
  workers: number;
  /** Stopped by `signal` before every file was read; what was read is committed. */
  interrupted: boolean;
}

/** A log line held until its transaction commits: event, fields, and `warn` for a warning (info otherwise). */
type LogLine = [event: string, fields: LogFields, level?: 'warn'];

/** Counts by name as a JSON object (own properties, whatever the names: `__proto__` included). */
const counted = (counts: Map<string, number>): Record<string, number> => Object.fromEntries(counts);

const labelCounts = (labels: Map<string, UnknownVersionCount>): Record<string, number> =>
  Object.fromEntries([...labels].map(([label, seen]) => [label, seen.documents]));

class IngestRun {
  private tx!: Transaction;
  /** Settles once `tx` is open: a commit and the next BEGIN run while the next batch is being built. */
  private txReady: Promise<void> = Promise.resolve();
  private pending: Promise<BatchCounts> | null = null;
  private txDocs = 0;
  /** Documents the fast path read (normalize/fast.ts): none when it is turned off (debug log). */
  private fastPathDocuments = 0;
  private aborted = false;
  /** Ledger entries of the files being read, by input index, as the committed batches leave them. */
  private readonly ledger = new Map<number, LedgerEntry>();
  readonly summary: IngestSummary = {
    files: [],
    documents: 0,
    records: 0,
    rows: 0,
    rejections: 0,
    newFields: [],
    bytes: 0,
    workers: 0,
    interrupted: false,
  };
  /**
   * Log lines about files whose last documents are in the open transaction: written when it commits, so a
   * run killed before then has not said it loaded what it then lost.
   */
  private uncommitted: LogLine[] = [];
  /** Inputs whose last document has been accepted (a stopped run reports the others as interrupted). */
  private readonly finished = new Set<number>();
  /** What each file read so far skipped and read under unknown labels, by input index (made when met). */
  private readonly tallies = new Map<number, DocumentTally>();
  /** The same, over every file of the run. */
  private readonly total: DocumentTally = {};
  /** The files to read, as planned (progress is measured against them). */
  private plans: FilePlan[] = [];
  private documentsRead = 0;
  private rejectionsRead = 0;
  private reading: string | null = null;

  constructor(
    private readonly warehouse: Warehouse,
    private readonly options: IngestOptions,
  ) {}

  async start(): Promise<void> {
    this.tx = await this.warehouse.begin({ holdUnits: this.options.holdUnits });
  }

  /** What to do with each input, from the ledger: skip it, resume it, or read it whole. */
  async plan(files: InputFile[]): Promise<FilePlan[]> {
    const { store, logger } = this.options;
    const plans: FilePlan[] = [];
    // Every file's entry first, in a few queries: a file whose path, size and time match a complete entry is
    // then skipped without being opened.
    let queries = 0;
    const paths = files.filter((f) => !isStream(f)).map((f) => f.path);
    const ledgers = await this.tx.read((c) => readLedgers(c, store, paths, () => queries++));
    let unchanged = 0;
    const touched: [string, number][] = [];
    for (const [index, input] of files.entries()) {
      const stream = isStream(input);
      const ledger = stream ? null : (ledgers.get(input.path) ?? null);
      const result: IngestFileResult = { path: input.path, status: 'loaded', documents: 0, rejections: 0 };
      this.summary.files.push(result);
      const decision = await decideFile(
        { path: input.path, size: input.size, mtimeMs: input.mtimeMs, stream },
        ledger,
      );
      if (decision.action === 'skip') {
        result.status = 'unchanged';
        unchanged++;
        logger.debug('ingest_file_unchanged', { path: input.path, by: decision.by });
        if (decision.by === 'content') touched.push([input.path, input.mtimeMs]);
        continue;
      }
      const from = decision.action === 'resume' ? decision.from : null;
      if (from) result.status = 'resumed';
      plans.push({
        index,
        path: input.path,
        stream,
        status: from ? 'resumed' : 'loaded',
        entry: {
          size: input.size,
          mtimeMs: input.mtimeMs,
          sha256: null,
          status: 'partial',
          byteOffset: from?.byteOffset ?? 0,
          line: from?.line ?? 0,
          documents: from?.documents ?? 0,
          rejected: from?.rejected ?? 0,
          // What the part read before skipped stays counted in the file's entry.
          ...(from && ledger?.skipped ? { skipped: new Map(ledger.skipped) } : {}),
        },
      });
    }
    if (touched.length) await this.tx.run(touchLedgerSql(store, touched));
    for (const plan of plans) this.ledger.set(plan.index, { ...plan.entry });
    this.plans = plans;
    this.reading = plans[0]?.path ?? null;
    this.report();
    logger.debug('ingest_planned', {
      files: files.length,
      unchanged,
      to_read: plans.length,
      ledger_queries: queries,
    });
    return plans;
  }

  job(files: FilePlan[]): Omit<PrepareJob, 'share'> {
    return {
      store: this.options.store,
      runId: this.options.runId,
      firstSeq: this.warehouse.nextSeq(),
      files,
      batchDocuments: this.options.batchDocuments ?? INGEST_BATCH_DOCUMENTS,
      batchBytes: this.options.batchBytes ?? 32 << 20,
      ...(this.options.maxDocumentBytes === undefined
        ? {}
        : { maxDocumentBytes: this.options.maxDocumentBytes }),
      ...(this.options.contract === undefined ? {} : { contract: this.options.contract }),
    };
  }

  /**
   * One prepared batch, in order: the ledger rows of the files it touched join its transaction, then it is
   * written while the next is prepared; the transaction commits every so many documents.
   */
  readonly accept = async (event: PreparedEvent): Promise<void> => {
    if (this.aborted) throw new Error('the ingest was stopped');
    // After a stop, batches of files are left for the next run to resume; one holding stdin (or a pipe) is
    // kept, as it cannot be read again.
    if (this.options.signal?.aborted && !event.files.some((f) => f.stream)) throw new IngestStopped();
    await this.txReady;
    const batch = this.warehouse.adopt(event.prepared, event.giveBack);
    const { store, runId, logger } = this.options;
    const at = event.prepared.meta.syncedAtMs;
    // The ledger rows of every file the batch touched, written with it in two statements.
    const rows: [string, LedgerEntry][] = [];
    for (const progress of event.files) {
      const entry = this.ledger.get(progress.index)!;
      const result = this.summary.files[progress.index]!;
      entry.documents += progress.documents;
      entry.rejected += progress.rejections;
      result.documents += progress.documents;
      result.rejections += progress.rejections;
      if (progress.skipped || progress.unknownVersions) this.tally(progress, entry, result);
      if (progress.documents) {
        entry.byteOffset = progress.byteOffset;
        entry.line = progress.line;
      }
      const stream = progress.stream;
      if (!progress.done) {
        // stdin and pipes have no path to resume by: their ledger row is written once, when read whole.
        if (!stream) rows.push([progress.path, { ...entry }]);
        continue;
      }
      this.finished.add(progress.index);
      const { sha256, bytes, format, gzip } = progress.done;
      const done: LedgerEntry = { ...entry, status: 'complete', sha256 };
      if (stream) done.size = bytes;
      rows.push([stream ? streamLedgerKey(progress.path, sha256) : progress.path, done]);
      this.summary.documents += result.documents;
      this.summary.bytes += bytes;
      this.fileLine(progress.index, progress.path, result, { format, gzip });
    }
    batch.after.push(writeLedgersSql(store, rows, runId, at));
    this.documentsRead += event.documents;
    for (const progress of event.files) this.rejectionsRead += progress.rejections;
    this.reading = event.files.at(-1)?.path ?? this.reading;
    this.report();
    logger.debug('ingest_batch', { batch: event.batchIndex, documents: event.documents });
    this.fastPathDocuments += event.prepared.fastPathDocuments;
    this.txDocs += event.documents;
    await this.rotate(batch, this.txDocs >= (this.options.commitDocuments ?? 200_000));
  };

  /**
   * The run's progress to `onProgress`: a file's bytes read are its ledger position past where this run began
   * (at most its size: a .gz file's position counts the bytes it inflates to), all of it once it is finished.
   */
  private report(): void {
    if (!this.options.onProgress) return;
    let bytesRead = 0;
    let bytesTotal: number | null = 0;
    for (const plan of this.plans) {
      const size = Math.max(0, plan.entry.size - plan.entry.byteOffset);
      const entry = this.ledger.get(plan.index)!;
      const read = Math.max(0, entry.byteOffset - plan.entry.byteOffset);
      if (plan.stream) {
        bytesTotal = null;
        bytesRead += read;
      } else {
        if (bytesTotal !== null) bytesTotal += size;
        bytesRead += this.finished.has(plan.index) ? size : Math.min(size, read);
      }
    }
    this.options.onProgress({
      bytesRead,
      bytesTotal,
      documents: this.documentsRead,
      rejections: this.rejectionsRead,
      filesDone: this.finished.size,
      filesTotal: this.plans.length,
      reading: this.reading,
    });
  }

  /** A batch's skipped documents and unknown labels, into its file's ledger entry, result and the run's total. */
  private tally(progress: FileProgress, entry: LedgerEntry, result: IngestFileResult): void {
    let file = this.tallies.get(progress.index);
    if (!file) {
      file = {};
      this.tallies.set(progress.index, file);
    }
    addTally(file, progress);
    addTally(this.total, progress);
    if (progress.skipped) {
      entry.skipped ??= new Map();
      addTally({ skipped: entry.skipped }, { skipped: progress.skipped });
    }
    if (file.skipped) result.skipped = counted(file.skipped);
    if (file.unknownVersions) result.unknownVersions = labelCounts(file.unknownVersions);
    if (this.total.skipped) this.summary.skipped = counted(this.total.skipped);
    if (this.total.unknownVersions) this.summary.unknownVersions = labelCounts(this.total.unknownVersions);
  }

  private account(counts: BatchCounts): void {
    this.summary.records += counts.records;
    this.summary.rows += counts.rows;
    this.summary.rejections += counts.rejections;
  }

  /**
   * Hands the batch to the transaction. One batch is merged while the next is built; with `commit`, the
   * transaction commits (and the next begins) while the next batch is built too.
   */
  private async rotate(batch: BatchWriter, commit: boolean): Promise<void> {
    const writing = this.tx.write(batch);
    writing.catch(() => undefined);
    await this.settle();
    this.pending = writing;
    if (!commit) return;
    const tx = this.tx;
    const last = this.pending;
    this.pending = null;
    this.txDocs = 0;
    const logs = this.takeLogs();
    this.txReady = (async () => {
      this.account(await last);
      this.summary.rows += await tx.commit();
      this.log(logs);
      // A streaming ingest (worker threads, a large input) lets DuckDB drop what it keeps of the rows
      // written so far (the ingest profile's re-attach, Warehouse.afterCommit).
      await this.warehouse.afterCommit(this.options.logger);
      this.tx = await this.warehouse.begin({ holdUnits: this.options.holdUnits });
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
    await this.txReady;
    await this.settle();
    // Every batch is written: from here a stop has nothing left to skip.
    this.options.logger.debug('ingest_fast_path', { documents: this.fastPathDocuments });
    this.options.logger.debug('ingest_committing', { documents: this.txDocs });
    this.summary.rows += await this.tx.commit();
    this.log(this.takeLogs());
  }

  /**
   * A file's `ingest_file` line, held until the transaction holding its last documents commits, with a
   * warning per version label it did not know.
   */
  private fileLine(index: number, path: string, result: IngestFileResult, extra: LogFields): void {
    const { status, documents, rejections, skipped } = result;
    this.uncommitted.push([
      'ingest_file',
      { path, status, documents, rejections, ...(skipped ? { skipped } : {}), ...extra },
    ]);
    for (const [label, seen] of this.tallies.get(index)?.unknownVersions ?? [])
      this.uncommitted.push([
        'ingest.unknown_api_version',
        { path, label, documents: seen.documents, read_as: seen.readAs.join(', ') },
        'warn',
      ]);
  }

  /** The log lines of the transaction being built, which are written once it commits. */
  private takeLogs(): LogLine[] {
    const logs = this.uncommitted;
    this.uncommitted = [];
    return logs;
  }

  private log(lines: LogLine[]): void {
    for (const [event, fields, level] of lines)
      if (level === 'warn') this.options.logger.warn(event, fields);
      else this.options.logger.info(event, fields);
  }

  /**
   * After a stop: a file read part of the way is reported as interrupted, with the documents and bytes
   * committed of it, and logged like a finished file so the operator sees where it stopped; files not begun
   * are reported as not started, and counted in one log line (a folder can hold thousands).
   */
  async interrupted(plans: FilePlan[]): Promise<void> {
    this.summary.interrupted = true;
    let notStarted = 0;
    for (const plan of plans) {
      if (this.finished.has(plan.index)) continue;
      const result = this.summary.files[plan.index]!;
      const entry = this.ledger.get(plan.index)!;
      if (entry.byteOffset === plan.entry.byteOffset) {
        result.status = 'not_started';
        notStarted++;
        continue;
      }
      result.status = 'interrupted';
      this.summary.documents += result.documents;
      this.summary.bytes += entry.byteOffset - plan.entry.byteOffset;
      this.fileLine(plan.index, plan.path, result, { line: entry.line });
      if (!isStream(plan)) await this.rememberPrefix(plan.path, entry);
    }
    if (notStarted) this.uncommitted.push(['ingest_files_not_started', { files: notStarted }]);
  }

  /**
   * A file the run stopped inside keeps the hash of what was read of it, so that the next run resumes it even if
   * it has grown by then (a capture still being written). Written into the transaction that commits the file's
   * last batch, after that batch's own ledger row. A run killed outright leaves its position without a hash,
   * and the file, if changed, is read again whole.
   */
  private async rememberPrefix(path: string, entry: LedgerEntry): Promise<void> {
    await this.txReady;
    await this.settle();
    const sha256 = await partialPrefixHash(path, entry.byteOffset).catch(() => null);
    if (sha256 === null) return;
    entry.sha256 = sha256;
    await this.tx.run(writeLedgerSql(this.options.store, path, entry, this.options.runId, Date.now()));
  }

  /**
   * Rolls back what is not committed. A batch being accepted when the run failed may still go on to commit
   * and begin the next transaction, so this waits until neither the pending write nor the commit-and-begin
   * changes any more, and no batch is accepted after it starts.
   */
  async abort(): Promise<void> {
    this.aborted = true;
    for (;;) {
      const pending = this.pending;
      const txReady = this.txReady;
      await pending?.catch(() => undefined);
      await txReady.catch(() => undefined);
      if (pending === this.pending && txReady === this.txReady) break;
    }
    await this.tx.rollback();
  }
}

export async function ingestPaths(
  warehouse: Warehouse,
  inputs: string[],
  options: IngestOptions,
): Promise<IngestSummary> {
  const files = options.files ?? (await expandInputs(inputs));
  // A drain ingests each spool file under one run id: each call names only what it saw first itself.
  const seenBefore = await newFieldsOfRun(warehouse, options.store, options.runId);
  const run = new IngestRun(warehouse, options);
  await run.start();
  // Restored once the last commit or the rollback is done: nothing of the run is still running then.
  await warehouse.withProfile(RUNTIME_PROFILES.ingest, options.logger, async (runtime) => {
    try {
      const plans = await run.plan(files);
      // Stopped while the ledger was checked (hashing touched files can take a while): nothing is read.
      if (plans.length && options.signal?.aborted) await run.interrupted(plans);
      else if (plans.length) {
        const job = run.job(plans);
        // stdin belongs to this thread, and a pipe can be read only once: every worker reads all the input.
        const bytes = plans.reduce((n, p) => n + p.entry.size - p.entry.byteOffset, 0);
        const workers = plans.some(isStream) ? 0 : (options.workers ?? workersFor(bytes));
        run.summary.workers = workers;
        await runtime.useWorkers(workers);
        const reading =
          workers > 0
            ? prepareInWorkers(job, workers, run.accept)
            : prepareFiles({ ...job, share: { index: 0, of: 1 } }, run.accept, { signal: options.signal });
        // A stop unwinds the readers (and ends the workers); every batch accepted before it is kept.
        await reading.catch((error: unknown) => {
          if (!(error instanceof IngestStopped)) throw error;
          return run.interrupted(plans);
        });
      }
      await run.finish();
    } catch (error) {
      await run.abort();
      if (error instanceof StoreSyncError) throw error;
      throw new StoreSyncError(ERROR_CODES.INGEST, `ingest failed: ${(error as Error).message}`, {
        cause: error,
      });
    }
  });
  // Committed by now: the paths whose `_schema_changes` rows this run made.
  run.summary.newFields = await newFieldsOfRun(warehouse, options.store, options.runId, seenBefore);
  logNewFields(options.logger, run.summary.newFields);
  return run.summary;
}
