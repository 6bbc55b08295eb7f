import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ingestPaths } from '../../pipelines/ingest.js';
import { DocumentReader } from '../../src/ingest/reader.js';
import { openWarehouse } from '../../src/load/index.js';
import { CODEC, decodeBlock, storedBlocks } from '../../src/load/landing.js';
import { silentLogger } from '../../src/log.js';
import { count, orderDoc, tempDir } from './helpers.js';

/**
 * Files are read a megabyte at a time into two buffers used in turn, so a piece's bytes are only valid
 * until the next chunk is read: whatever outlives that (a line cut by a chunk boundary, a value in
 * progress, a large record on its way to the compressor, gunzip's input) must have been copied. These
 * files cross many boundaries, with records larger than a chunk, in every format.
 */

const SIZES = [10, 2000, 1_500_000, 40, 700_000, 90_000, 5, 1_100_000, 300, 64_000];

const docs = Array.from({ length: 60 }, (_, i) => ({
  ...orderDoc(i + 1),
  note: `${String.fromCharCode(97 + (i % 26))}é`.repeat(SIZES[i % SIZES.length]! / 2),
}));
const lines = docs.map((d) => JSON.stringify(d));

async function texts(file: string): Promise<string[]> {
  const reader = new DocumentReader(file);
  const out: string[] = [];
  for await (const piece of reader.pieces()) out.push(piece.text);
  return out;
}

describe('reading files in reused buffers', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const file = (name: string) => path.join(dir, name);

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    await writeFile(file('docs.ndjson'), `${lines.join('\n')}\n`);
    await writeFile(file('docs.json'), `[\n${lines.join(',\n')}\n]\n`);
    await writeFile(file('values.json'), lines.join('\n'));
    await writeFile(file('docs.ndjson.gz'), gzipSync(`${lines.join('\n')}\n`));
  });
  after(() => cleanup());

  for (const name of ['docs.ndjson', 'docs.json', 'values.json', 'docs.ndjson.gz'])
    it(`${name}: every document comes back exactly (${Math.round(lines.join('').length / 2 ** 20)} MB, records up to 1.5 MB)`, async () => {
      assert.deepEqual(await texts(file(name)), lines);
    });

  it('a .gz file several chunks long: gunzip reads copies, not the buffers being read into again', async () => {
    // Random text barely compresses, so the stored file itself spans several read chunks.
    const noisy = Array.from({ length: 400 }, (_, i) =>
      JSON.stringify({ i, noise: randomBytes(9000 + (i % 7) * 1000).toString('base64') }),
    );
    await writeFile(file('noisy.ndjson.gz'), gzipSync(`${noisy.join('\n')}\n`));
    assert.ok((await stat(file('noisy.ndjson.gz'))).size > 4 << 20);
    assert.deepEqual(await texts(file('noisy.ndjson.gz')), noisy);
  });

  it('ingest lands every record byte for byte and loads every order', async () => {
    const warehouse = await openWarehouse(file('w.duckdb'));
    try {
      const summary = await ingestPaths(warehouse, [file('docs.ndjson')], {
        store: 'shop',
        runId: 'r',
        logger: silentLogger,
        workers: 0,
        batchDocuments: 7,
      });
      assert.equal(summary.rejections, 0);
      assert.equal(await count(warehouse.connection, 'orders'), docs.length);
      const seqs = await warehouse.connection.runAndReadAll('SELECT first_seq FROM _raw_landing ORDER BY 1');
      const order = seqs.getRows().map(([seq]) => Number(seq));
      const blocks = await storedBlocks(warehouse.connection, order);
      const landed: string[] = [];
      for (const seq of order)
        for (const r of (await decodeBlock(CODEC, blocks.get(seq)!)).records)
          landed.push(r.bytes.toString('utf8'));
      assert.deepEqual(landed, lines);
    } finally {
      await warehouse.close();
    }
  });

  it('a file cut while it is read fails, instead of ending early as if it were whole', async () => {
    // The run planned to read the file's size at the time; the file is now shorter (truncate -s during ingest).
    const path_ = file('cut.ndjson');
    await writeFile(path_, `${lines.slice(0, 20).join('\n')}\n`);
    const size = (await stat(path_)).size;
    const reader = new DocumentReader(path_, size + 5_000_000);
    await assert.rejects(
      async () => {
        for await (const _ of reader.pieces());
      },
      new RegExp(
        `^Error: the file shrank while it was read: it ended after ${size} of its ${size + 5_000_000} bytes$`,
      ),
    );
    // Read to the size planned, the same file is whole.
    assert.equal((await texts(path_)).length, 20);
  });
});
