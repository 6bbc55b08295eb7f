import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { emptyStreamState, type PageCommit, type Rejection } from '../../src/contracts.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { productRecord, snapshot, tableRows, tempDir } from './helpers.js';

/**
 * A full scan counts as seen every record it received: loaded, or rejected whole (by extract, or by normalize
 * for an unusable version); soft deletes mark only what it did not receive (docs/warehouse.md, "Soft deletes").
 * What was received is read back from the warehouse, so it holds across a pass resumed after a reopen, and a
 * rebuild replays each scan's marker to the same `_deleted_at`.
 */

const pause = () => new Promise((resolve) => setTimeout(resolve, 5));
const rejectedAtExtract = (key: string | null, raw: unknown): Rejection => ({
  stream: 'products',
  key,
  reason: 'ranking: expected number, received string',
  raw,
  fieldPath: 'ranking',
});

describe('a full scan counts what it received as seen', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;
  let warehouse: Warehouse;
  const warnings: Record<string, unknown>[] = [];
  const logger = createLogger({
    format: 'json',
    write: (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.level === 'warn') warnings.push(entry);
    },
  });
  let passes = 0;

  const page = (
    passStartedAt: string,
    records: Record<string, unknown>[],
    rejections: Rejection[],
    complete: boolean,
  ): PageCommit => ({
    store: 'shop',
    stream: 'products',
    entity: 'product',
    runId: `pass-${passes}`,
    records,
    rejections,
    state: emptyStreamState(),
    ...(complete ? { completedFullScan: { passStartedAt } } : {}),
  });

  /** One pass: each page commits in turn, the last one completing the scan. */
  async function fullScan(pages: { records: Record<string, unknown>[]; rejections?: Rejection[] }[]) {
    passes++;
    await pause();
    const startedAt = new Date().toISOString();
    await pause();
    for (const [i, p] of pages.entries())
      await warehouse.commitPage(page(startedAt, p.records, p.rejections ?? [], i === pages.length - 1));
    await pause();
    return startedAt;
  }

  /** `[key, deleted?]` of a table, by key. */
  const deleted = async (table: string, key: string) =>
    (await tableRows(warehouse.connection, table)).map((r) => [r[key], r._deleted_at !== null]);

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, 'warehouse.duckdb');
    warehouse = await openWarehouse(file, { logger });
    await fullScan([{ records: [1, 2, 3, 4].map((id) => productRecord(id)) }]);
  });
  after(async () => {
    await warehouse.close().catch(() => undefined);
    await cleanup();
  });

  it('a record rejected whole at extract keeps its rows live, variants and stockrecords included', async () => {
    await fullScan([
      {
        records: [productRecord(1)],
        rejections: [rejectedAtExtract('2', productRecord(2, { ranking: 'twelve' }))],
      },
      { records: [productRecord(3)] },
    ]);
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
    assert.deepEqual(await deleted('variants', 'id'), [
      [10, false],
      [20, false],
      [30, false],
      [40, true],
    ]);
    assert.deepEqual(await deleted('variant_stockrecords', 'id'), [
      [100, false],
      [200, false],
      [300, false],
      [400, true],
    ]);
  });

  it('a record rejected by normalize (its version unusable) is seen too, and one deleted before comes back', async () => {
    // Product 4 was soft-deleted by the last scan; it is received again, but its version cannot be read.
    await fullScan([
      {
        records: [
          productRecord(1),
          productRecord(2),
          productRecord(3),
          productRecord(4, { date_updated: 'not a time' }),
        ],
      },
    ]);
    const rejected = await tableRows(warehouse.connection, '_rejected_records', {
      where: "stage = 'normalize'",
    });
    assert.deepEqual(
      rejected.map((r) => [r.key, r.level]),
      [['4', 'record']],
    );
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, false],
    ]);
    assert.deepEqual(await deleted('variant_stockrecords', 'id'), [
      [100, false],
      [200, false],
      [300, false],
      [400, false],
    ]);
  });

  it('a rejection without a key suspends the pass soft deletes, with a warning', async () => {
    warnings.length = 0;
    await fullScan([
      { records: [productRecord(1)], rejections: [rejectedAtExtract(null, { title: 'no id' })] },
    ]);
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, false],
    ]);
    assert.deepEqual(
      warnings.map((w) => [w.event, w.stream, w.unkeyed]),
      [['full_scan.soft_deletes_skipped', 'products', 1]],
    );
  });

  it('so does a rejection whose key cannot be a product id (an API that changed its ids would otherwise empty the table)', async () => {
    warnings.length = 0;
    await fullScan([
      { records: [productRecord(1)], rejections: [rejectedAtExtract('prod_2', { id: 'prod_2' })] },
    ]);
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, false],
    ]);
    assert.deepEqual(
      warnings.map((w) => [w.event, w.stream, w.unkeyed]),
      [['full_scan.soft_deletes_skipped', 'products', 1]],
    );
  });

  it('the next pass without one deletes again; an unkeyed rejection of another stream does not count', async () => {
    warnings.length = 0;
    await fullScan([
      {
        records: [productRecord(1), productRecord(2), productRecord(3)],
        rejections: [{ ...rejectedAtExtract(null, {}), stream: 'locations' }],
      },
    ]);
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
    assert.deepEqual(await deleted('variants', 'id'), [
      [10, false],
      [20, false],
      [30, false],
      [40, true],
    ]);
    assert.deepEqual(warnings, []);
  });

  it('a pass resumed after the warehouse was closed counts what the first run received', async () => {
    passes++;
    const startedAt = new Date().toISOString();
    await pause();
    // The first run receives product 2 rejected and product 1, then stops.
    await warehouse.commitPage(
      page(
        startedAt,
        [productRecord(1)],
        [rejectedAtExtract('2', productRecord(2, { ranking: 'x' }))],
        false,
      ),
    );
    await warehouse.close();
    warehouse = await openWarehouse(file, { logger });
    // The next run finishes the pass: product 3 only.
    await warehouse.commitPage(page(startedAt, [productRecord(3)], [], true));
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, false],
      [3, false],
      [4, true],
    ]);
    assert.deepEqual(await deleted('variant_stockrecords', 'id'), [
      [100, false],
      [200, false],
      [300, false],
      [400, true],
    ]);
  });

  it('a rebuild replays every scan to the same _deleted_at, extract rejections of later passes notwithstanding', async () => {
    // A scan that misses product 2, then one that is suspended by an unkeyed rejection while missing product 3:
    // replaying the first marker, rebuild already holds the second pass's (kept) extract rejection, which must
    // not suspend it.
    await fullScan([{ records: [productRecord(1), productRecord(3)] }]);
    await fullScan([{ records: [productRecord(1)], rejections: [rejectedAtExtract(null, {})] }]);
    assert.deepEqual(await deleted('products', 'id'), [
      [1, false],
      [2, true],
      [3, false],
      [4, true],
    ]);
    const original = await snapshot(warehouse.connection, []);
    await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.deepEqual(await snapshot(warehouse.connection, []), original);
  });
});
