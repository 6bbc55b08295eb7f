import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Worker } from 'node:worker_threads';
import { prepareInWorkers, ReplayWorkers } from '../../src/ingest/parallel.js';
import { landedOrdersBlock, ndjson, orderDoc, tempDir, wholeFilePlan } from './helpers.js';

/**
 * How ingest's and rebuild's worker threads end. `Worker.terminate` stops a thread wherever its JavaScript
 * is, which can be inside `createBrotliCompress` between the native stream's creation and its
 * initialisation; freeing that stream fails Node's "close before init" assertion and aborts the whole
 * process (an interrupted ingest in CI died by SIGABRT so). So a worker is asked to stop and leaves by
 * itself (exit code 0; a terminated one exits with 1), and the caller hears of the end of the run only once
 * every worker has gone, so a process that then exits has none left to tear down.
 */

interface Exit {
  code: number;
  /** Whether the caller had already been told the run ended when the thread exited. */
  afterSettled: boolean;
}

describe('worker threads stop by themselves, before the run they served ends', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;
  let settled = false;
  let exits: Promise<Exit>[] = [];
  const onWorker = (worker: Worker) =>
    exits.push(
      new Promise((resolve) => worker.once('exit', (code) => resolve({ code, afterSettled: settled }))),
    );

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, 'orders.ndjson');
    await writeFile(
      file,
      ndjson(Array.from({ length: 400 }, (_, i) => orderDoc(i + 1, '2024-05-01T10:00:00Z'))),
    );
    process.on('worker', onWorker);
  });
  after(async () => {
    process.off('worker', onWorker);
    await cleanup();
  });

  /** The whole file in batches of one document: a worker starts a landing block (a compressor) per batch. */
  const job = async () => ({ store: 'shop', runId: 'r', firstSeq: 1, ...(await wholeFilePlan(file, 1)) });

  const observe = async (run: () => Promise<unknown>): Promise<{ outcome: unknown; exits: Exit[] }> => {
    settled = false;
    exits = [];
    const outcome = await run().then(
      () => 'resolved',
      (error: Error) => error.message,
    );
    settled = true;
    return { outcome, exits: await Promise.all(exits) };
  };

  it('an ingest stopped mid-run (its loader failing) ends only after its busy workers left by themselves', async () => {
    const stopped = new Error('stopped by the loader');
    const { outcome, exits: ended } = await observe(async () =>
      prepareInWorkers(await job(), 2, async (event) => {
        event.giveBack?.();
        // The credit of the batch before has gone back: the workers are reading and normalizing now.
        if (event.batchIndex === 20) throw stopped;
      }),
    );
    assert.equal(outcome, stopped.message);
    assert.deepEqual(ended, [
      { code: 0, afterSettled: false },
      { code: 0, afterSettled: false },
    ]);
  });

  it('a finished ingest ends after its workers did', async () => {
    let batches = 0;
    const { outcome, exits: ended } = await observe(async () =>
      prepareInWorkers(await job(), 2, async (event) => {
        batches++;
        event.giveBack?.();
      }),
    );
    assert.equal(outcome, 'resolved');
    assert.ok(batches >= 400, `${batches} batches`);
    assert.deepEqual(ended, [
      { code: 0, afterSettled: false },
      { code: 0, afterSettled: false },
    ]);
  });

  it("rebuild's busy workers, closed, have left by themselves when close returns", async () => {
    // A landing block of 2,000 orders, replayed four times by each worker; the close comes while they are at it.
    const block = await landedOrdersBlock(2000);
    const { outcome, exits: ended } = await observe(async () => {
      const workers = new ReplayWorkers(2);
      const replays = [0, 1, 2, 3, 4, 5, 6, 7].map((index) => workers.replay(index, block, 1));
      // Each worker has replayed its first block and is on its next ones: running, not starting.
      await Promise.all(replays.slice(0, 2));
      for (const replay of replays) replay.catch(() => undefined);
      await workers.close();
      await Promise.all(replays);
    });
    // Replays were still running when close came: it rejected them.
    assert.equal(outcome, 'the rebuild workers were closed');
    assert.deepEqual(ended, [
      { code: 0, afterSettled: false },
      { code: 0, afterSettled: false },
    ]);
  });
});
