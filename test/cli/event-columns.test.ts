import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { assertExit, readWarehouse, runCli, scratchWarehouses } from './helpers.js';

/**
 * What an envelope says of the document it carries is kept with the rows it made (issue 25, docs/ingest.md
 * "What is kept of an envelope"): `_event_id`, `_event_type`, `_event_at` and `_api_version_label` on every
 * unit row, NULL for a bare document. Newest wins still decides which row stays: a webhook delivered ten
 * times is one row, and a newer event for the same order replaces it with its own event id. Fixtures in
 * test/fixtures/published/, written from the spec's shapes.
 */

const PUBLISHED = path.join(import.meta.dirname, '..', 'fixtures', 'published');
const fixture = (name: string) => path.join(PUBLISHED, name);

interface EventRow {
  number: string;
  total_incl_tax: string;
  _event_id: string | null;
  _event_type: string | null;
  _event_at: string | null;
  _api_version_label: string | null;
}

const ORDERS =
  'SELECT number, CAST(total_incl_tax AS VARCHAR) AS total_incl_tax, _event_id, _event_type, ' +
  "strftime(_event_at AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%SZ') AS _event_at, _api_version_label " +
  'FROM orders ORDER BY number';

describe('store-sync ingest: the envelope kept with its rows', () => {
  const scratch = scratchWarehouses();
  after(scratch.removeAll);
  const warehouseIn = async () => (await scratch.create()).warehouse;
  const ingest = (inputs: string[], warehouse: string) =>
    runCli(['ingest', ...inputs, '--warehouse', warehouse]);
  const orders = (warehouse: string) => readWarehouse<EventRow>(warehouse, ORDERS);

  it('a webhook delivered ten times is one row; a newer event replaces it, its event id with it', async () => {
    const warehouse = await warehouseIn();
    assertExit(await ingest([fixture('webhook-redelivered.ndjson')], warehouse), 0);
    const once = {
      number: 'R-1',
      total_incl_tax: '8.000',
      _event_id: 'evt_R1',
      _event_type: 'order.created',
      _event_at: null,
      _api_version_label: '2024-04-01',
    };
    assert.deepEqual(await orders(warehouse), [once]);
    assert.deepEqual(
      await readWarehouse(warehouse, 'SELECT count(*)::INTEGER AS n FROM order_lines'),
      [{ n: 1 }],
      'the lines of ten deliveries are one set',
    );
    // The customer the order carried is a unit row the event made too.
    assert.deepEqual(await readWarehouse(warehouse, 'SELECT id::INTEGER AS id, _event_id FROM customers'), [
      { id: 77, _event_id: 'evt_R1' },
    ]);

    assertExit(await ingest([fixture('webhook-newer.json')], warehouse), 0);
    assert.deepEqual(await orders(warehouse), [
      { ...once, total_incl_tax: '9.500', _event_id: 'evt_R2', _event_type: 'order.updated' },
    ]);
  });

  it('keeps an event envelope’s timestamp and type, and labels as given, the unknown ones included', async () => {
    const warehouse = await warehouseIn();
    const result = await ingest(
      [fixture('event-order.json'), fixture('unstable.ndjson'), fixture('plain-envelope.ndjson')],
      warehouse,
    );
    assertExit(result, 0);
    const rows = (await orders(warehouse)).map(({ total_incl_tax: _, ...row }) => row);
    assert.deepEqual(rows, [
      {
        number: 'E-1',
        _event_id: null,
        _event_type: 'order.created',
        _event_at: '2024-06-10T08:15:00Z',
        _api_version_label: null,
      },
      // `{api_version, data}` with a known label (read from its bytes), then a bare order: NULL throughout.
      {
        number: 'P-1',
        _event_id: null,
        _event_type: null,
        _event_at: null,
        _api_version_label: '2024-04-01',
      },
      { number: 'P-2', _event_id: null, _event_type: null, _event_at: null, _api_version_label: null },
      {
        number: 'U-1',
        _event_id: 'evt_u1',
        _event_type: 'order.updated',
        _event_at: null,
        _api_version_label: 'unstable',
      },
      { number: 'U-2', _event_id: null, _event_type: null, _event_at: null, _api_version_label: 'unstable' },
      {
        number: 'U-3',
        _event_id: null,
        _event_type: null,
        _event_at: null,
        _api_version_label: '2031-01-01',
      },
    ]);
  });

  it('loads an event whose timestamp is not a date-time, _event_at NULL, with no rejection', async () => {
    const warehouse = await warehouseIn();
    assertExit(await ingest([fixture('event-bad-timestamp.json')], warehouse), 0);
    assert.deepEqual(await readWarehouse(warehouse, 'SELECT count(*)::INT AS n FROM _rejected_records'), [
      { n: 0 },
    ]);
    const rows = await readWarehouse<{ number: string; _event_at: string | null; _event_type: string }>(
      warehouse,
      'SELECT number, _event_at, _event_type FROM orders',
    );
    // The envelope's value is not the order's: the column stays NULL, and `_envelope` keeps it as sent.
    assert.deepEqual(rows, [{ number: 'T-1', _event_at: null, _event_type: 'order.created' }]);
    // The fixture's "timestamp": 1723000000, as sent (a number; ->> reads its JSON text).
    const kept = await readWarehouse<{ timestamp: string | null }>(
      warehouse,
      "SELECT _envelope->>'timestamp' AS timestamp FROM orders",
    );
    assert.deepEqual(kept, [{ timestamp: '1723000000' }], 'the refused timestamp is in _envelope');
  });

  it('keeps every other envelope field in _envelope, queryable with SQL; NULL for a bare document', async () => {
    const warehouse = await warehouseIn();
    assertExit(
      await ingest(
        [fixture('webhook-newer.json'), fixture('event-order.json'), fixture('plain-envelope.ndjson')],
        warehouse,
      ),
      0,
    );
    const rows = await readWarehouse<{ number: string; envelope: string | null }>(
      warehouse,
      'SELECT number, CAST(_envelope AS VARCHAR) AS envelope FROM orders ORDER BY number',
    );
    const parsed = rows.map(({ number, envelope }) => ({
      number,
      envelope: envelope === null ? null : JSON.parse(envelope),
    }));
    assert.deepEqual(parsed, [
      {
        number: 'E-1',
        envelope: {
          event_version: '1.2',
          context: { store: 'main', channel: 'storefront', session_id: 's-77' },
        },
      },
      // `{api_version, data}` has nothing more; a bare order has no envelope.
      { number: 'P-1', envelope: null },
      { number: 'P-2', envelope: null },
      {
        number: 'R-1',
        envelope: { object: 'order', webhook: { id: 9, url: 'https://hooks.example.com/webhooks/main' } },
      },
    ]);
    assert.deepEqual(
      await readWarehouse(
        warehouse,
        "SELECT id::INTEGER AS id, _envelope->>'$.webhook.id' AS hook FROM customers ORDER BY id",
      ),
      [{ id: 77, hook: '9' }],
      'every unit row an envelope made keeps it',
    );
  });
});
