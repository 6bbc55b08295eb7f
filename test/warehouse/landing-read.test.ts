import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { LANDING_PART_BYTES, storedBlocks } from '../../src/load/landing.js';

/**
 * storedBlocks reads a block's parts as raw bytes, chunk by chunk (2,048 rows a chunk). A block's parts
 * may span chunks, a chunk may hold the end of one block and the start of the next, and parts of up to 12
 * bytes (views of the result's memory, copied so that a block of one such part does not outlive it) sit
 * among the others.
 */
describe('landing: blocks read back from their parts', () => {
  it('puts parts together across chunks, in part order, with short parts copied, for the blocks asked', async () => {
    const instance = await DuckDBInstance.create(':memory:');
    const connection = await instance.connect();
    try {
      await connection.run('CREATE TABLE _raw_landing_parts (first_seq BIGINT, part INTEGER, bytes BLOB)');
      const expected = new Map<number, Buffer>([
        // 5,000 full parts and a 7-byte tail: three chunks and a short part at the end of one.
        [1, randomBytes(5000 * LANDING_PART_BYTES + 7)],
        // A single part of 5 bytes.
        [2, randomBytes(5)],
        // Short parts all through: each a view of the chunk until it is copied.
        [3, randomBytes(40 * 12)],
        // Not asked for: must not appear.
        [4, randomBytes(3 * LANDING_PART_BYTES)],
      ]);
      const partSize = (seq: number) => (seq === 3 ? 12 : LANDING_PART_BYTES);
      const appender = await connection.createAppender('_raw_landing_parts');
      // Rows in reverse part order, so only the query's ORDER BY puts them right.
      for (const [seq, bytes] of expected) {
        const size = partSize(seq);
        const parts = Math.ceil(bytes.length / size);
        for (let part = parts - 1; part >= 0; part--) {
          appender.appendBigInt(BigInt(seq));
          appender.appendInteger(part);
          appender.appendBlob(bytes.subarray(part * size, (part + 1) * size));
          appender.endRow();
        }
      }
      appender.closeSync();

      const blocks = await storedBlocks(connection, [3, 1, 2]);
      assert.deepEqual([...blocks.keys()].sort(), [1, 2, 3]);
      for (const seq of [1, 2, 3])
        assert.ok(Buffer.from(blocks.get(seq)!).equals(expected.get(seq)!), `block ${seq} read back exactly`);

      await assert.rejects(storedBlocks(connection, [2, 9]), /raw landing block 9 has no parts/);
      assert.equal((await storedBlocks(connection, [])).size, 0);
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  });
});
