import { parentPort } from 'node:worker_threads';
import { preparedBuffers } from '../batch.js';
import { type PrepareJob, prepareFiles } from './prepare.js';

/**
 * The ingest worker thread: runs prepareFiles for the job the main thread sends and posts every batch
 * back, moving (not copying) its buffers. It stays at most `credits` batches ahead of the loader, so a
 * fast reader cannot fill memory with batches DuckDB has not taken yet.
 */

export type ToWorker = { type: 'job'; job: PrepareJob; credits: number } | { type: 'credit' };

const port = parentPort!;
let credits = 0;
let wake: (() => void) | null = null;

port.on('message', (message: ToWorker) => {
  if (message.type === 'credit') {
    credits++;
    wake?.();
    return;
  }
  credits = message.credits;
  prepareFiles(message.job, async (event) => {
    while (credits === 0) await new Promise<void>((resolve) => (wake = resolve));
    credits--;
    port.postMessage({ type: 'batch', event }, preparedBuffers(event.prepared));
  }).then(
    () => port.postMessage({ type: 'done' }),
    (error: Error) => port.postMessage({ type: 'error', message: error.message, stack: error.stack }),
  );
});
