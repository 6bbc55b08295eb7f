import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { planTables, tableDef } from '../../src/model/index.js';
import { sendJson, startServer, type TestServer } from '../extract/helpers.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  TOKEN,
  TOKEN_ENV,
  tempDir,
} from './helpers.js';

/**
 * The 2023-02-10 shapes of carts and products, through the CLI over real files and a real loopback server:
 * a 2023-02-10 cart (`date_created`, `total_tax`, lines with `product` and `stockrecord` objects) fills the
 * columns a 2024-04-01 cart of the same content fills, and a product whose variants come under `children`
 * (as a 2023-02-10 product lists them) fills `variants` and its child tables as one with `variants` does,
 * from a product webhook and from a sync whose server answers the products list in that shape.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents', 'shapes-2023');

type Row = Record<string, unknown>;

/** A table's rows by key, in the columns the documents fill (the loader's own `_` columns left out). */
async function rowsOf(warehouse: string, table: string): Promise<Row[]> {
  const def = tableDef(table);
  const columns = def.columns.filter((c) => !c.name.startsWith('_')).map((c) => `"${c.name}"`);
  const order = def.key.filter((k) => k !== '_store').map((k) => `"${k}"`);
  return readWarehouse(warehouse, `SELECT ${columns.join(', ')} FROM ${table} ORDER BY ${order.join(', ')}`);
}

/** Rows of every table the entity's plan fills, by table. */
async function tablesOf(warehouse: string, entity: 'cart' | 'product'): Promise<Record<string, Row[]>> {
  const out: Record<string, Row[]> = {};
  for (const table of planTables(entity)) out[table] = await rowsOf(warehouse, table);
  return out;
}

describe('store-sync ingest: a 2023-02-10 cart', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const warehouses = { cart2024: '', cart2023: '', enveloped2023: '' };

  const ingest = async (file: string, warehouse: string) => {
    const result = await runCli(['ingest', '--json', file, '--warehouse', warehouse]);
    assertExit(result, 0);
    const summary = JSON.parse(result.stdout) as { documents: number; rejections: number };
    assert.deepEqual([summary.documents, summary.rejections], [1, 0], path.basename(file));
  };

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    for (const name of Object.keys(warehouses) as (keyof typeof warehouses)[])
      warehouses[name] = path.join(dir, `${name}.duckdb`);
    await ingest(path.join(FIXTURES, 'cart-2024.json'), warehouses.cart2024);
    await ingest(path.join(FIXTURES, 'cart-2023.json'), warehouses.cart2023);
    // The same document in a versioned envelope, as a capture labels it.
    const enveloped = path.join(dir, 'cart-2023-envelope.json');
    const cart = JSON.parse(await readFile(path.join(FIXTURES, 'cart-2023.json'), 'utf8'));
    await writeFile(enveloped, JSON.stringify({ api_version: '2023-02-10', data: cart }));
    await ingest(enveloped, warehouses.enveloped2023);
  });

  after(async () => {
    killChildren();
    assertNoSecretsOrEscapes();
    await cleanup?.();
  });

  it('fills the columns a 2024-04-01 cart fills, column by column; what one shape lacks is NULL', async () => {
    const of2024 = await tablesOf(warehouses.cart2024, 'cart');
    const of2023 = await tablesOf(warehouses.cart2023, 'cart');
    // Fields only one of the two shapes has.
    const only2024: Record<string, string[]> = {
      cart_lines: ['variant_id', 'variant_title', 'product_image'],
    };
    const only2023: Record<string, string[]> = {
      carts: ['total_tax'],
      cart_lines: [
        'product_upc',
        'product_categories',
        'product_images',
        'stockrecord_id',
        'stockrecord_price',
        'stockrecord_price_currency',
        'stockrecord_price_retail',
        'stockrecord_num_in_stock',
        'stockrecord_num_allocated',
        'stockrecord_low_stock_threshold',
      ],
    };
    for (const [table, rows2024] of Object.entries(of2024)) {
      const rows2023 = of2023[table]!;
      assert.ok(rows2024.length > 0, `${table} has rows`);
      assert.equal(rows2023.length, rows2024.length, `${table}: as many rows`);
      rows2024.forEach((row2024, i) => {
        const row2023 = rows2023[i]!;
        for (const [column, value] of Object.entries(row2024)) {
          const at = `${table}[${i}].${column}`;
          if (only2024[table]?.includes(column)) {
            assert.notEqual(value, null, `${at} is filled from a 2024-04-01 cart`);
            assert.equal(row2023[column], null, `${at} is NULL from a 2023-02-10 cart`);
          } else if (only2023[table]?.includes(column)) {
            assert.equal(value, null, `${at} is NULL from a 2024-04-01 cart`);
            assert.notEqual(row2023[column], null, `${at} is filled from a 2023-02-10 cart`);
          } else assert.deepEqual(row2023[column], value, at);
        }
      });
    }
    // The fields the 2023-02-10 shape names differently, read from where it keeps them.
    assert.deepEqual(
      await readWarehouse(
        warehouses.cart2023,
        `SELECT created_at::VARCHAR AS created_at, total_tax::VARCHAR AS total_tax FROM carts`,
      ),
      [{ created_at: '2024-06-01 09:30:00+00', total_tax: '7.030' }],
    );
    assert.deepEqual(
      await readWarehouse(
        warehouses.cart2023,
        `SELECT id::VARCHAR AS id, product_id::VARCHAR AS product, product_title, product_url, sku,
                product_upc, stockrecord_id::VARCHAR AS stockrecord, stockrecord_price::VARCHAR AS price,
                json_array_length(product_categories) AS categories
         FROM cart_lines ORDER BY id`,
      ),
      [
        {
          id: '7102',
          product: '610',
          product_title: 'Loose-leaf Oolong',
          product_url: 'https://shop.example/p/oolong',
          sku: 'OOL-100',
          product_upc: '4006381333931',
          stockrecord: '61011',
          price: '18.000',
          categories: 1,
        },
        {
          id: '7103',
          product: '611',
          product_title: 'Tea Strainer',
          product_url: 'https://shop.example/p/strainer',
          sku: 'STR-1',
          product_upc: '4006381333948',
          stockrecord: '61111',
          price: '8.000',
          categories: 0,
        },
      ],
    );
    // The customer seen in the cart keeps the cart's creation time as its sighting, whatever the field's name.
    assert.deepEqual(
      await readWarehouse(
        warehouses.cart2023,
        `SELECT id::VARCHAR AS id, seen_at::VARCHAR AS seen_at, seen_in, seen_in_id::VARCHAR AS cart FROM customers`,
      ),
      [{ id: '9101', seen_at: '2024-06-01 09:30:00+00', seen_in: 'cart', cart: '7101' }],
    );
  });

  it('loads the same rows from a bare document and from an envelope labelled 2023-02-10', async () => {
    assert.deepEqual(
      await tablesOf(warehouses.enveloped2023, 'cart'),
      await tablesOf(warehouses.cart2023, 'cart'),
    );
  });
});

describe('store-sync ingest: a 2023-02-10 product webhook', () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    assertNoSecretsOrEscapes();
    await cleanup?.();
  });

  /** A product webhook delivery of a fixture, ingested into a warehouse of its own. */
  const ingestWebhook = async (fixture: string, apiVersion: string): Promise<string> => {
    const product = JSON.parse(await readFile(path.join(FIXTURES, fixture), 'utf8')) as Row;
    const file = path.join(dir, `webhook-${fixture}`);
    await writeFile(
      file,
      JSON.stringify({
        object: 'product',
        event_id: `evt_${apiVersion}`,
        event_type: 'product.updated',
        api_version: apiVersion,
        data: product,
      }),
    );
    const warehouse = path.join(dir, `${fixture}.duckdb`);
    const result = await runCli(['ingest', '--json', file, '--warehouse', warehouse]);
    assertExit(result, 0);
    const summary = JSON.parse(result.stdout) as { documents: number; rejections: number };
    assert.deepEqual([summary.documents, summary.rejections], [1, 0], fixture);
    return warehouse;
  };

  it('loads the variants under `children` into variants and its child tables, as `variants` loads them', async () => {
    const of2023 = await tablesOf(await ingestWebhook('product-2023.json', '2023-02-10'), 'product');
    assert.deepEqual(
      of2023,
      await tablesOf(await ingestWebhook('product-2024.json', '2024-04-01'), 'product'),
    );
    assert.deepEqual(
      ['variants', 'variant_prices', 'variant_stockrecords', 'variant_attribute_values'].map(
        (table) => of2023[table]!.length,
      ),
      [2, 4, 2, 2],
    );
  });
});

describe('store-sync sync: a server answering products in the 2023-02-10 shape', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let server: TestServer;
  /** The product the server lists, switched between runs. */
  let listed: Row = {};

  const sync = async (warehouse: string) => {
    const result = await runCli([
      'sync',
      '--base-url',
      `${server.origin}/`,
      '--token-env',
      TOKEN_ENV,
      '--warehouse',
      warehouse,
      '--streams',
      'products',
    ]);
    assertExit(result, 0);
  };

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    server = await startServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname !== '/products/' || req.headers.authorization !== `Bearer ${TOKEN}`) {
        sendJson(res, 404, { detail: 'Not found.' });
        return;
      }
      sendJson(res, 200, { next: null, previous: null, results: [listed] });
    });
  });

  after(async () => {
    await server?.close();
    killChildren();
    assertNoSecretsOrEscapes();
    await cleanup?.();
  });

  const fixture = async (name: string): Promise<Row> =>
    JSON.parse(await readFile(path.join(FIXTURES, name), 'utf8')) as Row;

  it('loads the variants under `children` into variants and its child tables, as `variants` loads them', async () => {
    const warehouse2023 = path.join(dir, 'products-2023.duckdb');
    const warehouse2024 = path.join(dir, 'products-2024.duckdb');
    listed = await fixture('product-2023.json');
    assert.ok(
      Array.isArray(listed.children) && !('variants' in listed),
      'the fixture has the 2023-02-10 shape',
    );
    await sync(warehouse2023);
    listed = await fixture('product-2024.json');
    await sync(warehouse2024);
    assert.deepEqual(
      [...new Set(server.hits.map((hit) => `${hit.method} ${new URL(hit.url, 'http://x').pathname}`))],
      ['GET /products/'],
    );

    const of2023 = await tablesOf(warehouse2023, 'product');
    assert.deepEqual(of2023, await tablesOf(warehouse2024, 'product'), 'the same rows from either shape');
    assert.deepEqual(
      await readWarehouse(
        warehouse2023,
        `SELECT (SELECT count(*) FROM products) AS products,
                (SELECT count(*) FROM variants) AS variants,
                (SELECT count(*) FROM variant_prices) AS prices,
                (SELECT count(*) FROM variant_stockrecords) AS stockrecords,
                (SELECT count(*) FROM variant_attribute_values) AS attribute_values`,
      ),
      [{ products: 1, variants: 2, prices: 4, stockrecords: 2, attribute_values: 2 }],
    );
    assert.deepEqual(
      await readWarehouse(
        warehouse2023,
        `SELECT v.id::VARCHAR AS id, v.product_id::VARCHAR AS product, v.sku, v.unit_cost::VARCHAR AS cost,
                s.id::VARCHAR AS stockrecord, s.location_id::VARCHAR AS location, a.value AS size
         FROM variants v
         JOIN variant_stockrecords s USING (product_id)
         JOIN variant_attribute_values a USING (product_id)
         WHERE s.variant_id = v.id AND a.variant_id = v.id
         ORDER BY v.id`,
      ),
      [
        {
          id: '6201',
          product: '620',
          sku: 'SMP-S',
          cost: '4.10',
          stockrecord: '62011',
          location: '2',
          size: 'S',
        },
        {
          id: '6202',
          product: '620',
          sku: 'SMP-L',
          cost: '7.90',
          stockrecord: '62021',
          location: '3',
          size: 'L',
        },
      ],
    );
  });
});
