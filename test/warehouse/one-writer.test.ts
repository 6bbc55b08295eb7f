import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { isStoreSyncError } from '../../src/errors.js';
import { openWarehouse, runReadOnlyQuery } from '../../src/load/index.js';
import { tempDir } from './helpers.js';

/**
 * One writer (docs/warehouse.md, "Transactions and one writer"): a second writer stops at once with our
 * message; readers are told why they must wait.
 */

const HOLDER = new URL('./children/hold-writer.ts', import.meta.url).pathname;

describe('one writer', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;
  let child: ChildProcess;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, 'w.duckdb');
    child = spawn(process.execPath, ['--import', 'tsx', HOLDER, file], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const [data] = (await once(child.stdout!, 'data')) as [Buffer];
    assert.equal(data.toString().trim(), 'ready');
  });
  after(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await once(child, 'exit');
    }
    await cleanup();
  });

  it('a second writing process fails at once, naming the holder', async () => {
    await assert.rejects(openWarehouse(file), (error: unknown) => {
      assert.ok(isStoreSyncError(error, 'warehouse_locked'));
      assert.match(
        error.message,
        new RegExp(`another store-sync process \\(pid ${child.pid}\\) is writing to ${file}`),
      );
      return true;
    });
  });

  it('a read-only query says why it cannot read while the writer holds the file', async () => {
    await assert.rejects(runReadOnlyQuery(file, 'SELECT 1'), (error: unknown) => {
      assert.ok(isStoreSyncError(error, 'warehouse_locked'));
      assert.match(error.message, /cannot read .* while another store-sync process \(pid \d+\) is writing/);
      return true;
    });
  });

  it('a writer stopped by a process that only reads is told so, not that someone writes', async () => {
    // A copy of the warehouse, so the writer above keeps its own; held open read-only as a long query would.
    const copy = path.join(dir, 'read.duckdb');
    await (await openWarehouse(copy)).close();
    const reader = spawn(process.execPath, ['--import', 'tsx', HOLDER, copy, 'read'], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    try {
      const [data] = (await once(reader.stdout!, 'data')) as [Buffer];
      assert.equal(data.toString().trim(), 'ready');
      await assert.rejects(openWarehouse(copy), (error: unknown) => {
        assert.ok(isStoreSyncError(error, 'warehouse_locked'));
        assert.match(
          error.message,
          new RegExp(
            `^another process \\(pid ${reader.pid}\\) has ${copy} open for reading \\(a store-sync query`,
          ),
        );
        return true;
      });
    } finally {
      reader.kill('SIGKILL');
      await once(reader, 'exit');
    }
  });

  it('once the writer is gone the warehouse opens, and a second writer in this process is refused', async () => {
    child.kill('SIGKILL');
    await once(child, 'exit');
    const first = await openWarehouse(file);
    try {
      await assert.rejects(openWarehouse(file), (error: unknown) =>
        isStoreSyncError(error, 'warehouse_locked'),
      );
    } finally {
      await first.close();
    }
    const result = await runReadOnlyQuery(file, "SELECT count(*) AS n FROM _sync_runs WHERE _store = 'x'");
    assert.deepEqual(result, { columns: [{ name: 'n', type: 'BIGINT' }], rows: [[0]], totalRows: 1 });
  });

  it('a writer creates a missing folder; a reader names the missing warehouse and creates nothing', async () => {
    const missing = path.join(dir, 'nope', 'deeper', 'w.duckdb');
    await assert.rejects(openWarehouse(missing, { readOnly: true }), (error: unknown) => {
      assert.ok(isStoreSyncError(error, 'warehouse_path'));
      assert.match(error.message, new RegExp(`no warehouse at ${missing}: it does not exist yet`));
      return true;
    });
    assert.equal(existsSync(path.join(dir, 'nope')), false, 'a reader created nothing');
    const created = await openWarehouse(missing);
    await created.close();
    assert.equal(existsSync(missing), true);
  });

  it('a query that writes is refused', async () => {
    await assert.rejects(runReadOnlyQuery(file, 'CREATE TABLE x (a INT)'), (error: unknown) =>
      isStoreSyncError(error, 'query'),
    );
  });
});
