import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { prepareInWorkers } from '../../src/ingest/parallel.js';
import { prepareFiles } from '../../src/ingest/prepare.js';
import { BatchWriter as Batch } from '../../src/load/batch-writer.js';
import { DOCUMENTS_STREAM, KIND, loadDocument } from '../../src/load/documents.js';
import { openWarehouse } from '../../src/load/index.js';
import { tableDef } from '../../src/model/index.js';
import { Normalizer, TableRows } from '../../src/normalize/index.js';
import { count, ndjson, orderDoc, tempDir, wholeFilePlan } from './helpers.js';

/**
 * How far the reading half of ingest runs ahead of the batch it hands over. In a worker (`untilEmitted`),
 * handing over waits for the loader's credit, and the next batch must not be started meanwhile: that held
 * a third set of batch buffers. On the loader's own thread, reading the next batch while the last is
 * written is the overlap, and must stay.
 */

describe('ingest: reading ahead of the batch handed over', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, 'orders.ndjson');
    const docs = Array.from({ length: 35 }, (_, i) => orderDoc(i + 1, '2024-05-01T10:00:00Z'));
    await writeFile(file, ndjson(docs));
  });
  after(() => cleanup());

  /** A normalizer that counts the batches sealed from it (a batch is sealed when it is handed over). */
  class CountingNormalizer extends Normalizer {
    sealed = 0;
    override clear(): void {
      this.sealed++;
      super.clear();
    }
  }

  /** The whole file, read from its start in batches of 10 documents (35: four batches). */
  const plan = () => wholeFilePlan(file, 10);

  /** For each batch handed over: how many batches after it had been sealed by the time it was taken. */
  async function sealedWhileEmitting(untilEmitted: boolean): Promise<number[]> {
    const normalizer = new CountingNormalizer();
    const ahead: number[] = [];
    await prepareFiles(
      { store: 'shop', runId: 'r', firstSeq: 1, ...(await plan()), share: { index: 0, of: 1 } },
      async (event) => {
        // A loader slow to take the batch: the reader has every chance to go on meanwhile.
        await sleep(30);
        ahead.push(normalizer.sealed - (event.batchIndex + 1));
        event.giveBack?.();
      },
      { normalizer, untilEmitted },
    );
    return ahead;
  }

  it('in a worker, starts no batch while the last one waits to be taken', async () => {
    // Four batches (10, 10, 10 and 5 documents), none read while another was waiting.
    assert.deepEqual(await sealedWhileEmitting(true), [0, 0, 0, 0]);
  });

  it("on the loader's thread, reads the next batch while the last one is written", async () => {
    // Each of the first three was followed by another, read and sealed while it was being written.
    assert.deepEqual(await sealedWhileEmitting(false), [1, 1, 1, 0]);
  });

  it('a worker fills a third batch while two are out, and starts a fourth only once buffers come back', async () => {
    // Three sets of buffers between a worker and its loader: one being loaded, one posted and waiting, one
    // being filled. The loader holds the buffers of batches 0, 1 and 2: batch 2 is filled and posted all the
    // same, and only then are they handed back, after which batch 3 may be begun. With two sets the worker
    // would wait for batch 0's buffers before batch 2; the fallback then hands them back, late, so that the
    // run ends and the order shows it.
    const events: string[] = [];
    const handedBack: (() => void)[] = [];
    const giveBackAll = (why: string) => {
      if (handedBack.length === 0) return;
      events.push(why);
      for (const giveBack of handedBack.splice(0)) giveBack();
    };
    let fallback: NodeJS.Timeout | undefined;
    const job = { store: 'shop', runId: 'r', firstSeq: 1, ...(await plan()) };
    await prepareInWorkers(job, 1, async (event) => {
      events.push(`batch ${event.batchIndex}`);
      if (event.batchIndex > 2) return event.giveBack?.();
      handedBack.push(event.giveBack!);
      if (event.batchIndex === 1) fallback = setTimeout(() => giveBackAll('given back after waiting'), 5_000);
      if (event.batchIndex === 2) {
        clearTimeout(fallback);
        setTimeout(() => giveBackAll('batches 0 to 2 given back'), 100);
      }
    });
    clearTimeout(fallback);
    assert.deepEqual(events, ['batch 0', 'batch 1', 'batch 2', 'batches 0 to 2 given back', 'batch 3']);
  });

  it('a table holds no buffers between a snapshot and its next row, which takes handed-back ones', () => {
    const rows = new TableRows('order_lines', tableDef('order_lines').columns);
    const id = tableDef('order_lines').columns.findIndex((c) => c.name === 'id');
    for (let i = 0; i < 300; i++) rows.setInt64(id, rows.addRow(), i);
    const snapshot = rows.takeSnapshot();
    // Fresh buffers taken at the snapshot would be a set more while the batch is loaded.
    assert.ok(rows.valid.every((v) => v.length === 0));
    assert.ok(rows.i64.every((a) => a === null));
    rows.reuse(snapshot);
    rows.setInt64(id, rows.addRow(), 7);
    assert.equal(rows.valid[id]!.buffer, snapshot.valid[id]!.buffer);
    assert.equal(rows.get(id, 0), 7);
    assert.equal(rows.get(id + 1, 0), null);
    // Empty, it still makes a (small) snapshot of its own.
    const empty = new TableRows('order_lines', tableDef('order_lines').columns);
    empty.takeSnapshot();
    assert.equal(empty.takeSnapshot().length, 0);
  });

  it('a written batch hands its buffers back once its rows are appended, before its landing and ledger are written', async () => {
    const warehouse = await openWarehouse(path.join(dir, 'hand-back.duckdb'));
    try {
      const made = warehouse.newBatch({ store: 'shop', runId: 'r', syncedAtMs: Date.now() });
      const text = JSON.stringify(orderDoc(1, '2024-05-01T10:00:00Z'));
      loadDocument(made, made.land(DOCUMENTS_STREAM, null, KIND.document, 'a:1', text), text);
      const prepared = await made.prepare();
      const handedBack: number[] = [];
      const batch = Batch.fromPrepared(prepared, () => handedBack.push(handedBack.length));
      const c = warehouse.connection;
      await c.run('BEGIN TRANSACTION');
      await batch.write(c, warehouse.layouts, warehouse.appenders, warehouse.keyRanges);
      await c.run('ROLLBACK');
      assert.deepEqual(handedBack, [0], 'handed back by the write itself, once');
      batch.release();
      assert.deepEqual(handedBack, [0], 'not again when released');
      assert.equal(await count(c, 'orders'), 0);
    } finally {
      await warehouse.close();
    }
  });
});
