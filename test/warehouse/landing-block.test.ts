import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BlockWriter, CODEC, decodeBlock, type LandingEntry } from '../../src/load/landing.js';

/**
 * A raw landing block is compressed while its records arrive, through a staging buffer that is handed to
 * brotli a megabyte at a time; large records bypass it. Whatever the mix, the block must read back as the
 * records exactly, in order.
 */

function entry(seq: number, payload: string | Buffer, stream = 'documents'): LandingEntry {
  return { seq, kind: 'document', stream, entity: null, source: `f.ndjson:${seq}`, payload };
}

describe('raw landing: BlockWriter', () => {
  it('reads back records that cross staging boundaries, large ones, multi-byte text and Buffers', async () => {
    const records: LandingEntry[] = [];
    let seq = 10;
    for (let i = 0; i < 3000; i++)
      records.push(entry(seq++, `{"n":${i},"text":"${'é日😀'.repeat(i % 50)}"}`));
    records.push(entry(seq++, `{"big":"${'x'.repeat(3 << 20)}"}`));
    records.push(entry(seq++, Buffer.from('{"from":"a buffer","ü":1}'), 'orders'));
    for (let i = 0; i < 500; i++) records.push(entry(seq++, Buffer.from(`{"k":"${'y'.repeat(900 + i)}"}`)));
    const writer = new BlockWriter();
    for (const r of records) writer.add(r);
    const payload = await writer.finish();
    assert.equal(await writer.finish(), payload, 'finish() gives the same block every time');
    assert.deepEqual([writer.firstSeq, writer.lastSeq, writer.records], [10, seq - 1, records.length]);
    assert.deepEqual([...writer.streams].sort(), ['documents', 'orders']);
    const back = await decodeBlock(CODEC, payload);
    assert.equal(back.length, records.length);
    back.forEach((r, i) => {
      const want = records[i]!;
      assert.equal(r.seq, want.seq);
      assert.equal(r.source, want.source);
      assert.equal(
        r.bytes.toString('utf8'),
        Buffer.isBuffer(want.payload) ? want.payload.toString('utf8') : want.payload,
      );
    });
    assert.throws(() => writer.add(entry(seq, '{}')), /already finished/);
  });

  it("keeps a record's bytes as they were when added, even if the buffer they came from is then reused", async () => {
    // Ingest reads into two buffers in turn: a record's bytes are a view that the next read overwrites.
    const readBuffer = Buffer.alloc(1 << 20, 'a');
    const writer = new BlockWriter();
    writer.add(entry(1, readBuffer.subarray(0, 600_000)));
    writer.add(entry(2, readBuffer.subarray(600_000, 601_000)));
    readBuffer.fill('b');
    const back = await decodeBlock(CODEC, await writer.finish());
    assert.deepEqual(
      back.map((r) => r.bytes.toString('utf8')),
      ['a'.repeat(600_000), 'a'.repeat(1000)],
    );
  });

  it('a discarded writer settles and refuses records', async () => {
    const writer = new BlockWriter();
    writer.add(entry(1, '{}'));
    writer.discard();
    assert.throws(() => writer.add(entry(2, '{}')), /already finished/);
  });
});
