import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  ingestWithSummary,
  readWarehouse,
  runCli,
  scratchWarehouses,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Bare documents (no envelope) of every resource that has a table, through `store-sync ingest` (issue 25,
 * docs/ingest.md "Documents, envelopes and containers"): a subscription, a product with variants, a location
 * and a metadata definition each land in the tables the sync fills, and against rows from the sync the
 * newest still wins. The fixtures in test/fixtures/published/bare/ are written from the spec's shapes.
 */

const BARE = path.join(import.meta.dirname, '..', 'fixtures', 'published', 'bare');
const fixture = (name: string) => path.join(BARE, name);

interface Summary {
  documents: number;
  records: number;
  rejections: number;
  skipped?: Record<string, number>;
}

describe('store-sync ingest: bare documents of every resource that has a table', () => {
  const scratch = scratchWarehouses();
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await testSandbox();
  });
  after(async () => {
    await sandbox?.close();
    await scratch.removeAll();
  });
  const warehouseIn = scratch.create;
  const ingest = (inputs: string[], warehouse: string, extra: string[] = []) =>
    ingestWithSummary<Summary>(inputs, warehouse, extra);
  const count = async (warehouse: string, table: string) => {
    const [row] = await readWarehouse<{ n: bigint }>(warehouse, `SELECT count(*) AS n FROM ${table}`);
    return Number(row!.n);
  };

  it('loads a subscription, a product with variants, a location and a metadata definition', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest(
      [
        fixture('subscription.json'),
        fixture('product.json'),
        fixture('location.json'),
        fixture('metadata-definition.json'),
      ],
      warehouse,
    );
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    assert.equal(summary.records, 4);
    assert.equal(summary.skipped, undefined);
    assert.equal(await count(warehouse, 'orders'), 0, 'a subscription is not an order without a number');
    assert.equal(await count(warehouse, '_rejected_records'), 0);

    const [subscription] = await readWarehouse<Record<string, unknown>>(
      warehouse,
      'SELECT id, frequency, cancel_reason, num_orders FROM subscriptions',
    );
    assert.deepEqual(
      [
        Number(subscription!.id),
        subscription!.frequency,
        subscription!.cancel_reason,
        subscription!.num_orders,
      ],
      [4001, 'every 2 weeks', 'other', 3],
    );
    assert.equal(await count(warehouse, 'subscription_lines'), 1);
    assert.equal(await count(warehouse, 'subscription_orders'), 3);

    const [product] = await readWarehouse<{ id: bigint; title: string }>(
      warehouse,
      'SELECT id, title FROM products',
    );
    assert.deepEqual([Number(product!.id), product!.title], [5001, 'Field notebook']);
    const variants = await readWarehouse<{ id: bigint; product_id: bigint; sku: string }>(
      warehouse,
      'SELECT id, product_id, sku FROM variants ORDER BY id',
    );
    assert.deepEqual(
      variants.map((v) => [Number(v.id), Number(v.product_id), v.sku]),
      [
        [5101, 5001, 'NOTE-SAND'],
        [5102, 5001, 'NOTE-SLATE'],
      ],
    );

    const [location] = await readWarehouse<Record<string, unknown>>(
      warehouse,
      'SELECT id, name, accept_return, callback_url FROM locations',
    );
    assert.deepEqual(
      [Number(location!.id), location!.name, location!.accept_return, location!.callback_url],
      [61, 'North warehouse', true, 'https://warehouse.example/callbacks/61'],
    );

    const [definition] = await readWarehouse<Record<string, unknown>>(
      warehouse,
      'SELECT id, key, enable_export FROM metadata_definitions',
    );
    assert.deepEqual(
      [Number(definition!.id), definition!.key, definition!.enable_export],
      [71, 'gift_note', true],
    );
    assert.equal(await count(warehouse, 'metadata_definition_validations'), 1);
  });

  it('still rejects an order without a number, naming the field, and exits 3', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest([fixture('order-without-number.json')], warehouse);
    assertExit(result, 3);
    assert.equal(summary.rejections, 1);
    const rejected = await readWarehouse<{ reason: string }>(
      warehouse,
      'SELECT reason FROM _rejected_records',
    );
    assert.deepEqual(
      rejected.map((r) => r.reason),
      ['number: missing, expected a string'],
    );
    assert.equal(await count(warehouse, 'orders'), 0);
  });

  it('a bare product newer than the synced row replaces it; an older one does not', async () => {
    const { dir, warehouse } = await warehouseIn();
    // One store for both commands: the rows of the sync and of ingest meet under the same `_store`.
    const config = await writeConfig(dir, {
      warehouse,
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
    const sync = await runCli([
      'sync',
      '--config',
      config,
      '--streams',
      'products,subscriptions,locations,metadata_definitions',
    ]);
    assertExit(sync, 0);
    const [synced] = await readWarehouse<{ id: bigint; title: string; updated: string; n: bigint }>(
      warehouse,
      `SELECT id, title, strftime(date_updated, '%Y-%m-%dT%H:%M:%SZ') AS updated,
              (SELECT count(*) FROM variants v WHERE v.product_id = p.id) AS n
         FROM products p WHERE p.id = (SELECT min(id) FROM products)`,
    );
    assert.ok(synced, 'the sync filled products');
    const id = Number(synced.id);
    const template = JSON.parse(await readFile(fixture('product.json'), 'utf8')) as Record<string, unknown>;
    const productDocument = (title: string, dateUpdated: string) => ({
      ...template,
      id,
      title,
      date_updated: dateUpdated,
      variants: (template.variants as Record<string, unknown>[]).map((v) => ({ ...v, product_id: id })),
    });
    const shift = (days: number) =>
      new Date(Date.parse(synced.updated) + days * 86_400_000).toISOString().replace('.000Z', 'Z');
    const titleNow = async () =>
      (await readWarehouse<{ title: string }>(warehouse, `SELECT title FROM products WHERE id = ${id}`))[0]!
        .title;

    const older = path.join(dir, 'older.json');
    await writeFile(older, JSON.stringify(productDocument('An older title', shift(-30))));
    const first = await ingest([older], warehouse, ['--config', config]);
    assertExit(first.result, 0);
    assert.equal(first.summary.rejections, 0);
    assert.equal(await titleNow(), synced.title, 'an older document does not replace the synced row');

    const newer = path.join(dir, 'newer.json');
    await writeFile(newer, JSON.stringify(productDocument('A newer title', shift(1))));
    const second = await ingest([newer], warehouse, ['--config', config]);
    assertExit(second.result, 0);
    assert.equal(second.summary.rejections, 0);
    assert.equal(await titleNow(), 'A newer title');
    const variants = await readWarehouse<{ sku: string }>(
      warehouse,
      `SELECT sku FROM variants WHERE product_id = ${id} ORDER BY id`,
    );
    assert.deepEqual(
      variants.map((v) => v.sku),
      ['NOTE-SAND', 'NOTE-SLATE'],
      'its variants are replaced with it',
    );
  });
});
