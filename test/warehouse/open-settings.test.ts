import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { openWarehouse } from '../../src/load/index.js';
import { NEW_WAREHOUSE_BLOCK_BYTES } from '../../src/load/open.js';
import { currentSetting, ingestDocuments, orderDoc, tempDir } from './helpers.js';

/** A writer bounds DuckDB's memory and checkpoints by WAL size; a reader keeps DuckDB's defaults. */
describe('warehouse: DuckDB settings of writers and readers', () => {
  it('a writer: 192 MB memory, checkpoints past a 64 MB WAL; a reader: the defaults', async () => {
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
      // DuckDB reads 192MB and 64MB as decimal megabytes and shows them in MiB.
      assert.deepEqual(await settings(false), ['183.1 MiB', '61.0 MiB']);
      const [memory, checkpoint] = await settings(true);
      assert.notEqual(memory, '183.1 MiB');
      assert.equal(checkpoint, '16.0 MiB');
    } finally {
      await cleanup();
    }
  });

  it("a rebuild runs with 256 MB, then the writer's limit is back; a limit asked for at open is kept", async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const memory = async (memoryLimit?: string) => {
        const warehouse = await openWarehouse(path.join(dir, 'w.duckdb'), memoryLimit ? { memoryLimit } : {});
        try {
          const c = warehouse.connection;
          const during = await warehouse.withRebuildMemoryLimit(() => currentSetting(c, 'memory_limit'));
          const failed = await warehouse
            .withRebuildMemoryLimit(() => Promise.reject(new Error('stopped')))
            .catch((error: Error) => error.message);
          return { during, failed, after: await currentSetting(c, 'memory_limit') };
        } finally {
          await warehouse.close();
        }
      };
      assert.deepEqual(await memory(), { during: '244.1 MiB', failed: 'stopped', after: '183.1 MiB' });
      assert.deepEqual(await memory('100MB'), { during: '95.3 MiB', failed: 'stopped', after: '95.3 MiB' });
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
