import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import type { Warehouse } from '../../src/load/index.js';
import { takesFromOthers } from '../../src/load/merge.js';
import { silentLogger } from '../../src/log.js';
import { ownedBy, type PlanNode, plans, planTables, tableDefinitions } from '../../src/model/index.js';
import { carryGroups } from '../../src/normalize/known.js';
import { count, FIXTURES, ingestDocuments, ndjson, snapshot, tableRows, tempWarehouse } from './helpers.js';

/**
 * A document updates only what it carries (docs/ingest.md; src/load/merge.ts decides, src/load/partial.ts
 * folds): each column comes from the newest document that carries its field, each child array from the
 * newest document that carries the array, a field present as null is carried, a missing one is not.
 */

type Doc = Record<string, unknown>;

const FULL: Doc = JSON.parse(readFileSync(`${FIXTURES}order-2024.json`, 'utf8'));

/** An order list item: the order's summary, without lines, transactions, discounts or addresses. */
const SUMMARY_FIELDS = [
  'number',
  'created_at',
  'date_placed',
  'updated_at',
  'status',
  'payment_status',
  'fulfillment_status',
  'currency',
  'total_incl_tax',
  'total_excl_tax',
  'total_discount',
  'total_outstanding',
  'user',
];
const summary = (changes: Doc = {}): Doc => ({
  ...Object.fromEntries(SUMMARY_FIELDS.map((f) => [f, FULL[f]])),
  updated_at: '2024-06-01T00:00:00Z',
  status: 'closed',
  payment_status: 'refunded',
  total_incl_tax: '99.00',
  ...changes,
});

/** The order's tables but customers (a unit of its own, tested below), and the order's fulfillments. */
const ORDER_TABLES = planTables('order').filter((t) => t !== 'customers');

describe('partial documents', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  afterEach(() => cleanup());

  let files = 0;
  const ingest = (docs: Doc[], options: { workers?: number } = {}) =>
    ingestDocuments(warehouse, dir, `run-${++files}.ndjson`, docs, options);

  /** The order's tables as loading `doc` alone into an empty warehouse gives them. */
  async function alone(doc: Doc): Promise<Record<string, string[]>> {
    const other = await tempWarehouse();
    try {
      await ingestDocuments(other.warehouse, other.dir, 'alone.ndjson', [doc]);
      return await snapshot(other.warehouse.connection, undefined, ORDER_TABLES);
    } finally {
      await other.cleanup();
    }
  }

  const tables = () => snapshot(warehouse.connection, undefined, ORDER_TABLES);
  const order = async () => (await tableRows(warehouse.connection, 'orders'))[0]!;

  // Each sequence, across runs and within one batch: the result is the order as if one document had carried
  // the newest of every field, `{...older, ...newer}`.
  const sequences: { name: string; docs: Doc[]; expected: Doc }[] = [
    {
      name: 'a list item after the full order keeps lines, transactions and addresses',
      docs: [FULL, summary()],
      expected: { ...FULL, ...summary() },
    },
    {
      name: 'the full order after a newer list item fills them in and keeps the newer totals and statuses',
      docs: [summary(), FULL],
      expected: { ...FULL, ...summary() },
    },
  ];
  for (const { name, docs, expected } of sequences) {
    it(`${name} (across runs)`, async () => {
      for (const doc of docs) await ingest([doc]);
      assert.deepEqual(await tables(), await alone(expected));
    });
    it(`${name} (one batch)`, async () => {
      await ingest(docs);
      assert.deepEqual(await tables(), await alone(expected));
    });
  }

  it('the list item after the full order: what a user sees', async () => {
    await ingest([FULL]);
    await ingest([summary()]);
    const o = await order();
    assert.equal(o.status, 'closed', 'the newer status');
    assert.equal(o.payment_status, 'refunded');
    assert.equal(o.total_incl_tax, '99.000', 'the newer total');
    assert.equal(o.billing_line1, '1 Analytical Way', 'the address only the full order carried');
    assert.equal(o.total_tax, '19.320', 'a total only the full order carried (19.32 in the fixture)');
    assert.equal(o._absent_fields, null, 'between them the documents carried every field');
    assert.equal(await count(warehouse.connection, 'order_lines'), 2);
    assert.equal(await count(warehouse.connection, 'order_line_tax_lines'), 2);
    assert.equal(await count(warehouse.connection, 'order_transactions'), 1);
    assert.equal(await count(warehouse.connection, 'order_discounts'), 2);
  });

  it('a list item alone lists what it lacks; the full order, older, then leaves only the newer values', async () => {
    await ingest([summary()]);
    const before = await order();
    assert.match(String(before._absent_fields), /(^|,)lines(,|$)/);
    assert.match(String(before._absent_fields), /(^|,)billing_address(,|$)/);
    assert.equal(await count(warehouse.connection, 'order_lines'), 0);
    await ingest([FULL]);
    const after = await order();
    assert.equal(after.status, 'closed');
    assert.equal(after.updated_at, before.updated_at, "the row ranks as the list item's version");
    assert.equal(after.billing_line1, '1 Analytical Way');
    assert.equal(after._absent_fields, null);
    assert.equal(await count(warehouse.connection, 'order_lines'), 2);
  });

  it('a field present as null is carried: it sets NULL, and an array null empties its rows', async () => {
    const nulls = summary({ status: null, billing_address: null, lines: null });
    await ingest([FULL]);
    await ingest([nulls]);
    assert.deepEqual(await tables(), await alone({ ...FULL, ...nulls }));
    const o = await order();
    assert.equal(o.status, null);
    assert.equal(o.billing_line1, null);
    assert.equal(o.shipping_line1, FULL.shipping_address && (FULL.shipping_address as Doc).line1);
    assert.equal(await count(warehouse.connection, 'order_lines'), 0);
    assert.equal(await count(warehouse.connection, 'order_line_tax_lines'), 0);
    assert.equal(await count(warehouse.connection, 'order_transactions'), 1, 'not carried: kept');
  });

  it('an older document does not overwrite what the newer one carried, even as null', async () => {
    const nulls = summary({ status: null, lines: null });
    await ingest([nulls]);
    await ingest([FULL]);
    const o = await order();
    assert.equal(o.status, null);
    assert.equal(await count(warehouse.connection, 'order_lines'), 0);
    assert.equal(o.billing_line1, '1 Analytical Way', 'the list item lacked it: the full order gives it');
  });

  it('voucher and offer discounts fill one table and are replaced apart', async () => {
    const vouchers = summary({
      voucher_discounts: [{ amount: '7.00', name: 'SUMMER7', description: 'Seven off' }],
    });
    await ingest([FULL]);
    await ingest([vouchers]);
    assert.deepEqual(await tables(), await alone({ ...FULL, ...vouchers }));
    const discounts = await tableRows(warehouse.connection, 'order_discounts');
    assert.deepEqual(discounts.map((d) => [d.kind, d.name]).sort(), [
      ['offer', 'Free sample'],
      ['voucher', 'SUMMER7'],
    ]);
  });

  it('a nested unit (a fulfillment inside the order) keeps its line items when a newer summary of it lacks them', async () => {
    const fulfillment = (FULL.fulfillments as Doc[])[0]!;
    const items = await count(warehouse.connection, 'fulfillment_line_items');
    assert.equal(items, 0);
    await ingest([FULL]);
    const stored = await count(warehouse.connection, 'fulfillment_line_items');
    assert.ok(stored > 0, 'the fixture has fulfillment line items');
    const later = summary({
      fulfillments: [
        {
          id: fulfillment.id,
          order_number: FULL.number,
          status: 'delivered',
          last_event_date: '2024-06-01T00:00:00Z',
        },
      ],
    });
    await ingest([later]);
    const [f] = await tableRows(warehouse.connection, 'fulfillments');
    assert.equal(f!.status, 'delivered');
    assert.equal(f!.tracking_carrier, fulfillment.tracking_carrier, 'not carried by the summary: kept');
    assert.equal(await count(warehouse.connection, 'fulfillment_line_items'), stored);
  });

  it('customers: a newer sighting with fewer fields updates only those', async () => {
    const user = FULL.user as Doc;
    await ingest([FULL]);
    const newer = summary({ number: 'G-2', user: { id: user.id, email: 'new@example.com' } });
    await ingest([newer]);
    const [c] = await tableRows(warehouse.connection, 'customers');
    assert.equal(c!.email, 'new@example.com');
    assert.equal(c!.first_name, user.first_name);
    assert.equal(c!.phone_number, user.phone_number);
    assert.equal(c!.seen_in_order, 'G-2', 'where it was seen goes with the newest sighting');
    assert.equal(c!._absent_fields, null);
  });

  it('older documents that carry different fields change nothing the newer full order carries', async () => {
    const newer = { ...FULL, updated_at: '2024-07-01T00:00:00Z' };
    // The order and what it owns (its fulfillment is a unit of its own, versioned by itself).
    const family = ['orders', ...ownedBy('orders').map((t) => t.name)];
    await ingest([newer]);
    const before = await snapshot(warehouse.connection, [], family);
    await ingest([{ ...FULL, status: 'old' }, summary({ status: 'older summary' })]);
    assert.deepEqual(await snapshot(warehouse.connection, [], family), before, 'not even _synced_at');
  });

  it('between equal versions the document received last wins the fields it carries', async () => {
    const first = summary({ status: 'first', payment_status: 'first' });
    const second: Doc = summary({ status: 'second' });
    delete second.payment_status;
    await ingest([FULL, first, second]);
    const o = await order();
    assert.equal(o.status, 'second');
    assert.equal(o.payment_status, 'first', 'the last one lacked it: the one before gives it');
    assert.equal(await count(warehouse.connection, 'order_lines'), 2);
    await ingest([summary({ status: 'third' })]);
    assert.equal((await order()).status, 'third', 'a stored row ranks below an equal version received later');
  });

  it('a document without a version gives only what the stored row lacks', async () => {
    await ingest([summary()]);
    const unversioned: Doc = { ...FULL, status: 'unversioned' };
    delete unversioned.updated_at;
    await ingest([unversioned]);
    const o = await order();
    assert.equal(o.status, 'closed', 'the versioned list item wins what both carry');
    assert.equal(o.billing_line1, '1 Analytical Way');
    assert.equal(await count(warehouse.connection, 'order_lines'), 2);
  });

  it("folds only the batch's store", async () => {
    const north = path.join(dir, 'north.ndjson');
    await writeFile(north, ndjson([FULL]));
    await ingestPaths(warehouse, [north], { store: 'north', runId: 'north', logger: silentLogger });
    const before = await snapshot(warehouse.connection, [], ORDER_TABLES);
    await ingest([summary()]);
    const after = await snapshot(warehouse.connection, [], ORDER_TABLES);
    const northOnly = (tables: Record<string, string[]>) =>
      Object.fromEntries(
        Object.entries(tables).map(([t, rows]) => [t, rows.filter((r) => r.includes('"_store":"north"'))]),
      );
    assert.deepEqual(northOnly(after), northOnly(before));
    assert.equal(await count(warehouse.connection, 'order_lines', "_store = 'shop'"), 0);
  });

  it("unmapped fields of every document stay in _extra, the newer document's over the older's", async () => {
    await ingest([{ ...FULL, zz_full: 1, zz_both: 'full' }]);
    await ingest([summary({ zz_item: 2, zz_both: 'item' })]);
    const o = await order();
    assert.deepEqual(JSON.parse(String(o._extra)), { zz_full: 1, zz_both: 'item', zz_item: 2 });
  });

  it("a newer document's unmapped field replaces the older's whole, a null included (no merge-patch)", async () => {
    await ingest([{ ...FULL, zz_gone: 'was here', zz_object: { old: 1, kept: true }, zz_full: 1 }]);
    await ingest([summary({ zz_gone: null, zz_object: { new: 2 } })]);
    const o = await order();
    // A JSON merge patch would drop `zz_gone` (null deletes) and mix the two objects, a value never sent.
    assert.deepEqual(JSON.parse(String(o._extra)), {
      zz_gone: null,
      zz_object: { new: 2 },
      zz_full: 1,
    });
  });

  it("a product's variants are replaced only by a document carrying variants or children (one array)", async () => {
    const records = JSON.parse(readFileSync(`${FIXTURES}pages/records.json`, 'utf8'));
    const product: Doc = records.products[0];
    const variants = await (async () => {
      await ingest([product]);
      return count(warehouse.connection, 'variants');
    })();
    assert.ok(variants > 0, 'the fixture has variants');
    const { variants: _, categories: __, ...summaryOfProduct } = product;
    await ingest([{ ...summaryOfProduct, title: 'Green Tea (new)', date_updated: '2024-05-01T00:00:00Z' }]);
    const [p] = await tableRows(warehouse.connection, 'products');
    assert.equal(p!.title, 'Green Tea (new)');
    assert.equal(await count(warehouse.connection, 'variants'), variants, 'lacking variants: kept');
    assert.equal(await count(warehouse.connection, 'product_categories'), 1, 'lacking categories: kept');
    const [first] = product.variants as Doc[];
    await ingest([
      {
        ...summaryOfProduct,
        date_updated: '2024-06-01T00:00:00Z',
        children: [{ ...first, id: 9999, title: 'as a child' }],
      },
    ]);
    assert.deepEqual(
      (await tableRows(warehouse.connection, 'variants')).map((v) => v.title),
      ['as a child'],
      '`children` stands for `variants`: carrying it replaces them',
    );
  });

  it('is idempotent: the same list item again, or the full order again, changes nothing', async () => {
    await ingest([FULL]);
    await ingest([summary()]);
    const once = await snapshot(warehouse.connection);
    await ingest([summary()]);
    assert.deepEqual(await snapshot(warehouse.connection), once);
    await ingest([FULL]);
    assert.deepEqual(await snapshot(warehouse.connection), once);
    await ingest([summary(), FULL, summary()]);
    assert.deepEqual(await snapshot(warehouse.connection), once);
  });

  it('works the same with worker threads', async () => {
    await ingest([FULL], { workers: 2 });
    await ingest([summary()], { workers: 2 });
    assert.deepEqual(await tables(), await alone({ ...FULL, ...summary() }));
  });

  it('rebuild from the landing reproduces the folded tables exactly', async () => {
    const user = FULL.user as Doc;
    await ingest([FULL]);
    await ingest([summary()]);
    await ingest([summary({ number: 'R-1', lines: null })]);
    await ingest([{ ...FULL, number: 'R-1', updated_at: '2024-05-01T00:00:00Z' }]);
    await ingest([summary({ number: 'R-2', user: { id: user.id, email: 'late@example.com' } })]);
    const original = await snapshot(warehouse.connection, []);
    assert.equal(original.orders?.length, 3);
    await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.deepEqual(await snapshot(warehouse.connection, []), original);
  });
});

describe('which keys fold', () => {
  it('only when the winner lacks a field another document (or the stored row) carries', () => {
    assert.equal(takesFromOthers(null, ['lines']), false, 'a winner that lacks nothing takes nothing');
    assert.equal(takesFromOthers('lines', ['lines']), false, 'the same fields: replaced whole');
    assert.equal(takesFromOthers('lines', [null]), true, 'a stored row that lacks nothing');
    assert.equal(takesFromOthers('lines,refunds', ['lines,refunds,user']), false, 'the other carries less');
    assert.equal(takesFromOthers('lines,refunds', ['refunds,lines']), false, 'the order of the names aside');
    assert.equal(takesFromOthers('lines,refunds', ['refunds', 'lines,refunds']), true);
  });

  it('every table a unit owns is replaced with one of its arrays (a carry group), and none other', () => {
    for (const def of tableDefinitions.filter((t) => t.unit)) {
      const grouped = new Set<string>();
      const visit = (root: PlanNode, node: PlanNode) => {
        if (node.unit && node.table === def.name)
          for (const group of carryGroups(root, node)) for (const t of group.tables) grouped.add(t);
        for (const child of node.children ?? []) visit(root, child);
      };
      for (const root of Object.values(plans)) visit(root, root);
      assert.deepEqual(
        [...grouped].sort(),
        ownedBy(def.name)
          .map((t) => t.name)
          .sort(),
        def.name,
      );
    }
  });

  it('order discounts split by kind; variants and children are one array', () => {
    const groups = carryGroups(plans.order, plans.order);
    assert.deepEqual(
      groups.filter((g) => g.tables.includes('order_discounts')).map((g) => [g.names, g.only]),
      [
        [['voucher_discounts'], { column: 'kind', value: 'voucher' }],
        [['offer_discounts'], { column: 'kind', value: 'offer' }],
      ],
    );
    const variants = carryGroups(plans.product, plans.product).filter((g) => g.tables.includes('variants'));
    assert.deepEqual(
      variants.map((g) => g.names),
      [['variants']],
      'one tracked name stands for both fields',
    );
  });
});
