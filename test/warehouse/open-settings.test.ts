import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { ingestPaths } from '../../pipelines/ingest.js';
import { openWarehouse } from '../../src/load/index.js';
import { NEW_WAREHOUSE_BLOCK_BYTES } from '../../src/load/open.js';
import { silentLogger } from '../../src/log.js';
import { currentSetting, ingestDocuments, loggedValues, ndjson, orderDoc, tempDir } from './helpers.js';

/** A writer bounds DuckDB's memory and checkpoints by WAL size; a reader keeps DuckDB's defaults. */
describe('warehouse: DuckDB settings of writers and readers', () => {
  it('a writer: 256 MB memory, checkpoints past a 64 MB WAL; a reader: the defaults', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    const settings = async (readOnly: boolean) => {
      const warehouse = await openWarehouse(file, { readOnly });
      try {
        return [
          await currentSetting(warehouse.connection, 'memory_limit'),
          await currentSetting(warehouse.connection, 'checkpoint_threshold'),
        ];
      } finally {
        await warehouse.close();
      }
    };
    try {
      // DuckDB reads 256MB and 64MB as decimal megabytes and shows them in MiB.
      assert.deepEqual(await settings(false), ['244.1 MiB', '61.0 MiB']);
      const [memory, checkpoint] = await settings(true);
      assert.notEqual(memory, '244.1 MiB');
      assert.equal(checkpoint, '16.0 MiB');
    } finally {
      await cleanup();
    }
  });

  it('an ingest that streams through workers gives DuckDB 160 MB, then 256 MB again; a small one keeps 256 MB', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const input = path.join(dir, 'orders.ndjson');
      await writeFile(
        input,
        ndjson([orderDoc(1, '2024-05-01T10:00:00Z'), orderDoc(2, '2024-05-02T10:00:00Z')]),
      );
      const ingestWith = async (workers: number, memoryLimit?: string) => {
        const warehouse = await openWarehouse(
          path.join(dir, `w-${workers}-${memoryLimit}.duckdb`),
          memoryLimit ? { memoryLimit } : {},
        );
        const { logger, values: during } = loggedValues('duckdb_memory_limit', 'limit');
        try {
          await ingestPaths(warehouse, [input], { store: 's', runId: 'r', logger, workers });
          return { during, after: await currentSetting(warehouse.connection, 'memory_limit') };
        } finally {
          await warehouse.close();
        }
      };
      assert.deepEqual(await ingestWith(1), { during: ['160MB'], after: '244.1 MiB' });
      assert.deepEqual(await ingestWith(0), { during: [], after: '244.1 MiB' });
      // A limit asked for at open is the one used throughout.
      assert.deepEqual(await ingestWith(1, '100MB'), { during: [], after: '95.3 MiB' });

      const warehouse = await openWarehouse(path.join(dir, 'direct.duckdb'));
      try {
        const restore = await warehouse.limitMemoryForStreaming(silentLogger);
        assert.equal(await currentSetting(warehouse.connection, 'memory_limit'), '152.5 MiB');
        await restore();
        assert.equal(await currentSetting(warehouse.connection, 'memory_limit'), '244.1 MiB');
      } finally {
        await warehouse.close();
      }
    } finally {
      await cleanup();
    }
  });

  it('a new warehouse has 128 KB blocks; an existing file keeps its own and still opens for writing', async () => {
    const { dir, cleanup } = await tempDir();
    const blockSize = async (file: string) => {
      const warehouse = await openWarehouse(file);
      try {
        const reader = await warehouse.connection.runAndReadAll(
          'SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()',
        );
        return Number(reader.getRows()[0]![0]);
      } finally {
        await warehouse.close();
      }
    };
    try {
      const created = path.join(dir, 'new.duckdb');
      assert.equal(await blockSize(created), NEW_WAREHOUSE_BLOCK_BYTES);
      assert.equal(await blockSize(created), NEW_WAREHOUSE_BLOCK_BYTES, 'reopened');

      // A file another DuckDB made has its default blocks: attaching it with BLOCK_SIZE would fail.
      const foreign = path.join(dir, 'foreign.duckdb');
      const instance = await DuckDBInstance.create(foreign);
      const connection = await instance.connect();
      await connection.run('CREATE TABLE kept (x INTEGER); INSERT INTO kept VALUES (1)');
      connection.closeSync();
      instance.closeSync();
      assert.equal(await blockSize(foreign), 262_144);
    } finally {
      await cleanup();
    }
  });

  it("stores the raw landing's compressed bytes without DuckDB's compression, in new and reopened warehouses", async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    // Compression methods of the landing bytes' data segments (validity segments aside), after a checkpoint.
    const methods = async () => {
      const warehouse = await openWarehouse(file, { readOnly: true });
      try {
        const reader = await warehouse.connection.runAndReadAll(
          `SELECT DISTINCT compression FROM pragma_storage_info('_raw_landing_parts')
           WHERE column_name = 'bytes' AND segment_type = 'BLOB' ORDER BY 1`,
        );
        const type = await warehouse.connection.runAndReadAll(
          "SELECT data_type FROM information_schema.columns WHERE table_name = '_raw_landing_parts' AND column_name = 'bytes'",
        );
        return { methods: reader.getRows().map(([m]) => String(m)), type: String(type.getRows()[0]![0]) };
      } finally {
        await warehouse.close();
      }
    };
    const ingest = async (name: string, from: number) => {
      const warehouse = await openWarehouse(file);
      try {
        // Enough documents for a few thousand 1 KB parts, so DuckDB would have had row groups to compress.
        const docs = Array.from({ length: 600 }, (_, i) => orderDoc(from + i));
        await ingestDocuments(warehouse, dir, name, docs, { workers: 0 });
      } finally {
        await warehouse.close();
      }
    };
    try {
      await ingest('a.ndjson', 1);
      assert.deepEqual(await methods(), { methods: ['Uncompressed'], type: 'BLOB' });
      // Appended by a later process, which attaches the existing file: the column keeps its setting.
      await ingest('b.ndjson', 1_001);
      assert.deepEqual(await methods(), { methods: ['Uncompressed'], type: 'BLOB' });
    } finally {
      await cleanup();
    }
  });
});
