import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { type DuckDBBlobValue, type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { LANDING_PART_BYTES } from '../../src/load/landing.js';
import { silentLogger } from '../../src/log.js';
import { count, currentSetting, FIXTURES, snapshot, tempDir } from './helpers.js';

/**
 * How the raw landing is stored (see landing.ts): DuckDB (1.5) pins every value of more than about 60 KB
 * in a row group at once to commit or checkpoint it, and a checkpoint rewrites the last row group of each
 * table it appended to. A landing stored as a blob per batch, one row per batch, has every block in one
 * row group: past the memory limit a commit fails with "failed to pin block" (or the checkpoint after it
 * invalidates the database), and every checkpoint rewrites the whole landing. Blocks are stored as rows of
 * small parts in `_raw_landing_parts`.
 */

/** Lands `blocks` batches of `pieces` unreadable pieces each, one batch per commit. */
async function landBlocks(
  warehouse: Warehouse,
  blocks: number,
  pieces: number,
  piece: (block: number) => string | Buffer,
): Promise<void> {
  for (let b = 0; b < blocks; b++) {
    const batch = warehouse.newBatch({ store: 's', runId: 'r', syncedAtMs: Date.now() });
    for (let p = 0; p < pieces; p++) batch.land('documents', 'unreadable', 'unreadable', `f:${b}`, piece(b));
    await warehouse.commit(batch);
  }
}

/** The storage blocks that hold the landing's checkpointed data. */
async function landingStorage(connection: DuckDBConnection): Promise<Set<string>> {
  const reader = await connection.runAndReadAll(
    `SELECT DISTINCT t || ':' || block_id FROM (
       SELECT '_raw_landing' AS t, block_id FROM pragma_storage_info('_raw_landing')
       UNION ALL SELECT '_raw_landing_parts', block_id FROM pragma_storage_info('_raw_landing_parts'))
     WHERE block_id >= 0`,
  );
  return new Set(reader.getRows().map(([id]) => String(id)));
}

/**
 * A warehouse at `file` in the layout from before `_raw_landing_parts`: the fixture documents ingested (in
 * batches of `batchDocuments`), `_raw_landing.payload` added, `edit` run on it (blocks' bytes, broken rows),
 * then the parts table dropped and the schema fingerprint forgotten, so the next writer moves the landing.
 */
async function oldLayoutWarehouse(
  file: string,
  batchDocuments: number | undefined,
  edit: (connection: DuckDBConnection) => Promise<void>,
): Promise<void> {
  const old = await openWarehouse(file);
  try {
    await ingestPaths(old, [path.join(FIXTURES, 'others.ndjson')], {
      store: 'shop',
      runId: 'ingest',
      logger: silentLogger,
      ...(batchDocuments ? { batchDocuments } : {}),
    });
    await old.connection.run('ALTER TABLE _raw_landing ADD COLUMN payload BLOB');
    await edit(old.connection);
    await old.connection.run('DROP TABLE _raw_landing_parts; DELETE FROM _schema');
  } finally {
    await old.close();
  }
}

describe('warehouse: the raw landing does not fill DuckDB memory', () => {
  it('lands more than the memory limit in large incompressible blocks, then rebuilds from them', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    // 120 blocks of 64 pieces of 16 KB: 120 MB of landing against a 64 MB limit (one blob a block fails
    // at about the 60th). Pieces stay small so that their rejections, which keep the text, do not pin.
    const blocks = 120;
    const pieces = 64;
    const pieceBytes = 16 << 10;
    try {
      const warehouse = await openWarehouse(file, { memoryLimit: '64MB' });
      try {
        // Random hex: brotli cannot shrink it much, so each block stays near half a megabyte stored.
        await landBlocks(warehouse, blocks, pieces, () => randomBytes(pieceBytes / 2).toString('hex'));
        const reader = await warehouse.connection.runAndReadAll(
          'SELECT count(DISTINCT first_seq), count(*), max(octet_length(bytes)) FROM _raw_landing_parts',
        );
        const [stored, parts, largest] = reader.getRows()[0]!.map(Number);
        assert.equal(stored, blocks);
        assert.equal(await count(warehouse.connection, '_raw_landing'), blocks);
        assert.ok(parts! > blocks * 100, `each block is stored in many parts (${parts})`);
        assert.ok(largest! <= LANDING_PART_BYTES, `no part exceeds ${LANDING_PART_BYTES} bytes (${largest})`);
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

  it('a checkpoint after new blocks leaves the landing checkpointed before it where it was', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    const warehouse = await openWarehouse(file);
    try {
      // 130 blocks of 1 MB of random bytes (brotli stores them as they are): more parts than one row group
      // holds (122,880), so the first row group is full and has no reason to be written again.
      await landBlocks(warehouse, 130, 16, () => randomBytes(64 << 10));
      await warehouse.connection.run('CHECKPOINT');
      const before = await landingStorage(warehouse.connection);
      const sizeBefore = (await stat(file)).size;
      await landBlocks(warehouse, 1, 1, () => 'one more');
      await warehouse.connection.run('CHECKPOINT');
      // With a row per batch, all 131 rows shared a row group and this checkpoint rewrote all of it: the
      // file grew by the whole landing again (its old blocks are freed only once the new ones are written).
      const growth = (await stat(file)).size - sizeBefore;
      assert.ok(growth < 16 << 20, `the checkpoint wrote ${growth} bytes, not the landing again`);
      const after = await landingStorage(warehouse.connection);
      const kept = [...before].filter((block) => after.has(block)).length;
      assert.ok(before.size > 400, `the landing fills storage blocks (${before.size})`);
      assert.ok(kept >= 0.9 * before.size, `${kept} of ${before.size} storage blocks kept`);
    } finally {
      await warehouse.close();
      await cleanup();
    }
  });

  // The two older layouts: the oldest had only `payload` (the whole block); later ones also had
  // `payload_parts` (a list of 16 KB parts), with each row using one or the other.
  for (const columns of [['payload'], ['payload', 'payload_parts']]) {
    it(`opening a warehouse whose landing holds its bytes in ${columns.join(' or ')} moves them to the parts table; rebuild reads them`, async () => {
      const { dir, cleanup } = await tempDir();
      const file = path.join(dir, 'w.duckdb');
      try {
        let before: Awaited<ReturnType<typeof snapshot>>;
        const old = await openWarehouse(file);
        try {
          const docs = ['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) =>
            path.join(FIXTURES, f),
          );
          await ingestPaths(old, docs, {
            store: 'shop',
            runId: 'ingest',
            logger: silentLogger,
            batchDocuments: 2,
          });
          before = await snapshot(old.connection);
          assert.ok(before.orders!.length > 0);
          const lists = columns.includes('payload_parts');
          await old.connection.run(
            `ALTER TABLE _raw_landing ADD COLUMN payload BLOB;
             ${lists ? 'ALTER TABLE _raw_landing ADD COLUMN payload_parts BLOB[];' : ''}
             UPDATE _raw_landing SET
               payload = CASE WHEN p.n % 2 = 0 OR NOT ${lists} THEN list_reduce(p.parts, (a, b) -> a || b) END
               ${lists ? ', payload_parts = CASE WHEN p.n % 2 = 1 THEN p.parts END' : ''}
             FROM (SELECT seq, parts, row_number() OVER (ORDER BY seq) AS n FROM (
               SELECT first_seq AS seq, list(bytes ORDER BY part) AS parts FROM _raw_landing_parts GROUP BY 1)) p
             WHERE first_seq = p.seq;
             DROP TABLE _raw_landing_parts;
             DELETE FROM _schema`,
          );
          const inLists = lists
            ? await count(old.connection, '_raw_landing', 'payload_parts IS NOT NULL')
            : 0;
          assert.equal(await count(old.connection, '_raw_landing', 'payload IS NULL'), inLists);
          if (lists) assert.ok(inLists > 0, 'some blocks are lists of parts');
        } finally {
          await old.close();
        }
        const warehouse = await openWarehouse(file);
        try {
          const c = warehouse.connection;
          const left = await c.runAndReadAll(
            "SELECT column_name FROM information_schema.columns WHERE table_name = '_raw_landing' AND column_name LIKE 'payload%'",
          );
          assert.deepEqual(left.getRows(), [], 'the old columns are gone');
          const blocks = await count(c, '_raw_landing');
          const reader = await c.runAndReadAll(
            'SELECT count(DISTINCT first_seq), count(*), max(octet_length(bytes)) FROM _raw_landing_parts',
          );
          const [moved, parts, largest] = reader.getRows()[0]!.map(Number);
          assert.equal(moved, blocks);
          // Cut again into parts of the current size.
          assert.ok(parts! > blocks, `some blocks are more than one part (${parts} parts, ${blocks} blocks)`);
          assert.ok(
            largest! <= LANDING_PART_BYTES,
            `no part exceeds ${LANDING_PART_BYTES} bytes (${largest})`,
          );
          await rebuildWarehouse(warehouse, { logger: silentLogger });
          assert.deepEqual(await snapshot(c), before);
        } finally {
          await warehouse.close();
        }
      } finally {
        await cleanup();
      }
    });
  }

  it("moves an old landing larger than the writer's memory limit, at DuckDB's default limit, and gives the writer its own back", async () => {
    // DuckDB pins every old blob of the vector it fetches a row from: 6 blocks of 4 MB are more than a 16 MB
    // writer holds, as a two-million-document landing (400 blocks of 3.5 MB) is more than 256 or 512 MB hold.
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    const digest = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
    try {
      const expected = new Map<bigint, string>();
      await oldLayoutWarehouse(file, 1, async (c) => {
        const seqs = (await c.runAndReadAll('SELECT first_seq FROM _raw_landing ORDER BY 1')).getRows();
        assert.ok(seqs.length >= 6, `at least 6 blocks (${seqs.length})`);
        for (const [seq] of seqs.slice(0, 6)) {
          const payload = new Uint8Array(randomBytes(4 * 1024 * 1024));
          const update = await c.prepare('UPDATE _raw_landing SET payload = $1 WHERE first_seq = $2');
          update.bindBlob(1, payload);
          update.bindBigInt(2, seq as bigint);
          await update.run();
          expected.set(seq as bigint, digest(payload));
        }
        await c.run('DELETE FROM _raw_landing WHERE payload IS NULL');
      });
      const writer = await openWarehouse(file, { memoryLimit: '16MB' });
      try {
        const c = writer.connection;
        const moved = new Map<bigint, string>();
        for (const [seq] of (
          await c.runAndReadAll('SELECT DISTINCT first_seq FROM _raw_landing_parts')
        ).getRows()) {
          const parts = await c.runAndReadAll(
            `SELECT bytes FROM _raw_landing_parts WHERE first_seq = ${seq} ORDER BY part`,
          );
          const bytes = Buffer.concat(parts.getRows().map(([b]) => (b as DuckDBBlobValue).bytes));
          moved.set(seq as bigint, digest(bytes));
        }
        assert.deepEqual(moved, expected, 'every block moved whole');
        assert.equal(await currentSetting(c, 'memory_limit'), '15.2 MiB', "the writer's own limit is back");
      } finally {
        await writer.close();
      }
    } finally {
      await cleanup();
    }
  });

  it('a landing move that fails reports its own error, rolls back whole, and the warehouse opens again once mended', async () => {
    // The move runs at a lifted memory limit; restoring the limit inside the failed transaction would fail
    // too ("Current transaction is aborted") and hide the cause.
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    try {
      // A landing row without its key cannot be copied into the rewritten _raw_landing (first_seq NOT NULL).
      await oldLayoutWarehouse(file, undefined, async (c) => {
        await c.run(
          `ALTER TABLE _raw_landing ALTER COLUMN first_seq DROP NOT NULL;
           INSERT INTO _raw_landing (first_seq) VALUES (NULL)`,
        );
      });
      await assert.rejects(openWarehouse(file, { memoryLimit: '64MB' }), (error: Error) => {
        assert.match(error.message, /could not write the warehouse schema: .*NOT NULL/);
        assert.doesNotMatch(error.message, /transaction is aborted/);
        return true;
      });
      const check = await DuckDBInstance.create(file);
      const c = await check.connect();
      try {
        const columns = await c.runAndReadAll(
          "SELECT column_name FROM information_schema.columns WHERE table_name = '_raw_landing' AND column_name = 'payload'",
        );
        assert.equal(columns.getRows().length, 1, 'the old layout is still there');
        await c.run('DELETE FROM _raw_landing WHERE first_seq IS NULL');
      } finally {
        c.closeSync();
        check.closeSync();
      }
      const mended = await openWarehouse(file, { memoryLimit: '64MB' });
      try {
        assert.equal(await currentSetting(mended.connection, 'memory_limit'), '61.0 MiB');
      } finally {
        await mended.close();
      }
    } finally {
      await cleanup();
    }
  });
});
