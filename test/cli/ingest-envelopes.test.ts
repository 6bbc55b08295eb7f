import assert from 'node:assert/strict';
import { cp, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  assertExit,
  ingestWithSummary,
  jsonLines,
  readWarehouse,
  runCli,
  scratchWarehouses,
} from './helpers.js';

/**
 * Documents as other systems send them (issue 25, docs/ingest.md "Envelopes and containers"), ingested
 * through the command: webhook envelopes with and without `api_version`, storefront event envelopes, list
 * pages, version labels store-sync does not know, and events of objects that have no table, which are
 * skipped, not rejected. The fixtures in test/fixtures/published/ are written from the spec's shapes.
 */

const PUBLISHED = path.join(import.meta.dirname, '..', 'fixtures', 'published');
const fixture = (name: string) => path.join(PUBLISHED, name);

interface FileResult {
  path: string;
  documents: number;
  rejections: number;
  skipped?: Record<string, number>;
  unknownVersions?: Record<string, number>;
}

interface Summary {
  files: FileResult[];
  documents: number;
  records: number;
  rejections: number;
  skipped?: Record<string, number>;
  unknownVersions?: Record<string, number>;
}

describe('store-sync ingest: envelopes and containers', () => {
  const scratch = scratchWarehouses();
  after(scratch.removeAll);
  const warehouseIn = scratch.create;
  const ingest = (inputs: string[], warehouse: string, extra: string[] = []) =>
    ingestWithSummary<Summary>(inputs, warehouse, extra);
  const orders = (warehouse: string) =>
    readWarehouse<{ number: string; api_version: string | null }>(
      warehouse,
      'SELECT number, api_version FROM orders ORDER BY number',
    );
  const rejections = (warehouse: string) =>
    readWarehouse<{ source: string; reason: string }>(
      warehouse,
      'SELECT source, reason FROM _rejected_records ORDER BY source',
    );

  it('loads orders from webhook envelopes with and without api_version, event envelopes and a list page', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest(
      [
        fixture('webhook-order-2024.json'),
        fixture('webhook-order-noversion.ndjson'),
        fixture('event-order.json'),
        fixture('list-page.json'),
      ],
      warehouse,
    );
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    assert.equal(summary.documents, 5);
    assert.equal(summary.records, 6, 'the list page, one document, holds two orders');
    assert.equal(summary.skipped, undefined);
    assert.deepEqual(await orders(warehouse), [
      // The labelled envelope's version; the unlabelled ones' shapes read from their own fields.
      { number: 'E-1', api_version: '2024-04-01' },
      { number: 'L-1', api_version: '2024-04-01' },
      { number: 'L-2', api_version: '2024-04-01' },
      { number: 'W-2023', api_version: '2023-02-10' },
      { number: 'W-2023b', api_version: null },
      { number: 'W-2024', api_version: '2024-04-01' },
    ]);
    // The page's own fields are what the store sent too: each record of the page keeps them.
    assert.deepEqual(
      await readWarehouse(
        warehouse,
        "SELECT number, CAST(_envelope->'list_page' AS VARCHAR) AS page FROM orders WHERE number LIKE 'L-%' ORDER BY number",
      ),
      ['L-1', 'L-2'].map((number) => ({
        number,
        page: '{"count":2,"next":"https://shop.example.com/api/orders/?cursor=cD0yMDI0","previous":null}',
      })),
    );
    const lines = await readWarehouse<{ order_number: string; id: bigint; sku: string }>(
      warehouse,
      "SELECT order_number, id, sku FROM order_lines WHERE order_number IN ('W-2023', 'W-2024', 'L-2') ORDER BY id",
    );
    assert.deepEqual(
      lines.map((l) => [l.order_number, Number(l.id), l.sku]),
      [
        ['L-2', 1201, 'B'],
        ['W-2023', 7001, 'TEA-1'],
        ['W-2024', 9001, 'MUG-RED'],
      ],
    );
  });

  it("keeps a list page's own fields when the page is an envelope's data, beside the envelope's", async () => {
    const { dir, warehouse } = await warehouseIn();
    const page = JSON.parse(await readFile(fixture('list-page.json'), 'utf8')) as Record<string, unknown>;
    // `__proto__` is a field like any other (JSON.parse makes it an own field): it is kept as one.
    const wrapped = JSON.stringify({ object: 'order', data: page }).replace(
      '{"object":"order",',
      '{"object":"order","__proto__":{"hop":1},',
    );
    const file = path.join(dir, 'page-in-envelope.json');
    await writeFile(file, wrapped);
    const { result } = await ingest([file], warehouse);
    assertExit(result, 0);
    const rows = await readWarehouse<{ number: string; envelope: string }>(
      warehouse,
      "SELECT number, CAST(_envelope AS VARCHAR) AS envelope FROM orders WHERE number LIKE 'L-%' ORDER BY number",
    );
    const kept = {
      object: 'order',
      ['__proto__']: { hop: 1 },
      list_page: {
        count: 2,
        next: 'https://shop.example.com/api/orders/?cursor=cD0yMDI0',
        previous: null,
      },
    };
    assert.deepEqual(
      rows.map((row) => row.number),
      ['L-1', 'L-2'],
    );
    for (const row of rows) assert.equal(row.envelope, JSON.stringify(kept), row.number);
  });

  it('routes an envelope by its object or its event type to the table of that resource', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest(
      [fixture('webhook-subscription.json'), fixture('event-fulfillment.json')],
      warehouse,
    );
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    const [subscription] = await readWarehouse<{ id: bigint; frequency: string }>(
      warehouse,
      'SELECT id, frequency FROM subscriptions',
    );
    assert.deepEqual([Number(subscription!.id), subscription!.frequency], [3001, 'monthly']);
    const [fulfillment] = await readWarehouse<{ id: bigint; tracking_code: string }>(
      warehouse,
      'SELECT id, tracking_code FROM fulfillments',
    );
    assert.deepEqual([Number(fulfillment!.id), fulfillment!.tracking_code], [501, '1Z999']);
    assert.deepEqual(await orders(warehouse), [], 'a subscription is not an order without a number');
  });

  it('reads a storefront event whose type names no resource by the bare rules, lines without ids included', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest([fixture('event-checkout.json')], warehouse);
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    assert.deepEqual(await orders(warehouse), [{ number: 'C-1', api_version: '2024-04-01' }]);
    const lines = await readWarehouse<{ id: bigint; sku: string }>(
      warehouse,
      "SELECT id, sku FROM order_lines WHERE order_number = 'C-1' ORDER BY sku",
    );
    // Keyed by their position (docs/warehouse.md), not rejected.
    assert.deepEqual(
      lines.map((l) => [Number(l.id), l.sku]),
      [
        [-2, 'INK-2'],
        [-1, 'PEN-1'],
      ],
    );
  });

  it('reads labels it does not know with the document’s own shape, warns once per label, and exits 0', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest([fixture('unstable.ndjson')], warehouse, [
      '--log-format',
      'json',
    ]);
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    assert.deepEqual(summary.unknownVersions, { unstable: 2, '2031-01-01': 1 });
    assert.deepEqual(summary.files[0]!.unknownVersions, { unstable: 2, '2031-01-01': 1 });
    assert.deepEqual(await orders(warehouse), [
      { number: 'U-1', api_version: '2024-04-01' },
      { number: 'U-2', api_version: '2024-04-01' },
      { number: 'U-3', api_version: '2023-02-10' },
    ]);
    const warnings = jsonLines(result.stderr).filter((l) => l.event === 'ingest.unknown_api_version');
    assert.deepEqual(
      warnings.map((w) => [w.level, w.label, w.documents, w.read_as]),
      [
        ['warn', 'unstable', 2, '2024-04-01'],
        ['warn', '2031-01-01', 1, '2023-02-10'],
      ],
    );
    assert.ok(warnings.every((w) => w.path === fixture('unstable.ndjson')));
  });

  it('skips events of objects that have no table: exit 0, no rejection, counted in the summary and the ledger, kept in the landing', async () => {
    const { dir, warehouse } = await warehouseIn();
    const untabled = path.join(dir, 'untabled');
    await cp(fixture('untabled'), untabled, { recursive: true });
    // Worker threads carry the counts back to the main thread too.
    const { result, summary } = await ingest([untabled], warehouse, ['--workers', '2']);
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    assert.equal(summary.records, 0);
    const expected = { customer: 1, dispute: 2, 'gateway.updated': 1, transaction: 1 };
    assert.deepEqual(summary.skipped, expected);
    assert.deepEqual(
      summary.files.map((f) => [path.basename(f.path), f.rejections, f.skipped]),
      [
        ['customer.json', 0, { customer: 1 }],
        ['dispute.ndjson', 0, { dispute: 2 }],
        ['gateway.json', 0, { 'gateway.updated': 1 }],
        ['transaction.json', 0, { transaction: 1 }],
      ],
    );
    assert.match(result.stderr, /ingest_file .*dispute\.ndjson .*skipped=\{"dispute":2\}/);
    assert.deepEqual(await rejections(warehouse), []);
    const ledger = await readWarehouse<{ path: string; rejected: bigint; skipped: string }>(
      warehouse,
      'SELECT path, rejected, skipped::VARCHAR AS skipped FROM _ingested_files ORDER BY path',
    );
    assert.deepEqual(
      ledger.map((l) => [path.basename(l.path), Number(l.rejected), JSON.parse(l.skipped)]),
      [
        ['customer.json', 0, { customer: 1 }],
        ['dispute.ndjson', 0, { dispute: 2 }],
        ['gateway.json', 0, { 'gateway.updated': 1 }],
        ['transaction.json', 0, { transaction: 1 }],
      ],
    );
    const [landed] = await readWarehouse<{ records: bigint }>(
      warehouse,
      'SELECT sum(records) AS records FROM _raw_landing',
    );
    assert.equal(Number(landed!.records), 5, 'every skipped event is kept in the raw landing');
    // A rebuild from the landing skips them again, and rejects nothing.
    assertExit(await runCli(['rebuild', '--warehouse', warehouse]), 0);
    assert.deepEqual(await rejections(warehouse), []);
  });

  it('still rejects a page inside a page, and a known label that contradicts the order’s shape', async () => {
    const { warehouse } = await warehouseIn();
    const { result, summary } = await ingest(
      [fixture('page-in-page.json'), fixture('mislabelled.json')],
      warehouse,
    );
    assertExit(result, 3);
    assert.equal(summary.rejections, 2);
    assert.deepEqual(
      (await rejections(warehouse)).map((r) => [path.basename(r.source), r.reason]),
      [
        [
          'mislabelled.json:1',
          'api_version: the envelope says 2024-04-01, but the order has the 2023-02-10 shape (see docs/ingest.md for the shape rules)',
        ],
        [
          'page-in-page.json:1',
          'results[0]: a list page inside a list page: expected the documents of one page in results, each a document or an envelope',
        ],
      ],
    );
    // The page's other result, an order, loads beside the refused page.
    assert.deepEqual(await orders(warehouse), [{ number: 'P-2', api_version: null }]);
  });
});
