import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { openWarehouse } from '../../src/load/index.js';
import { LANDING_PART_BYTES } from '../../src/load/landing.js';
import { silentLogger } from '../../src/log.js';
import { count, FIXTURES, snapshot, tempDir, tempWarehouse } from './helpers.js';

/**
 * DuckDB (1.5) pins every value of more than about 60 KB in a row group at once to commit or checkpoint
 * it, and the raw landing's rows (one per batch) share a row group, so a landing stored as one
 * multi-megabyte blob per batch needed memory for all of it: past the memory limit the commit failed with
 * "failed to pin block", or the checkpoint after it failed fatally and invalidated the database. Blocks
 * are stored in parts of LANDING_PART_BYTES, which DuckDB evicts like any other data (see landing.ts).
 */
describe('warehouse: the raw landing does not fill DuckDB memory', () => {
  it('lands more than the memory limit in large incompressible blocks, then rebuilds from them', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    // 120 blocks of 64 pieces of 16 KB: 120 MB of landing against a 64 MB limit (one blob a block failed
    // at about the 60th). Pieces stay small so that their rejections, which keep the text, do not pin.
    const blocks = 120;
    const pieces = 64;
    const pieceBytes = 16 << 10;
    try {
      const warehouse = await openWarehouse(file, { memoryLimit: '64MB' });
      try {
        for (let b = 0; b < blocks; b++) {
          const batch = warehouse.newBatch({ store: 's', runId: 'r', syncedAtMs: Date.now() });
          // Random hex: brotli cannot shrink it much, so each block stays near 1 MB stored.
          for (let p = 0; p < pieces; p++)
            batch.land(
              'documents',
              'unreadable',
              'unreadable',
              `f:${b}`,
              randomBytes(pieceBytes / 2).toString('hex'),
            );
          await warehouse.commit(batch);
        }
        const reader = await warehouse.connection.runAndReadAll(
          'SELECT count(*), sum(len(payload_parts)), max(list_max(list_transform(payload_parts, p -> octet_length(p)))), count(payload) FROM _raw_landing',
        );
        const [rows, parts, largest, oldStyle] = reader.getRows()[0]!.map(Number);
        assert.equal(rows, blocks);
        assert.ok(parts! > blocks * 10, `each block is stored in many parts (${parts})`);
        assert.ok(largest! <= LANDING_PART_BYTES, `no part exceeds ${LANDING_PART_BYTES} bytes (${largest})`);
        assert.equal(oldStyle, 0);
      } finally {
        await warehouse.close();
      }
      // The parts put together are the blocks: a rebuild reads every record back.
      const again = await openWarehouse(file);
      try {
        const summary = await rebuildWarehouse(again, { logger: silentLogger });
        assert.equal(summary.rejections, blocks * pieces);
        const rejected = await again.connection.runAndReadAll(
          "SELECT count(*), min(strlen(payload)), max(strlen(payload)) FROM _rejected_records WHERE stage = 'parse'",
        );
        assert.deepEqual(rejected.getRows()[0]!.map(Number), [blocks * pieces, pieceBytes, pieceBytes]);
      } finally {
        await again.close();
      }
    } finally {
      await cleanup();
    }
  });

  it('rebuild still reads a block stored as one blob, as rows written before the parts were', async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      const docs = ['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) => path.join(FIXTURES, f));
      await ingestPaths(warehouse, docs, { store: 'shop', runId: 'ingest', logger: silentLogger });
      const before = await snapshot(warehouse.connection);
      // The old layout: the whole block in `payload`, no parts.
      await warehouse.connection.run(
        'UPDATE _raw_landing SET payload = list_reduce(payload_parts, (a, b) -> a || b), payload_parts = NULL',
      );
      assert.equal(await count(warehouse.connection, '_raw_landing', 'payload IS NULL'), 0);
      await rebuildWarehouse(warehouse, { logger: silentLogger });
      assert.deepEqual(await snapshot(warehouse.connection), before);
      assert.ok(before.orders!.length > 0);
    } finally {
      await cleanup();
    }
  });
});
