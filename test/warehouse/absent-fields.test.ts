import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { plans } from '../../src/model/index.js';
import { trackedFields } from '../../src/normalize/known.js';
import { FIXTURES, ingestDocuments, tableRows, tempWarehouse } from './helpers.js';

/**
 * `_absent_fields` says which tracked fields of a unit item its document did not carry (comma-joined, in
 * tracked order), so a partial document can leave them to the stored row: NULL for a full order, the long
 * list for an order list item (a summary without lines, addresses, transactions …). A field present as
 * JSON null is carried (it says "none"); only a missing one is absent. Both normalize paths write it.
 */

describe('_absent_fields', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let full: Record<string, unknown>;
  const tracked = trackedFields(plans.order, plans.order, '2024-04-01').map((t) => t.name);

  const absentOf = async (number: string) =>
    (await tableRows(warehouse.connection, 'orders', { where: `number = '${number}'` })).map(
      (r) => r._absent_fields,
    );

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    full = JSON.parse(await readFile(path.join(FIXTURES, 'order-2024.json'), 'utf8'));
  });
  after(() => cleanup());

  it('is NULL for an order that carries every tracked field', async () => {
    assert.ok(
      tracked.every((field) => field in full),
      'the 2024 fixture carries every tracked field',
    );
    await ingestPaths(warehouse, [path.join(FIXTURES, 'order-2024.json')], {
      store: 'shop',
      runId: 'full',
      logger: silentLogger,
    });
    assert.deepEqual(await absentOf('G-2024'), [null]);
  });

  it("lists, in tracked order, what an order list item's summary lacks", async () => {
    const carried = [
      'number',
      'created_at',
      'date_placed',
      'updated_at',
      'status',
      'payment_status',
      'fulfillment_status',
      'currency',
      'total_incl_tax',
    ];
    const summary = Object.fromEntries(carried.map((field) => [field, full[field]]));
    summary.number = 'L-1';
    // In its version's envelope: a summary shows nothing of its shape.
    await ingestDocuments(warehouse, dir, 'summary.ndjson', [{ api_version: '2024-04-01', data: summary }]);
    const expected = tracked.filter((field) => !carried.includes(field));
    assert.ok(expected.includes('lines') && expected.includes('billing_address'));
    assert.deepEqual(await absentOf('L-1'), [expected.join(',')]);
  });

  it('counts a field present as null as carried', async () => {
    const withNulls = {
      ...full,
      number: 'N-1',
      lines: null,
      billing_address: null,
      subscription_lifecycle: null,
    };
    delete (withNulls as Record<string, unknown>).shipping_address;
    delete (withNulls as Record<string, unknown>).tags;
    await ingestDocuments(warehouse, dir, 'nulls.ndjson', [withNulls]);
    // Only the missing ones are absent, in tracked order.
    const expected = tracked.filter((field) => field === 'shipping_address' || field === 'tags');
    assert.equal(expected.length, 2);
    assert.deepEqual(await absentOf('N-1'), [expected.join(',')]);
  });
});
