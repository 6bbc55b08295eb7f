import { Worker } from 'node:worker_threads';
import type { PreparedEvent, PrepareJob } from './prepare.js';
import type { ToWorker } from './worker.js';

/**
 * Runs prepareFiles in worker threads, each taking its share of the batches, and hands the batches to
 * `accept` on this thread in job order: reading, parsing and normalizing then overlap with DuckDB's
 * appends and merges here instead of taking turns. Each worker stays at most `credits` batches ahead
 * (an accepted batch returns one), which bounds memory. The first failure on any side stops every worker
 * and rejects.
 */

const BOOT = new URL('./worker-boot.mjs', import.meta.url);
const ENTRY = new URL('./worker.ts', import.meta.url).href;

/**
 * JSON.parse leaves mostly short-lived garbage: a young generation larger than V8's default is collected
 * less often and promotes less (measured: about a tenth less CPU in a large ingest).
 */
const YOUNG_GENERATION_MB = 48;

type FromWorker =
  | { type: 'batch'; event: PreparedEvent }
  | { type: 'done' }
  | { type: 'error'; message: string; stack?: string };

export function prepareInWorkers(
  job: Omit<PrepareJob, 'share'>,
  workers: number,
  accept: (event: PreparedEvent) => Promise<void>,
  credits = 1,
): Promise<void> {
  const threads = Array.from(
    { length: workers },
    () =>
      new Worker(BOOT, {
        workerData: { entry: ENTRY },
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB },
      }),
  );
  return new Promise<void>((resolve, reject) => {
    const waiting = new Map<number, { event: PreparedEvent; from: Worker }>();
    let next = 0;
    let finished = 0;
    let chain = Promise.resolve();
    let settled = false;
    const stop = () => {
      settled = true;
      for (const thread of threads) void thread.terminate();
    };
    const fail = (error: unknown) => {
      if (settled) return;
      stop();
      reject(error);
    };
    // Batches arrive from several workers; they are accepted strictly in job order.
    const drain = () => {
      chain = chain
        .then(async () => {
          for (let ready = waiting.get(next); ready && !settled; ready = waiting.get(next)) {
            waiting.delete(next);
            next++;
            await accept(ready.event);
            if (!settled) ready.from.postMessage({ type: 'credit' } satisfies ToWorker);
          }
          if (!settled && finished === workers && waiting.size === 0) {
            stop();
            resolve();
          }
        })
        .catch(fail);
    };
    threads.forEach((thread, index) => {
      thread.on('message', (message: FromWorker) => {
        if (message.type === 'batch')
          waiting.set(message.event.batchIndex, { event: message.event, from: thread });
        else if (message.type === 'done') finished++;
        else {
          const error = new Error(message.message);
          if (message.stack) error.stack = message.stack;
          fail(error);
          return;
        }
        drain();
      });
      thread.on('error', fail);
      thread.on('exit', (code) => fail(new Error(`an ingest worker stopped (exit code ${code})`)));
      thread.postMessage({
        type: 'job',
        job: { ...job, share: { index, of: workers } },
        credits,
      } satisfies ToWorker);
    });
  });
}
