import assert from 'node:assert/strict';
import path from 'node:path';
import { describe, it } from 'node:test';
import { openWarehouse } from '../../src/load/index.js';
import { tempDir } from './helpers.js';

/** A writer bounds DuckDB's memory and checkpoints by WAL size; a reader keeps DuckDB's defaults. */
describe('warehouse: DuckDB settings of writers and readers', () => {
  it('a writer: 512 MB memory, checkpoints past a 64 MB WAL; a reader: the defaults', async () => {
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
      // DuckDB reads 512MB and 64MB as decimal megabytes and shows them in MiB.
      assert.deepEqual(await settings(false), ['488.2 MiB', '61.0 MiB']);
      const [memory, checkpoint] = await settings(true);
      assert.notEqual(memory, '488.2 MiB');
      assert.equal(checkpoint, '16.0 MiB');
    } finally {
      await cleanup();
    }
  });
});
