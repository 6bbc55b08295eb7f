import assert from 'node:assert/strict';
import { cp } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { exportParquet } from '../../pipelines/export.js';
import { ingestPaths } from '../../pipelines/ingest.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { EXPORT_MEMORY_LIMIT } from '../../src/load/runtime-profile.js';
import { silentLogger } from '../../src/log.js';
import { count, currentSetting, FIXTURES, tempWarehouse } from './helpers.js';

/**
 * Export runs its COPYs under settings of its own (runtime-profile.ts EXPORT_MEMORY_LIMIT, insertion order
 * not preserved: docs/performance.md, "Export memory") and sets them back: a writer that exports after a
 * sync (`exportAfterSync`) goes on loading with its own memory limit, and a reader with what it had.
 */

const SETTINGS = ['memory_limit', 'preserve_insertion_order'];

async function settings(warehouse: Warehouse): Promise<Record<string, string>> {
  const found: Record<string, string> = {};
  for (const name of SETTINGS) found[name] = await currentSetting(warehouse.connection, name);
  return found;
}

describe('export settings', () => {
  let warehouse: Warehouse;
  let dir: string;
  let file: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ warehouse, dir, file, cleanup } = await tempWarehouse());
    for (const name of ['order-2023.json', 'order-2024.json', 'others.ndjson'])
      await cp(path.join(FIXTURES, name), path.join(dir, 'in', name));
    await ingestPaths(warehouse, [path.join(dir, 'in')], { store: 'shop', runId: 'r', logger: silentLogger });
  });
  after(async () => cleanup());

  it('every COPY of the export runs under the export memory limit with insertion order not preserved', async () => {
    // How DuckDB shows EXPORT_MEMORY_LIMIT (256MB reads back as 244.1 MiB).
    const shown = await DuckDBInstance.create(':memory:', { memory_limit: EXPORT_MEMORY_LIMIT });
    const expected = {
      memory_limit: await currentSetting(await shown.connect(), 'memory_limit'),
      preserve_insertion_order: 'false',
    };
    shown.closeSync();
    // The COPY runs inside RUNTIME_PROFILES.bulkCopy (DuckDB's default limit): without the export's own
    // settings it would meet that default, whatever limit the writer had.
    const before = await settings(warehouse);
    // Each COPY notes the settings it meets.
    const during: Record<string, string>[] = [];
    const copyToParquet = warehouse.copyToParquet;
    warehouse.copyToParquet = async function (this: Warehouse, ...args) {
      during.push(await settings(warehouse));
      return copyToParquet.apply(this, args);
    };
    let tables: number;
    try {
      tables = (await exportParquet(warehouse, path.join(dir, 'parquet-during'))).tables.length;
    } finally {
      warehouse.copyToParquet = copyToParquet;
    }
    assert.ok(tables > 10 && during.length >= tables, `${during.length} copies of ${tables} tables`);
    assert.deepEqual(new Set(during.map((d) => JSON.stringify(d))), new Set([JSON.stringify(expected)]));
    assert.deepEqual(await settings(warehouse), before);
  });

  it("a writer's memory limit and insertion order are as before once its export is done", async () => {
    const before = await settings(warehouse);
    const summary = await exportParquet(warehouse, path.join(dir, 'parquet-writer'));
    const orders = summary.tables.find((t) => t.table === 'orders');
    assert.equal(orders?.rows, await count(warehouse.connection, 'orders'));
    assert.deepEqual(await settings(warehouse), before);
    assert.equal(before.preserve_insertion_order, 'true');
  });

  it('a memory limit known as configured is set back exactly, however many exports run', async () => {
    // DuckDB shows 256MB as 244.1 MiB and 100MB as 95.3 MiB; setting back what it shows lowers the limit a
    // little each time (244.0 MiB, 95.2 MiB …).
    const exports = async (w: Warehouse, expected: Record<string, string>) => {
      for (let round = 0; round < 3; round++) {
        await w.withSettings({ memory_limit: '64MB', preserve_insertion_order: false }, async () => {
          assert.deepEqual(await settings(w), {
            memory_limit: '61.0 MiB',
            preserve_insertion_order: 'false',
          });
        });
        assert.deepEqual(await settings(w), expected, `after export ${round + 1}`);
      }
    };
    await exports(warehouse, { memory_limit: '244.1 MiB', preserve_insertion_order: 'true' });
    await warehouse.close();
    const reader = await openWarehouse(file, { readOnly: true, memoryLimit: '100MB' });
    try {
      await exports(reader, { memory_limit: '95.3 MiB', preserve_insertion_order: 'true' });
    } finally {
      await reader.close();
      warehouse = await openWarehouse(file);
    }
  });

  it("a reader's insertion order is as before, its memory limit as DuckDB showed it", async () => {
    await warehouse.close();
    const reader = await openWarehouse(file, { readOnly: true });
    try {
      const before = await settings(reader);
      await exportParquet(reader, path.join(dir, 'parquet-reader'));
      const after = await settings(reader);
      assert.equal(after.preserve_insertion_order, before.preserve_insertion_order);
      // DuckDB shows its default limit rounded (18.8 GiB) and takes no exact value back for it, so a reader's
      // limit is set back to what it showed, within that rounding; a writer's is exact (above).
      const gib = (text: string) => {
        const [value, unit] = text.split(' ');
        return Number(value) * ({ GiB: 1, MiB: 1 / 1024 } as Record<string, number>)[unit!]!;
      };
      assert.ok(
        Math.abs(gib(after.memory_limit!) - gib(before.memory_limit!)) <= 0.05 * gib(before.memory_limit!),
        JSON.stringify({ before, after }),
      );
    } finally {
      await reader.close();
      warehouse = await openWarehouse(file);
    }
  });
});
