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
    const back = (await decodeBlock(CODEC, payload)).records;
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
    const back = (await decodeBlock(CODEC, await writer.finish())).records;
    assert.deepEqual(
      back.map((r) => r.bytes.toString('utf8')),
      ['a'.repeat(600_000), 'a'.repeat(1000)],
    );
  });

  it('decodes into reused buffers: a released block lends its buffer on, one still held is not touched, a block larger than the buffer grows it', async () => {
    const blockOf = async (seq: number, fill: string, bytes: number) => {
      const writer = new BlockWriter();
      // Records of 1 MB, so a block of 40 MB decodes past the first size of a decode buffer (32 MB).
      for (let i = 0; i < bytes >> 20; i++) writer.add(entry(seq + i, fill.repeat(1 << 20)));
      return writer.finish();
    };
    const [a, b, c, d, large] = await Promise.all([
      blockOf(1, 'a', 2 << 20),
      blockOf(10, 'b', 2 << 20),
      blockOf(20, 'c', 2 << 20),
      blockOf(25, 'd', 2 << 20),
      blockOf(30, 'e', 40 << 20),
    ]);
    const first = await decodeBlock(CODEC, a);
    const held = await decodeBlock(CODEC, b);
    const buffer = first.records[0]!.bytes.buffer;
    first.release();
    first.release(); // a second release must not give the buffer out twice
    const third = await decodeBlock(CODEC, c);
    assert.equal(third.records[0]!.bytes.buffer, buffer, 'the released buffer is decoded into again');
    const fourth = await decodeBlock(CODEC, d);
    assert.notEqual(fourth.records[0]!.bytes.buffer, buffer, 'given once, the buffer went to one block only');
    third.release();
    const fifth = await decodeBlock(CODEC, large);
    for (const [decoded, fill, count] of [
      [held, 'b', 2],
      [fourth, 'd', 2],
      [fifth, 'e', 40],
    ] as const) {
      assert.equal(decoded.records.length, count);
      for (const r of decoded.records) assert.equal(r.bytes.toString('latin1'), fill.repeat(1 << 20));
    }
    assert.deepEqual(
      fifth.records.map((r) => r.seq),
      Array.from({ length: 40 }, (_, i) => 30 + i),
    );
  });

  it('a discarded writer settles and refuses records', async () => {
    const writer = new BlockWriter();
    writer.add(entry(1, '{}'));
    writer.discard();
    assert.throws(() => writer.add(entry(2, '{}')), /already finished/);
  });
});
