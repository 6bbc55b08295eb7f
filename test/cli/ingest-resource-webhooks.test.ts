import assert from 'node:assert/strict';
import path from 'node:path';
import { after, it } from 'node:test';
import { assertExit, ingestWithSummary, readWarehouse, scratchWarehouses } from './helpers.js';

/**
 * Webhooks of the resources a sync reads (docs/ingest.md, "Envelopes and containers"): a location, a metadata
 * definition and a fulfillment order delivered as webhook envelopes land in the tables the sync fills, with
 * the envelope's event id kept on the row. The fixture is written from the spec's shapes.
 */

const FIXTURE = path.join(import.meta.dirname, '..', 'fixtures', 'published', 'webhooks-resources.ndjson');

const scratch = scratchWarehouses();
after(scratch.removeAll);

it('location, metadata and fulfillment-order webhooks load into their tables, with no rejection', async () => {
  const { warehouse } = await scratch.create();
  const { result, summary } = await ingestWithSummary<{
    documents: number;
    rejections: number;
    skipped?: unknown;
  }>([FIXTURE], warehouse);
  assertExit(result, 0);
  assert.equal(summary.documents, 3);
  assert.equal(summary.rejections, 0);
  assert.equal(summary.skipped, undefined, 'nothing skipped: each object has a table');
  const [row] = await readWarehouse<Record<string, unknown>>(
    warehouse,
    `SELECT
       (SELECT name || ' ' || _event_id FROM locations WHERE id = 61) AS location,
       (SELECT key || ' ' || _event_id FROM metadata_definitions WHERE id = 71) AS metadata,
       (SELECT order_number || ' ' || status || ' ' || _event_id FROM fulfillment_orders WHERE id = 75) AS fulfillment_order,
       (SELECT count(*) FROM fulfillment_order_line_items WHERE fulfillment_order_id = 75) AS line_items,
       (SELECT count(*) FROM _rejected_records) AS rejected`,
  );
  assert.deepEqual(row, {
    location: 'North warehouse evt_loc_1',
    metadata: 'gift_note evt_meta_1',
    fulfillment_order: '100201 open evt_fo_1',
    line_items: 1,
    rejected: 0,
  });
});
