import { Worker } from 'node:worker_threads';
import type { PreparedEvent, PrepareJob } from './prepare.js';
import type { ToWorker } from './worker.js';

/**
 * Runs prepareFiles in a worker thread and hands its batches, in order, to `accept` on this thread: on a
 * two-core machine reading, parsing and normalizing (the worker) then overlap with DuckDB's appends and
 * merges (here) instead of taking turns. Batches in flight are bounded by `credits`; each accepted batch
 * returns one. The first failure on either side stops the worker and rejects.
 */

const BOOT = new URL('./worker-boot.mjs', import.meta.url);
const ENTRY = new URL('./worker.ts', import.meta.url).href;

type FromWorker =
  | { type: 'batch'; event: PreparedEvent }
  | { type: 'done' }
  | { type: 'error'; message: string; stack?: string };

export function prepareInWorker(
  job: PrepareJob,
  accept: (event: PreparedEvent) => Promise<void>,
  credits = 2,
): Promise<void> {
  const worker = new Worker(BOOT, { workerData: { entry: ENTRY } });
  return new Promise<void>((resolve, reject) => {
    let chain = Promise.resolve();
    let settled = false;
    const fail = (error: unknown) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      reject(error);
    };
    worker.on('message', (message: FromWorker) => {
      if (message.type === 'batch') {
        chain = chain
          .then(() => (settled ? undefined : accept(message.event)))
          .then(() => {
            if (!settled) worker.postMessage({ type: 'credit' } satisfies ToWorker);
          })
          .catch(fail);
      } else if (message.type === 'done') {
        chain = chain.then(() => {
          if (settled) return;
          settled = true;
          void worker.terminate();
          resolve();
        });
      } else {
        const error = new Error(message.message);
        if (message.stack) error.stack = message.stack;
        chain = chain.then(() => fail(error));
      }
    });
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the ingest worker stopped (exit code ${code})`)));
    worker.postMessage({ type: 'job', job, credits } satisfies ToWorker);
  });
}
