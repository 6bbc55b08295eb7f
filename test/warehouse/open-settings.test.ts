import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openWarehouse } from '../../src/load/index.js';
import { tempDir } from './helpers.js';

/** A writer bounds DuckDB's memory and checkpoints by WAL size; a reader keeps DuckDB's defaults. */
describe('warehouse: DuckDB settings of writers and readers', () => {
  it('a writer: 1 GB memory, checkpoints past a 1 GB WAL; a reader: the defaults', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    const settings = async (readOnly: boolean) => {
      const warehouse = await openWarehouse(file, { readOnly });
      try {
        const reader = await warehouse.connection.runAndReadAll(
          "SELECT current_setting('memory_limit'), current_setting('checkpoint_threshold')",
        );
        return reader.getRows()[0]!.map(String);
      } finally {
        await warehouse.close();
      }
    };
    try {
      assert.deepEqual(await settings(false), ['953.6 MiB', '953.6 MiB']);
      const [memory, checkpoint] = await settings(true);
      assert.notEqual(memory, '953.6 MiB');
      assert.equal(checkpoint, '16.0 MiB');
    } finally {
      await cleanup();
    }
  });
});
