import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  ingestWithSummary,
  killChildren,
  readWarehouse,
  runCli,
  type SandboxProxy,
  scratchWarehouses,
  startRecordProxy,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Fulfillment orders keep `created_at` and `updated_at` when the server sends them (spec 2.4 shows neither,
 * real servers do), and `updated_at` is their version: an older document received later changes nothing. A
 * document without `updated_at` behaves as before: it ranks below one that has it, and between two without,
 * the one received last wins. Through `store-sync ingest`, and through `store-sync sync` from a server that
 * adds the times (a loopback proxy in front of the sandbox, whose records follow the spec and carry none).
 */

const scratch = scratchWarehouses();

/** A fulfillment order as a server sends it, with times when given. */
function fulfillmentOrder(
  id: number,
  status: string,
  times: { created_at?: string; updated_at?: string } = {},
): Record<string, unknown> {
  return {
    id,
    order_number: `FO-${id}`,
    status,
    request_status: 'unsubmitted',
    supported_actions: status === 'open' ? ['move'] : [],
    assigned_location: { id: 2, name: 'Leeds' },
    line_items: [
      {
        id: id * 10 + 1,
        fulfillment_order_id: id,
        order_line_id: 5,
        product_id: '301',
        quantity: 1,
        fulfillable_quantity: status === 'open' ? '1' : '0',
        currency: 'EUR',
        price_excl_tax: '10.00',
        price_incl_tax: '11.90',
      },
    ],
    ...times,
  };
}

describe('store-sync: fulfillment orders keep their times, and the newest by updated_at wins', () => {
  let warehouse: string;
  let dir: string;
  /** Each ingest reads a file of its own (a new file to the ledger), in the order the test gives. */
  let files = 0;
  const ingest = async (docs: Record<string, unknown>[]) => {
    const file = path.join(dir, `fo-${++files}.ndjson`);
    await writeFile(file, `${docs.map((d) => JSON.stringify(d)).join('\n')}\n`);
    const { result, summary } = await ingestWithSummary<{ documents: number; rejections: number }>(
      [file],
      warehouse,
    );
    assertExit(result, 0);
    assert.equal(summary.rejections, 0);
    return summary;
  };
  /** The stored row, with `items`: its line items with nothing left to fulfil (they follow the winner). */
  const stored = (id: number) =>
    readWarehouse<{ status: string; created_at: string | null; updated_at: string | null; items: number }>(
      warehouse,
      `SELECT status, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created_at,
              strftime(updated_at, '%Y-%m-%dT%H:%M:%SZ') AS updated_at,
              (SELECT count(*)::INTEGER FROM fulfillment_order_line_items i
               WHERE i.fulfillment_order_id = f.id AND i.fulfillable_quantity = 0) AS items
       FROM fulfillment_orders f WHERE id = ${id}`,
    ).then((rows) => rows[0]);

  before(async () => {
    ({ dir, warehouse } = await scratch.create());
  });
  after(async () => {
    killChildren();
    assertNoSecretsOrEscapes();
    await scratch.removeAll();
  });

  it('ingest keeps created_at and updated_at; an older updated_at received later changes nothing', async () => {
    const created = '2025-03-01T08:00:00Z';
    await ingest([
      fulfillmentOrder(901, 'closed', { created_at: created, updated_at: '2025-03-02T09:30:00Z' }),
    ]);
    assert.deepEqual(await stored(901), {
      status: 'closed',
      created_at: created,
      updated_at: '2025-03-02T09:30:00Z',
      items: 1,
    });
    // The open state of the day before, delivered late (a retried webhook, an old capture): older, so ignored.
    await ingest([
      fulfillmentOrder(901, 'open', { created_at: created, updated_at: '2025-03-01T08:00:00Z' }),
    ]);
    assert.deepEqual(await stored(901), {
      status: 'closed',
      created_at: created,
      updated_at: '2025-03-02T09:30:00Z',
      items: 1,
    });
    // A newer one replaces it, with its line items.
    await ingest([
      fulfillmentOrder(901, 'open', { created_at: created, updated_at: '2025-03-03T10:00:00Z' }),
    ]);
    assert.deepEqual(await stored(901), {
      status: 'open',
      created_at: created,
      updated_at: '2025-03-03T10:00:00Z',
      items: 0,
    });
  });

  it('without updated_at: ranks below a document that has it; between two without, the last received wins', async () => {
    await ingest([fulfillmentOrder(902, 'open')]);
    assert.deepEqual(await stored(902), { status: 'open', created_at: null, updated_at: null, items: 0 });
    await ingest([fulfillmentOrder(902, 'closed')]);
    assert.equal((await stored(902))?.status, 'closed', 'two without a version: the last received wins');
    await ingest([fulfillmentOrder(902, 'in_progress', { updated_at: '2025-04-01T00:00:00Z' })]);
    assert.deepEqual(await stored(902), {
      status: 'in_progress',
      created_at: null,
      updated_at: '2025-04-01T00:00:00Z',
      items: 1,
    });
    await ingest([fulfillmentOrder(902, 'closed')]);
    assert.equal((await stored(902))?.status, 'in_progress', 'a document without updated_at ranks lowest');
  });

  it('within one file too, the newest by updated_at wins whatever the order of the lines', async () => {
    await ingest([
      fulfillmentOrder(903, 'closed', { updated_at: '2025-05-02T00:00:00Z' }),
      fulfillmentOrder(903, 'open', { updated_at: '2025-05-01T00:00:00Z' }),
    ]);
    assert.equal((await stored(903))?.status, 'closed');
  });

  describe('sync from a server that sends the times', () => {
    let sandbox: Sandbox;
    let proxy: { baseUrl: string; close: () => Promise<void> };

    before(async () => {
      sandbox = await testSandbox({ scale: 10 });
      proxy = await startTimesProxy(sandbox);
    });
    after(async () => {
      await proxy?.close();
      await sandbox?.close();
    });

    it('sync keeps created_at and updated_at of every fulfillment order it reads', async () => {
      const target = await scratch.create();
      const config = await writeConfig(target.dir, {
        warehouse: target.warehouse,
        stores: [{ name: 'eu', baseUrl: proxy.baseUrl }],
      });
      assertExit(await runCli(['sync', '--config', config, '--streams', 'fulfillment_orders']), 0);
      const rows = await readWarehouse<{ id: bigint | number; created_at: string; updated_at: string }>(
        target.warehouse,
        `SELECT id, strftime(created_at, '%Y-%m-%dT%H:%M:%SZ') AS created_at,
                strftime(updated_at, '%Y-%m-%dT%H:%M:%SZ') AS updated_at
         FROM fulfillment_orders ORDER BY id`,
      );
      assert.ok(rows.length > 0, 'the sync read fulfillment orders');
      for (const row of rows) {
        const times = timesOf(Number(row.id));
        assert.deepEqual(
          { created_at: row.created_at, updated_at: row.updated_at },
          times,
          `fulfillment order ${row.id} keeps the times the server sent`,
        );
      }
    });
  });
});

/** The times the proxy gives fulfillment order `id`: distinct per record, so a mix-up shows. */
function timesOf(id: number): { created_at: string; updated_at: string } {
  const created = Date.UTC(2025, 0, 1) + id * 3_600_000;
  const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');
  return { created_at: iso(created), updated_at: iso(created + 86_400_000) };
}

/**
 * A loopback proxy in front of the sandbox that adds `created_at`/`updated_at` to every fulfillment order it
 * returns (list pages and single records), as a server that sends them would.
 */
function startTimesProxy(upstream: Sandbox): Promise<SandboxProxy> {
  const addTimes = (record: Record<string, unknown>) => Object.assign(record, timesOf(Number(record.id)));
  return startRecordProxy(upstream, (body, pathname) => {
    if (!/fulfillment-orders\//.test(pathname)) return;
    if (Array.isArray(body.results)) (body.results as Record<string, unknown>[]).forEach(addTimes);
    else addTimes(body);
  });
}
