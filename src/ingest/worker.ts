import { parentPort } from 'node:worker_threads';
import { expectDetachedBuffers, preparedBuffers } from '../load/batch-builder.js';
import { decodeBlock } from '../load/landing.js';
import { type ReplayContracts, replayBlock, type StoredBlock } from '../load/replay.js';
import type { RowsSnapshot } from '../normalize/index.js';
import { Normalizer } from '../normalize/index.js';
import { type PrepareJob, prepareFiles } from './prepare.js';

/**
 * A worker thread of ingest and rebuild: it turns input into prepared batches and posts them back,
 * moving (not copying) their buffers.
 *   job     ingest: run prepareFiles on this worker's share of the files, staying at most `credits`
 *           batches ahead of the loader, so a fast reader cannot fill memory with batches DuckDB has not
 *           taken yet; the first worker also posts each file's digest as soon as it has read the file;
 *   replay  rebuild: one raw landing block at a time, in the order sent (the main thread meters them).
 */

export type ToWorker =
  | { type: 'job'; job: PrepareJob; credits: number }
  | { type: 'credit' }
  | { type: 'replay'; index: number; block: StoredBlock; seq: number; contracts?: ReplayContracts }
  /** The buffers of a batch this worker made, loaded and handed back to be filled again. */
  | { type: 'recycle'; tables: RowsSnapshot[] }
  /** Leave now, between two tasks (see stopWorker in parallel.ts for why not `terminate`). */
  | { type: 'stop' };

const port = parentPort!;
expectDetachedBuffers();
let credits = 0;
/**
 * Batches posted whose buffers have not come back (see TableRows.reuse). The next batch starts only when
 * fewer than BUFFER_SETS are out: it is then filled in the buffers of one loaded before, so a worker and its
 * loader share three sets of batch buffers: one being loaded, one posted and waiting for it, and one being
 * filled. With two, the worker could not start a batch until the loader had appended the one before, and
 * on two cores it spent a quarter of a 200,000-document ingest waiting (docs/performance.md, "Issue 31: the
 * worker never waits"); the third set costs 10 to 20 MB.
 */
let buffersOut = 0;
const BUFFER_SETS = 3;
/** Wakes the ingest waiting in `until` when a credit or a batch's buffers come back. */
let wake: (() => void) | null = null;
const until = async (ready: () => boolean): Promise<void> => {
  while (!ready()) await new Promise<void>((resolve) => (wake = resolve));
};
let replaying = Promise.resolve();
let normalizer: Normalizer | null = null;

const failed = (error: Error) =>
  port.postMessage({ type: 'error', message: error.message, stack: error.stack });

port.on('message', (message: ToWorker) => {
  if (message.type === 'stop') process.exit(0);
  normalizer ??= new Normalizer();
  const own = normalizer;
  if (message.type === 'credit') {
    credits++;
    wake?.();
  } else if (message.type === 'recycle') {
    own.reuse(message.tables);
    buffersOut--;
    wake?.();
  } else if (message.type === 'replay') {
    // Decompressing (on libuv's pool) starts at once, while earlier blocks are still being normalized here;
    // normalizing, which uses this thread, goes block after block.
    const decoded = decodeBlock(message.block.codec, message.block.payload);
    decoded.catch(() => undefined);
    replaying = replaying
      .then(async () => {
        const prepared = await replayBlock(own, message.block, message.seq, message.contracts, decoded);
        port.postMessage({ type: 'replayed', index: message.index, prepared }, preparedBuffers(prepared));
      })
      .catch(failed);
  } else {
    credits = message.credits;
    prepareFiles(
      message.job,
      async ({ giveBack: _local, ...event }) => {
        await until(() => credits > 0);
        credits--;
        port.postMessage({ type: 'batch', event }, preparedBuffers(event.prepared));
        buffersOut++;
        await until(() => buffersOut < BUFFER_SETS);
      },
      {
        // Not held back by credit: the loader may be waiting for this digest to finish a batch.
        onDigest: (file, sha256) => port.postMessage({ type: 'digest', file, sha256 }),
        normalizer: own,
        untilEmitted: true,
      },
    ).then(() => port.postMessage({ type: 'done' }), failed);
  }
});
