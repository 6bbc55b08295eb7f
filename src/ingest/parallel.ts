import os from 'node:os';
import { Worker } from 'node:worker_threads';
import { expectDetachedBuffers, type PreparedBatch } from '../load/batch-builder.js';
import { type ReplayContracts, replayBlock, type StoredBlock } from '../load/replay.js';
import { WORKER_YOUNG_GENERATION_MB } from '../load/runtime-profile.js';
import { Normalizer, snapshotBuffers } from '../normalize/index.js';
import type { PreparedEvent, PrepareJob } from './prepare.js';
import type { ToWorker } from './worker.js';

/**
 * One worker per core but one, at least one and at most 4: the main thread spends the whole run in DuckDB's
 * appends and needs a core of its own: on 2 cores, two workers are slower than one and hold 250 MB more
 * (docs/performance.md, "Settings and the measurements behind them"); more than 4 only add memory.
 */
const defaultWorkers = (): number => Math.max(1, Math.min(4, os.availableParallelism() - 1));

/**
 * Input below which the default is no worker at all: starting one (loading the TypeScript sources in a
 * fresh thread) takes about a quarter of a second, more than a few megabytes take to read on this thread.
 */
export const WORKERS_FROM_BYTES = 16 << 20;

/** The workers to use when none were asked for: none for small inputs, else one per core. */
export const workersFor = (bytes: number): number => (bytes >= WORKERS_FROM_BYTES ? defaultWorkers() : 0);

/**
 * The worker's module. Compiled (dist/, as the store-sync command runs), it is worker.js beside this file;
 * from the TypeScript sources (tests, `node --import tsx`), a worker does not inherit the main thread's
 * loader, so worker-boot.mjs registers tsx in it first, and then loads worker.ts.
 */
const COMPILED = import.meta.url.endsWith('.js');
const BOOT = new URL(COMPILED ? './worker.js' : './worker-boot.mjs', import.meta.url);
const ENTRY = new URL('./worker.ts', import.meta.url).href;

type FromWorker =
  | { type: 'batch'; event: PreparedEvent }
  | { type: 'replayed'; index: number; prepared: PreparedBatch }
  | { type: 'digest'; file: number; sha256: string }
  | { type: 'done' }
  | { type: 'error'; message: string; stack?: string };

function workerError(message: { message: string; stack?: string }): Error {
  const error = new Error(message.message);
  if (message.stack) error.stack = message.stack;
  return error;
}

/**
 * A worker thread: its messages go to `onMessage`, except an error it reports, a crash or an exit, which
 * go to `onFailure` (after `terminate`, the exit is ignored by the callers, which have settled by then).
 */
function spawn(
  role: string,
  onMessage: (message: FromWorker) => void,
  onFailure: (error: unknown) => void,
): Worker {
  expectDetachedBuffers();
  const thread = new Worker(BOOT, {
    workerData: COMPILED ? undefined : { entry: ENTRY },
    resourceLimits: { maxYoungGenerationSizeMb: WORKER_YOUNG_GENERATION_MB },
  });
  thread.on('message', (message: FromWorker) =>
    message.type === 'error' ? onFailure(workerError(message)) : onMessage(message),
  );
  thread.on('error', onFailure);
  thread.on('exit', (code) => onFailure(new Error(`${role} worker stopped (exit code ${code})`)));
  return thread;
}

/** How long a worker asked to stop may take to finish what it is running before it is terminated. */
const STOP_GRACE_MS = 10_000;

/**
 * Ends a worker at a point of its own choosing: it is asked to stop and leaves from its message handler,
 * between two tasks. `Worker.terminate` instead stops it wherever its JavaScript happens to be, possibly
 * inside `createBrotliCompress` between the native stream's creation and its initialisation; freeing that
 * stream then fails Node's "close before init" assertion, which aborts the whole process (an interrupted
 * ingest was seen to die by SIGABRT that way). Terminating is the fallback for a worker that does not
 * answer within STOP_GRACE_MS. Resolves once the thread has exited.
 */
export function stopWorker(thread: Worker): Promise<void> {
  if (thread.threadId < 0) return Promise.resolve();
  return new Promise<void>((resolve) => {
    const fallback = setTimeout(() => void thread.terminate(), STOP_GRACE_MS);
    thread.once('exit', () => {
      clearTimeout(fallback);
      resolve();
    });
    thread.postMessage({ type: 'stop' } satisfies ToWorker);
  });
}

/**
 * Batches each ingest worker may have prepared and not yet seen accepted. A commit holds the main thread
 * for seconds, so more credit might seem to keep the workers busy through it; it does not (more credit is
 * no faster and holds more memory: docs/performance.md, "How ingest spends its time"), because the workers
 * are not what a commit waits for: the commit itself takes a core.
 */
const BATCHES_AHEAD = 1;

/**
 * Runs prepareFiles in worker threads, each taking its share of the batches, and hands the batches to
 * `accept` on this thread in job order: reading, parsing and normalizing then overlap with DuckDB's
 * appends and merges here instead of taking turns. Each worker stays at most BATCHES_AHEAD batches ahead
 * (an accepted batch returns one), which bounds memory. The first failure on any side stops every worker
 * and rejects.
 *
 * Only the first worker hashes the files (prepare.ts): a batch that ends a file waits, before it is
 * accepted, for that worker's digest of the file. It cannot wait long: every batch before it has been
 * accepted, so the first worker has had the credit to read past the file's end.
 */
export function prepareInWorkers(
  job: Omit<PrepareJob, 'share'>,
  workers: number,
  accept: (event: PreparedEvent) => Promise<void>,
): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    const threads: Worker[] = [];
    const waiting = new Map<number, { event: PreparedEvent; from: Worker }>();
    const digests = new Map<number, string>();
    const digestWaiters = new Map<
      number,
      { resolve: (sha256: string) => void; reject: (e: unknown) => void }
    >();
    const digestOf = (file: number): Promise<string> => {
      const known = digests.get(file);
      if (known !== undefined) return Promise.resolve(known);
      return new Promise((resolve, reject) => digestWaiters.set(file, { resolve, reject }));
    };
    // The ledger is written with a batch that ends a file: it needs the file's digest.
    const completeDigests = async (event: PreparedEvent) => {
      for (const progress of event.files)
        if (progress.done && progress.done.sha256 === null)
          progress.done.sha256 = await digestOf(progress.index);
    };
    let next = 0;
    let finished = 0;
    let chain = Promise.resolve();
    let settled = false;
    const stop = (): Promise<void> => {
      settled = true;
      return Promise.all(threads.map(stopWorker)).then(() => undefined);
    };
    // Rejects only once the batch being accepted (if any) has finished, so the caller's rollback never
    // races a write or a commit still in progress, and once every worker has exited, so the process the
    // caller may then end has no worker left to tear down.
    const fail = (error: unknown) => {
      if (settled) return;
      const stopped = stop();
      for (const waiter of digestWaiters.values()) waiter.reject(error);
      digestWaiters.clear();
      void Promise.all([chain, stopped]).then(() => reject(error));
    };
    // Batches arrive from several workers; they are accepted strictly in job order.
    const drain = () => {
      chain = chain
        .then(async () => {
          for (let ready = waiting.get(next); ready && !settled; ready = waiting.get(next)) {
            waiting.delete(next);
            next++;
            await completeDigests(ready.event);
            if (settled) break;
            const { from } = ready;
            const tables = ready.event.prepared.tables;
            const giveBack = () => {
              // A worker already stopped (the run failed) takes nothing back.
              if (!settled)
                from.postMessage(
                  { type: 'recycle', tables } satisfies ToWorker,
                  tables.flatMap(snapshotBuffers),
                );
            };
            await accept({ ...ready.event, giveBack });
            if (!settled) ready.from.postMessage({ type: 'credit' } satisfies ToWorker);
          }
          if (!settled && finished === workers && waiting.size === 0) await stop().then(resolve);
        })
        .catch(fail);
    };
    for (let index = 0; index < workers; index++) {
      const thread = spawn(
        'an ingest',
        (message) => {
          if (message.type === 'digest') {
            digests.set(message.file, message.sha256);
            digestWaiters.get(message.file)?.resolve(message.sha256);
            digestWaiters.delete(message.file);
            return;
          }
          if (message.type === 'batch')
            waiting.set(message.event.batchIndex, { event: message.event, from: thread });
          else if (message.type === 'done') finished++;
          drain();
        },
        fail,
      );
      threads.push(thread);
      thread.postMessage({
        type: 'job',
        job: { ...job, share: { index, of: workers } },
        credits: BATCHES_AHEAD,
      } satisfies ToWorker);
    }
  });
}

/**
 * Rebuild's workers: raw landing blocks go to the workers in turn and come back as prepared batches.
 * The caller keeps a few blocks in flight so the workers decode and normalize while it writes.
 */
export class ReplayWorkers {
  private readonly threads: Worker[];
  private readonly waiting = new Map<
    number,
    { resolve: (p: PreparedBatch) => void; reject: (e: unknown) => void }
  >();
  private failure: unknown = null;
  /** The normalizer used when there are no worker threads. */
  private local: Normalizer | null = null;

  constructor(
    workers: number,
    /** What to do with fields the model does not map, by store and stream (`evolve` where none is named). */
    private readonly contracts?: ReplayContracts,
  ) {
    const onMessage = (message: FromWorker) => {
      if (message.type !== 'replayed') return;
      const waiter = this.waiting.get(message.index);
      this.waiting.delete(message.index);
      waiter?.resolve(message.prepared);
    };
    this.threads = Array.from({ length: workers }, () =>
      spawn('a rebuild', onMessage, (error) => this.fail(error)),
    );
  }

  /**
   * The block's prepared batch, from worker `index` modulo the number of workers (or this thread, with none).
   * With `handOver`, the caller is done with the block: its bytes, when they fill a buffer of their own (as
   * storedBlocks' are), are moved to the worker instead of being copied by postMessage's serializer on this
   * thread and again on the worker's, and the block is empty afterwards. Without it the block can be given
   * again.
   */
  replay(
    index: number,
    block: StoredBlock,
    seq: number,
    { handOver = false }: { handOver?: boolean } = {},
  ): Promise<PreparedBatch> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.threads.length === 0) {
      this.local ??= new Normalizer();
      return replayBlock(this.local, block, seq, this.contracts);
    }
    const thread = this.threads[index % this.threads.length]!;
    const done = new Promise<PreparedBatch>((resolve, reject) =>
      this.waiting.set(index, { resolve, reject }),
    );
    const contracts = this.contracts;
    const { buffer, byteOffset, byteLength } = block.payload;
    const moved =
      handOver && buffer instanceof ArrayBuffer && byteOffset === 0 && byteLength === buffer.byteLength
        ? [buffer]
        : [];
    thread.postMessage(
      { type: 'replay', index, block, seq, ...(contracts ? { contracts } : {}) } satisfies ToWorker,
      moved,
    );
    return done;
  }

  /**
   * Hands the buffers of block `index`'s batch back to the normalizer that made them, once it is written
   * (see TableRows.reuse).
   */
  giveBack(index: number, prepared: PreparedBatch): void {
    if (this.threads.length === 0) {
      this.local?.reuse(prepared.tables);
      return;
    }
    if (this.failure) return;
    const tables = prepared.tables;
    this.threads[index % this.threads.length]!.postMessage(
      { type: 'recycle', tables } satisfies ToWorker,
      tables.flatMap(snapshotBuffers),
    );
  }

  /** Stops the workers; a block still being replayed is rejected. Resolves once they have exited. */
  async close(): Promise<void> {
    this.fail(new Error('the rebuild workers were closed'));
    await Promise.all(this.threads.map(stopWorker));
  }

  private fail(error: unknown): void {
    if (this.failure) return;
    this.failure = error;
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
    for (const thread of this.threads) void stopWorker(thread);
  }
}
