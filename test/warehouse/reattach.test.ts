import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { isStoreSyncError } from '../../src/errors.js';
import { openWarehouse } from '../../src/load/index.js';
import { fileLocks } from '../../src/load/open.js';
import { silentLogger } from '../../src/log.js';
import { count, loggedValues, ndjson, orderDoc, tempDir } from './helpers.js';

/**
 * A streaming ingest detaches and re-attaches the warehouse after each commit, so that DuckDB lets go of the
 * storage metadata of what it wrote (Warehouse.reattach). The tables it gives are those of an ingest without
 * (ingest-worker.test.ts compares them); here: that it happens, that the writer keeps the file's lock, and
 * that a file gone in between fails the run instead of starting an empty warehouse.
 */

describe('warehouse: re-attaching between commits', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let input: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    input = path.join(dir, 'in');
    await mkdir(input);
    const docs = Array.from({ length: 200 }, (_, i) => orderDoc(i + 1, '2024-05-01T10:00:00Z'));
    await writeFile(path.join(input, 'orders.ndjson'), ndjson(docs));
  });
  after(() => cleanup());

  it('a streaming ingest re-attaches after each commit but the last, and still holds the write lock', async () => {
    const file = path.join(dir, 'streamed.duckdb');
    const warehouse = await openWarehouse(file);
    try {
      const { logger, values } = loggedValues('warehouse_reattached', 'path');
      const summary = await ingestPaths(warehouse, [input], {
        store: 'shop',
        runId: 'r',
        logger,
        workers: 1,
        batchDocuments: 20,
        commitDocuments: 60,
      });
      assert.equal(summary.documents, 200);
      // Commits after 60, 120 and 180 documents, each followed by a re-attach; the last one (200) by none.
      assert.deepEqual(values, [file, file, file]);
      assert.equal(await count(warehouse.connection, 'orders'), 200);
      // Nobody else could have taken the file since: this process holds its write lock.
      assert.deepEqual(fileLocks(file), [{ pid: process.pid, kind: 'write' }]);
    } finally {
      await warehouse.close();
    }
  });

  it('an ingest on the main thread (small input, stdin) never re-attaches', async () => {
    const warehouse = await openWarehouse(path.join(dir, 'inline.duckdb'));
    try {
      const { logger, values } = loggedValues('warehouse_reattached', 'path');
      await ingestPaths(warehouse, [input], {
        store: 'shop',
        runId: 'r',
        logger,
        workers: 0,
        batchDocuments: 20,
        commitDocuments: 60,
      });
      assert.deepEqual(values, []);
    } finally {
      await warehouse.close();
    }
  });

  it('a warehouse file moved away meanwhile fails the re-attach, naming it, and no empty one is made', async () => {
    const file = path.join(dir, 'moved.duckdb');
    const warehouse = await openWarehouse(file);
    try {
      await ingestPaths(warehouse, [input], { store: 'shop', runId: 'r', logger: silentLogger, workers: 0 });
      await rename(file, path.join(dir, 'elsewhere.duckdb'));
      await assert.rejects(warehouse.reattach(silentLogger), (error: unknown) => {
        assert.ok(isStoreSyncError(error, 'warehouse'));
        assert.match(
          error.message,
          new RegExp(`warehouse ${file} was moved or deleted while this run wrote to it`),
        );
        return true;
      });
      assert.equal(existsSync(file), false);
    } finally {
      await warehouse.close();
    }
    // What was committed is in the moved file.
    const moved = await openWarehouse(path.join(dir, 'elsewhere.duckdb'), { readOnly: true });
    try {
      assert.equal(await count(moved.connection, 'orders'), 200);
    } finally {
      await moved.close();
    }
  });
});
