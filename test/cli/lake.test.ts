import assert from 'node:assert/strict';
import { cp, readdir, rename, symlink } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { writeOrderFiles } from '../../bench/warehouse-data.js';
import { exportableTables } from '../../pipelines/export.js';
import { exportLake } from '../../pipelines/lake.js';
import { ERROR_CODES } from '../../src/errors.js';
import { openWarehouse } from '../../src/load/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * `export --lake DIR`: three sandbox stores (different seeds), synced with `--parallel 3` into a file each,
 * exported into one Hive-partitioned lake with a catalog of views; the catalog's per-store counts equal each
 * store's own warehouse, and a reader of the catalog during a re-export sees every store old or new, never
 * half replaced.
 */

/** Three tables' per-store counts in one statement: a reader sees them all from one export or from the next. */
const COUNTS_SQL =
  "SELECT 'products' AS t, _store, count(*)::INTEGER AS n FROM products GROUP BY ALL " +
  "UNION ALL SELECT 'fulfillment_orders', _store, count(*)::INTEGER FROM fulfillment_orders GROUP BY ALL " +
  "UNION ALL SELECT 'subscriptions', _store, count(*)::INTEGER FROM subscriptions GROUP BY ALL ORDER BY 1, 2";

describe('store-sync export --lake: one lake of many stores, with a catalog', () => {
  const sandboxes: Sandbox[] = [];
  let dir: string;
  let cleanup: () => Promise<void>;
  let config: string;
  let lake: string;
  const names = ['north', 'south', 'west'];
  const storeFile = (name: string) => path.join(dir, 'data', 'warehouses', `${name}.duckdb`);

  before(async () => {
    for (const [i, seed] of [5, 6, 7].entries())
      sandboxes.push(await testSandbox({ seed, scale: 30 + 10 * i, pageSize: 25 }));
    ({ dir, cleanup } = await tempDir());
    lake = path.join(dir, 'lake');
    config = await writeConfig(dir, {
      warehouse: 'data/warehouse.duckdb',
      warehouseLayout: 'per-store',
      stores: names.map((name, i) => ({ name, baseUrl: sandboxes[i]!.baseUrl })),
    });
    assertExit(await runCli(['sync', '--parallel', '3', '--config', config], { timeoutMs: 240_000 }), 0);
    // Orders come from ingested documents (the API's streams bring none): north and south get some, of
    // several months, each its own; west none, so its order tables are empty.
    for (const [name, count, seed] of [
      ['north', 300, 42],
      ['south', 200, 43],
    ] as const) {
      const docs = path.join(dir, `docs-${name}`);
      await writeOrderFiles(docs, count, 1, seed);
      assertExit(await runCli(['ingest', docs, '--store', name, '--config', config]), 0);
    }
  });

  after(async () => {
    killChildren();
    for (const sandbox of sandboxes) await sandbox.close();
    await cleanup?.();
  });

  it("writes every store's tables into DIR/<table>/_store=<name>/…, and a catalog whose counts equal each store's warehouse", async () => {
    const result = await runCli(['export', '--lake', lake, '--config', config], { timeoutMs: 180_000 });
    assertExit(result, 0);
    for (const name of names) assert.match(result.stdout, new RegExp(`^${name}\\s+\\d+\\s+\\d+\\s`, 'm'));
    // The layout readers rely on: order-dated tables by month of the order under the store, the others a
    // file per store; a store without orders has its one empty file in the default month.
    const catalog = path.join(lake, 'catalog.duckdb');
    for (const name of ['north', 'south']) {
      const months = await readWarehouse<{ month: string }>(
        storeFile(name),
        "SELECT DISTINCT strftime(date_placed, '%Y-%m') AS month FROM orders ORDER BY 1",
      );
      assert.ok(months.length > 1, `${name}'s orders span several months`);
      for (const table of ['orders', 'order_lines'])
        assert.deepEqual(
          (await readdir(path.join(lake, table, `_store=${name}`))).sort(),
          months.map((m) => `month=${m.month}`),
          `${table} of ${name} by month`,
        );
      // Per month, the catalog's rows are the store's own.
      const own = await readWarehouse(
        storeFile(name),
        "SELECT strftime(o.date_placed, '%Y-%m') AS month, count(*)::INTEGER AS n FROM order_lines l LEFT JOIN orders o ON o.number = l.order_number GROUP BY ALL ORDER BY 1",
      );
      const inLake = await readWarehouse(
        catalog,
        `SELECT month, count(*)::INTEGER AS n FROM order_lines WHERE _store = '${name}' GROUP BY ALL ORDER BY 1`,
      );
      assert.deepEqual(inLake, own, `order_lines of ${name} per month`);
    }
    assert.deepEqual(await readdir(path.join(lake, 'orders', '_store=west')), [
      'month=__HIVE_DEFAULT_PARTITION__',
    ]);
    assert.deepEqual(await readdir(path.join(lake, 'subscriptions', '_store=south')), ['data.parquet']);
    for (const def of exportableTables()) {
      const inLake = await readWarehouse(
        catalog,
        `SELECT _store, count(*)::INTEGER AS n FROM ${def.name} GROUP BY ALL ORDER BY 1`,
      );
      const own: Record<string, unknown>[] = [];
      for (const name of names) {
        own.push(
          ...(await readWarehouse(
            storeFile(name),
            `SELECT _store, count(*)::INTEGER AS n FROM ${def.name} GROUP BY ALL`,
          )),
        );
      }
      assert.deepEqual(inLake, own, `per-store counts of ${def.name}`);
    }
    // A store's rows differ by seed, so a catalog naming one store's files twice would not pass the above.
    const subscriptions = await readWarehouse(
      catalog,
      'SELECT _store, count(*)::INTEGER AS n FROM subscriptions GROUP BY ALL',
    );
    assert.equal(new Set(subscriptions.map((r) => r.n)).size, 3);
    // COMMENTs are the warehouse's.
    const [ownComment] = await readWarehouse<{ comment: string }>(
      storeFile('north'),
      "SELECT comment FROM duckdb_tables() WHERE table_name = 'orders'",
    );
    const [viewComment] = await readWarehouse(
      catalog,
      "SELECT comment FROM duckdb_views() WHERE view_name = 'orders'",
    );
    assert.ok(ownComment?.comment);
    assert.equal(viewComment?.comment, ownComment!.comment);
    const [column] = await readWarehouse(
      catalog,
      "SELECT comment FROM duckdb_columns() WHERE table_name = 'orders' AND column_name = '_store'",
    );
    assert.ok(typeof column?.comment === 'string' && column.comment.length > 0);
  });

  it('one export writes a lake at a time, within a process too (the lock file is never opened twice by one process)', async () => {
    const warehouse = await openWarehouse(storeFile('north'), { readOnly: true });
    try {
      const shared = path.join(dir, 'lake-shared');
      const sources = [{ store: 'north', warehouse }];
      const results = await Promise.allSettled([
        exportLake(shared, sources, { tables: ['customers'] }),
        exportLake(shared, sources, { tables: ['customers'] }),
      ]);
      assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
      const refusal = (results.find((r) => r.status === 'rejected') as PromiseRejectedResult).reason;
      assert.equal(refusal.code, ERROR_CODES.EXPORT_LOCKED);
      assert.match(
        refusal.message,
        new RegExp(`another store-sync export \\(pid ${process.pid}, this process\\) is writing the lake `),
      );
      // Released: the next one takes it.
      await exportLake(shared, sources, { tables: ['customers'] });
    } finally {
      await warehouse.close();
    }
  });

  it('a reader of the catalog during a re-export sees each store old or new, never half replaced', async () => {
    const catalog = path.join(lake, 'catalog.duckdb');
    const before = JSON.stringify(await readWarehouse(catalog, COUNTS_SQL));
    // North loses half its products and subscriptions in its own warehouse: the re-export changes its counts.
    const instance = await DuckDBInstance.create(storeFile('north'));
    const connection = await instance.connect();
    await connection.run(
      'DELETE FROM products WHERE rowid % 2 = 0; DELETE FROM subscriptions WHERE rowid % 2 = 0',
    );
    connection.closeSync();
    instance.closeSync();
    const exporting = startCli(['export', '--lake', lake, '--config', config], { timeoutMs: 180_000 });
    let finished = false;
    const done = exporting.done.then((r) => {
      finished = true;
      return r;
    });
    const seen: string[] = [];
    while (!finished) seen.push(JSON.stringify(await readWarehouse(catalog, COUNTS_SQL)));
    assertExit(await done, 0);
    const afterwards = JSON.stringify(await readWarehouse(catalog, COUNTS_SQL));
    assert.notEqual(afterwards, before);
    assert.ok(seen.length > 0);
    const other = seen.filter((s) => s !== before && s !== afterwards);
    assert.deepEqual(other, [], `of ${seen.length} reads, these were neither the old nor the new counts`);
    // The store's own warehouse now says what the lake says.
    const north = await readWarehouse(storeFile('north'), 'SELECT count(*)::INTEGER AS n FROM subscriptions');
    const lakeNorth = await readWarehouse(
      catalog,
      "SELECT count(*)::INTEGER AS n FROM subscriptions WHERE _store = 'north'",
    );
    assert.deepEqual(lakeNorth, north);
    // A reader of the layout itself (a fixed-depth glob through the store links) reads the new export too.
    const [globbed] = await readWarehouse(
      catalog,
      `SELECT count(*)::INTEGER AS n FROM read_parquet('${path.join(lake, 'subscriptions', '*', '*.parquet')}', hive_partitioning = true) WHERE _store = 'north'`,
    );
    assert.deepEqual(globbed, north[0]);
  });

  it("a --tables export twice leaves the other tables' versions: customers stay readable through the catalog and the link", async () => {
    // Each --tables run moves only the orders links; customers (and every table not exported) still link to
    // the last full export's version, which must outlive the cleanup of both runs.
    for (let run = 0; run < 2; run++)
      assertExit(
        await runCli(['export', '--lake', lake, '--tables', 'orders', '--config', config], {
          timeoutMs: 180_000,
        }),
        0,
      );
    const own: Record<string, unknown>[] = [];
    for (const name of names)
      own.push(
        ...(await readWarehouse(
          storeFile(name),
          'SELECT _store, count(*)::INTEGER AS n FROM customers GROUP BY ALL',
        )),
      );
    const catalog = path.join(lake, 'catalog.duckdb');
    assert.deepEqual(
      await readWarehouse(
        catalog,
        'SELECT _store, count(*)::INTEGER AS n FROM customers GROUP BY ALL ORDER BY 1',
      ),
      own,
    );
    const linked = await readWarehouse(
      catalog,
      `SELECT _store, count(*)::INTEGER AS n FROM read_parquet('${path.join(lake, 'customers', '*', '*.parquet')}', hive_partitioning = true) GROUP BY ALL ORDER BY 1`,
    );
    assert.deepEqual(linked, own);
  });

  it("an export killed after moving its links, before its catalog, does not cost the catalog's readers their files", async () => {
    const own = path.join(dir, 'lake-killed');
    const warehouse = await openWarehouse(storeFile('north'), { readOnly: true });
    try {
      const sources = [{ store: 'north', warehouse }];
      const first = await exportLake(own, sources, { tables: ['products', 'customers'] });
      const v1 = first.stores[0]!.version;
      // What a killed export leaves: a version written and every link moved to it, the catalog still the first.
      const v2 = `${v1}-killed`;
      const versions = path.join(own, '.versions', 'north');
      await cp(path.join(versions, v1), path.join(versions, v2), { recursive: true });
      for (const table of ['products', 'customers']) {
        const place = path.join(own, table, '_store=north');
        const temporary = path.join(own, '.versions', 'link-test');
        await symlink(path.join('..', '.versions', 'north', v2, table, '_store=north'), temporary, 'dir');
        await rename(temporary, place);
      }
      // A reader has the catalog open (it names v1) while the next export runs to the end.
      const reader = await DuckDBInstance.create(path.join(own, 'catalog.duckdb'), {
        access_mode: 'READ_ONLY',
      });
      try {
        const connection = await reader.connect();
        const count = async () =>
          Number((await connection.runAndReadAll('SELECT count(*) FROM products')).getRows()[0]![0]);
        const before = await count();
        const third = await exportLake(own, sources, { tables: ['products', 'customers'] });
        assert.deepEqual((await readdir(versions)).sort(), [v1, v2, third.stores[0]!.version].sort());
        assert.equal(await count(), before, "the open catalog's files are all there");
        connection.closeSync();
      } finally {
        reader.closeSync();
      }
      // The next export may let v1 and v2 go: the catalog in place names only the third's.
      const fourth = await exportLake(own, sources, { tables: ['products', 'customers'] });
      assert.equal((await readdir(versions)).includes(v1), false);
      assert.ok((await readdir(versions)).includes(fourth.stores[0]!.version));
    } finally {
      await warehouse.close();
    }
  });
});
