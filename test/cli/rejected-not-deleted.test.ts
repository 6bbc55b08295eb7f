import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  killChildren,
  readWarehouse,
  runCli,
  startRewritingProxy,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Issue 26, through the CLI as a user runs it, against a store whose API changes under the sync (the embedded
 * sandbox behind a proxy that rewrites its product pages): a product rejected by a full scan is not
 * soft-deleted with its variants and stockrecords, one that left the listing is; a value of the wrong type
 * refuses that field only; a field the model does not know is kept in `_extra`.
 */

type Page = { next: string | null; results: Record<string, unknown>[] };
type Product = Record<string, unknown> & { id: number };

describe('a full scan rejects without deleting (store-sync sync through a rewriting proxy)', () => {
  let sandbox: Sandbox;
  let proxy: { baseUrl: string; close: () => Promise<void> };
  let dir: string;
  let cleanup: () => Promise<void>;
  let config: string;
  let warehouse: string;
  /** What the proxy does to each product in a products page; the identity until a test says otherwise. */
  let change: (product: Product) => Product | null = (p) => p;
  let x: number;
  let y: number;

  const read = <T = Record<string, unknown>>(sql: string) => readWarehouse<T>(warehouse, sql);
  const syncProducts = () => runCli(['sync', '--config', config, '--streams', 'products', '--full-refresh']);
  /** `_deleted_at IS NOT NULL` of a product and of every row it owns, by table. */
  const deletedOf = async (id: number) => {
    const out: Record<string, boolean[]> = {};
    for (const [table, column] of [
      ['products', 'id'],
      ['variants', 'product_id'],
      ['variant_stockrecords', 'product_id'],
    ] as const) {
      const rows = await read<{ deleted: boolean }>(
        `SELECT _deleted_at IS NOT NULL AS deleted FROM ${table} WHERE ${column} = ${id} ORDER BY ALL`,
      );
      out[table] = [...new Set(rows.map((r) => r.deleted))];
    }
    return out;
  };

  before(async () => {
    sandbox = await testSandbox({ scale: 10, pageSize: 5 });
    proxy = await startRewritingProxy(sandbox, (page: Page, pathname) => {
      if (!/\/products\/$/.test(pathname)) return page;
      const results = page.results.flatMap((p) => {
        const changed = change(structuredClone(p) as Product);
        return changed === null ? [] : [changed];
      });
      return { ...page, results };
    });
    ({ dir, cleanup } = await tempDir());
    config = await writeConfig(dir, {
      warehouse: 'w.duckdb',
      stores: [{ name: 'shop', baseUrl: proxy.baseUrl }],
    });
    warehouse = path.join(dir, 'w.duckdb');
  });

  after(async () => {
    killChildren();
    await proxy?.close();
    await sandbox?.close();
    await cleanup?.();
  });

  it('a first full sync loads every product live', async () => {
    assertExit(await syncProducts(), 0);
    // Two products that own variants and stockrecords: one to turn invalid, one to drop from the listing.
    const owners = await read<{ id: number }>(
      `SELECT product_id AS id FROM variant_stockrecords GROUP BY product_id ORDER BY product_id LIMIT 2`,
    );
    assert.equal(owners.length, 2, 'the sandbox has two products with stockrecords');
    [x, y] = owners.map((o) => Number(o.id)) as [number, number];
    assert.deepEqual(await deletedOf(x), {
      products: [false],
      variants: [false],
      variant_stockrecords: [false],
    });
  });

  it('a product whose version field is unusable is rejected whole and stays live; one that left the listing is soft-deleted', async () => {
    change = (p) => (p.id === y ? null : p.id === x ? { ...p, date_updated: 'not a time' } : p);
    const result = await syncProducts();
    assertExit(result, 3);
    assert.deepEqual(await deletedOf(x), {
      products: [false],
      variants: [false],
      variant_stockrecords: [false],
    });
    assert.deepEqual(await deletedOf(y), {
      products: [true],
      variants: [true],
      variant_stockrecords: [true],
    });
    assert.deepEqual(
      await read(
        "SELECT stage, level, key, field_path FROM _rejected_records WHERE stream = 'products' ORDER BY ALL",
      ),
      [{ stage: 'extract', level: 'record', key: String(x), field_path: 'date_updated' }],
    );
    assert.equal(
      (await read<{ n: number }>('SELECT count(*)::INT AS n FROM products WHERE _deleted_at IS NOT NULL'))[0]!
        .n,
      1,
      'only the product missing from the listing is soft-deleted',
    );
  });

  it('a value of the wrong type refuses that field only: the product loads, the value kept in _extra', async () => {
    change = (p) => (p.id === x ? { ...p, ranking: '12' } : p);
    const result = await syncProducts();
    assertExit(result, 3);
    assert.deepEqual(
      await read(
        `SELECT ranking, json_extract_string(_extra, '$.ranking') AS original, _deleted_at IS NULL AS live FROM products WHERE id = ${x}`,
      ),
      [{ ranking: null, original: '12', live: true }],
    );
    assert.deepEqual(
      await read(
        `SELECT level, key, field_path FROM _rejected_records WHERE stream = 'products' AND level = 'field' ORDER BY ALL`,
      ),
      [{ level: 'field', key: String(x), field_path: 'ranking' }],
    );
    // The run counts the product among the records stored, and its refused value among the rejections.
    const [run] = await read<{ records: number; rejections: number }>(
      `SELECT json_extract(counts, '$.products.records')::INT AS records,
              json_extract(counts, '$.products.rejections')::INT AS rejections
         FROM _sync_runs WHERE command = 'sync' ORDER BY started_at DESC LIMIT 1`,
    );
    const [stored] = await read<{ n: number }>(
      'SELECT count(*)::INT AS n FROM products WHERE _deleted_at IS NULL',
    );
    assert.deepEqual(run, { records: stored!.n, rejections: 1 });
    // Back in the listing, the product dropped before is live again, with what it owns.
    assert.deepEqual(await deletedOf(y), {
      products: [false],
      variants: [false],
      variant_stockrecords: [false],
    });
  });

  it('a field the model does not know is kept in _extra, exit 0', async () => {
    change = (p) => ({ ...p, zz_proxy: { added: 'by the proxy' } });
    const result = await syncProducts();
    assertExit(result, 0);
    const rows = await read<{ extra: string | null }>(
      `SELECT json_extract(_extra, '$.zz_proxy')::VARCHAR AS extra FROM products ORDER BY id`,
    );
    assert.ok(rows.length > 0);
    assert.deepEqual(
      [...new Set(rows.map((r) => r.extra))],
      ['{"added":"by the proxy"}'],
      'every product row keeps the added field',
    );
  });
});
