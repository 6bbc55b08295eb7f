import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { tableRows, tempWarehouse } from './helpers.js';

/** A completed full scan soft-deletes what it did not see (`_deleted_at`), and a record that reappears is live again. */

const product = (id: number) => ({
  id,
  title: `P${id}`,
  variants: [{ id: id * 10, sku: `S${id}`, prices: [{ currency: 'EUR', price: '1.00' }] }],
});
const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('soft deletes of full scans', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  const passes: string[] = [];

  async function fullScan(pages: number[][]): Promise<void> {
    await pause();
    const startedAt = new Date().toISOString();
    passes.push(startedAt);
    await pause();
    for (const [i, ids] of pages.entries()) {
      const last = i === pages.length - 1;
      const page: PageCommit = {
        store: 'shop',
        stream: 'products',
        entity: 'product',
        runId: `pass-${passes.length}`,
        records: ids.map(product),
        rejections: [],
        state: { ...emptyStreamState(), lastFullScanAt: last ? startedAt : null },
        ...(last ? { completedFullScan: { passStartedAt: startedAt } } : {}),
      };
      await warehouse.commitPage(page);
    }
  }

  const deleted = async (table: string) =>
    (await tableRows(warehouse.connection, table)).map((r) => [r.id ?? r.variant_id, r._deleted_at]);

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
  });
  after(() => cleanup());

  it('a first scan loads everything live', async () => {
    await fullScan([[1, 2], [3]]);
    assert.deepEqual(await deleted('products'), [
      [1, null],
      [2, null],
      [3, null],
    ]);
  });

  it('a record missing from a completed scan gets _deleted_at (the scan start), children included', async () => {
    await fullScan([[1], [3]]);
    const at = `${passes[1]!
      .replace('T', ' ')
      .replace(/(\.\d*?)0*Z$/, '$1')
      .replace(/\.$/, '')}+00`;
    assert.deepEqual(await deleted('products'), [
      [1, null],
      [2, at],
      [3, null],
    ]);
    assert.deepEqual(await deleted('variants'), [
      [10, null],
      [20, at],
      [30, null],
    ]);
    assert.deepEqual(await deleted('variant_prices'), [
      [10, null],
      [20, at],
      [30, null],
    ]);
  });

  it('a scan that has not completed deletes nothing', async () => {
    await warehouse.commitPage({
      store: 'shop',
      stream: 'products',
      entity: 'product',
      runId: 'partial',
      records: [product(1)],
      rejections: [],
      state: emptyStreamState(),
    });
    assert.equal((await deleted('products')).filter(([, d]) => d !== null).length, 1);
  });

  it('a record that reappears is live again', async () => {
    await fullScan([[1, 2, 3]]);
    assert.deepEqual(await deleted('products'), [
      [1, null],
      [2, null],
      [3, null],
    ]);
    assert.deepEqual(await deleted('variants'), [
      [10, null],
      [20, null],
      [30, null],
    ]);
  });

  it('another store in the same warehouse is untouched', async () => {
    await warehouse.commitPage({
      store: 'other',
      stream: 'products',
      entity: 'product',
      runId: 'other',
      records: [product(9)],
      rejections: [],
      state: emptyStreamState(),
    });
    await fullScan([[1]]);
    const rows = await tableRows(warehouse.connection, 'products');
    assert.deepEqual(
      rows.map((r) => [r._store, r.id, r._deleted_at === null]),
      [
        ['other', 9, true],
        ['shop', 1, true],
        ['shop', 2, false],
        ['shop', 3, false],
      ],
    );
  });
});
