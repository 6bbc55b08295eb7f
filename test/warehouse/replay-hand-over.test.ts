import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReplayWorkers } from '../../src/ingest/parallel.js';
import { landedOrdersBlock } from './helpers.js';

/**
 * Rebuild hands each landing block's bytes over to the worker that replays it (ReplayWorkers.replay's
 * `handOver`): moved, not copied twice by postMessage. A block given without it stays whole and can be
 * replayed again; one whose bytes are a view of a larger buffer is copied, since moving it would take the
 * rest of that buffer away from whoever holds it.
 */

/** What a prepared batch holds, by table: row counts, and the batch's record and row counts. */
const summary = (prepared: Awaited<ReturnType<ReplayWorkers['replay']>>) => ({
  counts: prepared.counts,
  tables: prepared.tables.map((t) => [t.name, t.length]),
});

describe('rebuild: a landing block handed over to its worker', () => {
  it('is moved when handed over (the block is empty after) and gives the same batch as a copied one', async () => {
    const workers = new ReplayWorkers(1);
    try {
      const copied = await landedOrdersBlock(300);
      const size = copied.payload.byteLength;
      const first = summary(await workers.replay(0, copied, 1));
      // Given without handOver, the bytes are still here: the same block replays again, alike.
      assert.equal(copied.payload.byteLength, size);
      assert.deepEqual(summary(await workers.replay(1, copied, 1)), first);

      const handed = await landedOrdersBlock(300);
      const replayed = summary(await workers.replay(2, handed, 1, { handOver: true }));
      assert.equal(handed.payload.byteLength, 0, 'the bytes moved to the worker');
      assert.deepEqual(replayed, first);
      assert.equal(first.counts.records, 300);
    } finally {
      await workers.close();
    }
  });

  it('copies bytes that are a view of a larger buffer, leaving that buffer whole', async () => {
    const workers = new ReplayWorkers(1);
    try {
      const block = await landedOrdersBlock(50);
      const shared = new Uint8Array(block.payload.byteLength + 16);
      shared.set(block.payload, 8);
      const view = shared.subarray(8, 8 + block.payload.byteLength);
      const prepared = await workers.replay(0, { ...block, payload: view }, 1, { handOver: true });
      assert.equal(prepared.counts.records, 50);
      assert.equal(shared.byteLength, block.payload.byteLength + 16, 'the larger buffer stayed');
      assert.equal(view.byteLength, block.payload.byteLength);
    } finally {
      await workers.close();
    }
  });
});
