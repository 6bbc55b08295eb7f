import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { BatchWriter } from '../../src/load/batch-writer.js';
import { KIND, loadRecord } from '../../src/load/documents.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { productRecord, tempDir } from './helpers.js';

/**
 * The history of a batch whose records were none of them stored before is written without looking for their
 * current versions (src/load/history.ts, firstVersionsSql). It must be exactly what the lookup writes, and it
 * must not touch the records of another batch of the same transaction dated to the same millisecond.
 */

const SYNCED_AT_MS = Date.parse('2026-11-27T12:00:00.000Z');
const HISTORIES = ['products', 'variants', 'variant_prices', 'variant_stockrecords'];
const KEYS: Record<string, string> = {
  products: 'id',
  variants: 'id',
  variant_prices: 'variant_id, currency',
  variant_stockrecords: 'id',
};

/** Writes each list of products as a batch of its own, all in one transaction, dated alike. */
async function loadInOneTransaction(warehouse: Warehouse, batches: Record<string, unknown>[][]) {
  const tx = await warehouse.begin();
  for (const records of batches) {
    const batch = warehouse.newBatch({ store: 'shop', runId: 'run-1', syncedAtMs: SYNCED_AT_MS });
    for (const record of records) {
      const text = JSON.stringify(record);
      loadRecord(batch, batch.land('products', 'product', KIND.record, null, text), text, record);
    }
    await tx.write(BatchWriter.of(batch));
  }
  await tx.commit();
}

async function history(warehouse: Warehouse, table: string, where = 'true') {
  const reader = await warehouse.connection.runAndReadAll(
    `SELECT * FROM ${table}_history WHERE ${where} ORDER BY ${KEYS[table]}, _version`,
  );
  return reader.getRowsJS();
}

/**
 * Whether the warehouse's connection ever looked versions up (writeHistory leaves its temporary tables to the
 * next batch): the first versions' own way creates none.
 */
async function lookedUp(warehouse: Warehouse): Promise<boolean> {
  const reader = await warehouse.connection.runAndReadAll(
    "SELECT count(*)::INTEGER FROM duckdb_tables() WHERE temporary AND table_name = 'history_changes'",
  );
  return reader.getRowsJS()[0]![0] === 1;
}

describe('first versions, written without a lookup', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  it('two batches of one transaction dated to the same millisecond: each record gets one version', async () => {
    const warehouse = await openWarehouse(path.join(dir, 'same-ms.duckdb'));
    try {
      await loadInOneTransaction(warehouse, [[productRecord(1), productRecord(2)], [productRecord(3)]]);
      for (const table of HISTORIES) {
        const reader = await warehouse.connection.runAndReadAll(
          `SELECT count(*)::INTEGER, count(DISTINCT (${KEYS[table]}))::INTEGER, max(_version)::INTEGER FROM ${table}_history`,
        );
        assert.deepEqual(reader.getRowsJS(), [[3, 3, 1]], `${table}: three records, one version each`);
      }
      assert.equal(await lookedUp(warehouse), false, 'both batches took the way without a lookup');
    } finally {
      await warehouse.close();
    }
  });

  it('are the versions the lookup writes for a new record beside a stored one', async () => {
    // Product 2 is new in both warehouses: alone in its batch in the first (no lookup), beside the stored
    // product 1 in the second (the lookup's way).
    const alone = await openWarehouse(path.join(dir, 'alone.duckdb'));
    const beside = await openWarehouse(path.join(dir, 'beside.duckdb'));
    try {
      await loadInOneTransaction(alone, [[productRecord(2, { title: 'Second' })]]);
      await loadInOneTransaction(beside, [[productRecord(1)]]);
      await loadInOneTransaction(beside, [[productRecord(1), productRecord(2, { title: 'Second' })]]);
      assert.equal(await lookedUp(alone), false, 'product 2 alone: no lookup');
      assert.equal(await lookedUp(beside), true, 'product 2 beside a stored product: the lookup');
      const ofProduct2: Record<string, string> = {
        products: 'id = 2',
        variants: 'product_id = 2',
        variant_prices: 'variant_id = 20',
        variant_stockrecords: 'variant_id = 20',
      };
      for (const table of HISTORIES) {
        const expected = await history(beside, table, ofProduct2[table]);
        assert.equal(expected.length, 1, `${table}: product 2 has one version`);
        assert.deepEqual(await history(alone, table, ofProduct2[table]), expected, table);
      }
    } finally {
      await alone.close();
      await beside.close();
    }
  });
  it("a sync's group of pages, dated by a time of its own, needs no key list: 1,200 new products in one group", async () => {
    // Over KEYS_IN_SQL (1,000) keys, a batch that may share its time with another takes the lookup; a sync's
    // group (Warehouse.commitPagesBatch) never shares it, and writes first versions by its time and run.
    const grouped = await openWarehouse(path.join(dir, 'group.duckdb'));
    const batched = await openWarehouse(path.join(dir, 'batched.duckdb'));
    try {
      const products = Array.from({ length: 1_200 }, (_, i) => productRecord(i + 1));
      const pages = Array.from({ length: 12 }, (_, n) => ({
        store: 'shop',
        stream: 'products',
        entity: 'product' as const,
        runId: 'run-1',
        records: products.slice(n * 100, n * 100 + 100),
        rejections: [],
        state: { ...emptyStreamState(), extra: { page: n } },
      }));
      await grouped.commitPages(pages);
      await loadInOneTransaction(batched, [products]);
      assert.equal(await lookedUp(grouped), false, 'the group took the way without a lookup');
      assert.equal(await lookedUp(batched), true, 'a batch that may share its time took the lookup');
      const versions = (w: Warehouse, table: string) =>
        w.connection
          .runAndReadAll(
            `SELECT * EXCLUDE (_synced_at, _observed_run_id) FROM ${table}_history ORDER BY ${KEYS[table]}, _version`,
          )
          .then((reader) => reader.getRowsJS());
      for (const table of HISTORIES) {
        const expected = await versions(batched, table);
        assert.equal(expected.length, 1_200, `${table}: a version per record`);
        assert.deepEqual(await versions(grouped, table), expected, table);
      }
    } finally {
      await grouped.close();
      await batched.close();
    }
  });
});
