import assert from 'node:assert/strict';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { prepareFiles } from '../../src/load/input/prepare.js';
import { Normalizer } from '../../src/normalize/index.js';
import { ndjson, orderDoc, tempDir } from './helpers.js';

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

  /** For each batch handed over: how many batches after it had been sealed by the time it was taken. */
  async function sealedWhileEmitting(untilEmitted: boolean): Promise<number[]> {
    const normalizer = new CountingNormalizer();
    const ahead: number[] = [];
    await prepareFiles(
      {
        store: 'shop',
        runId: 'r',
        firstSeq: 1,
        files: [
          {
            index: 0,
            path: file,
            status: 'loaded',
            entry: {
              size: (await stat(file)).size,
              mtimeMs: 0,
              sha256: null,
              status: 'partial',
              byteOffset: 0,
              line: 0,
              documents: 0,
              rejected: 0,
            },
          },
        ],
        batchDocuments: 10,
        batchBytes: 1 << 30,
        share: { index: 0, of: 1 },
      },
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
});
