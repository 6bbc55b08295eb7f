import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import type { StreamState } from '../../src/contracts.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions } from '../../src/streams.js';
import {
  assertExit,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Issue 32 point 2 through `store-sync sync`, as cron runs it, against the embedded sandbox: a nightly run
 * with nothing changed costs a bounded handful of requests (products are not re-read before their
 * `fullRefreshDays`, open fulfillment orders are re-read in proportion to their age and within
 * `maxRefreshPerRun`); a changed product is picked up, and a removed one soft-deleted, by the next periodic
 * full scan.
 *
 * Time passes virtually: instead of sleeping a week, the test moves the times the stream state remembers
 * (`lastFullScanAt`, when each open fulfillment order was last read and since when it exists) into the
 * past, in the warehouse's `_sync_state`, between two runs. The CLI itself runs on the real clock.
 */

const DAY_MS = 86_400_000;
const PAGE_SIZE = 3;
const REFRESH_ROUTE = 'GET /fulfillment-orders/{id}/';
const CLOSED = new Set(['closed', 'cancelled', 'canceled', 'incomplete', 'fulfilled']);

/** Rewrites one stream's saved state in the warehouse, as a run would have saved it at another time. */
async function editState(file: string, stream: string, edit: (state: StreamState) => void): Promise<void> {
  const instance = await DuckDBInstance.create(file);
  const connection = await instance.connect();
  try {
    const where = `_store = 'shop' AND stream = '${stream}'`;
    const reader = await connection.runAndReadAll(`SELECT state::VARCHAR FROM _sync_state WHERE ${where}`);
    const state = JSON.parse(String(reader.getRows()[0]![0])) as StreamState;
    edit(state);
    const text = JSON.stringify(state).replaceAll("'", "''");
    const scan = state.lastFullScanAt === null ? 'NULL' : `'${state.lastFullScanAt}'::TIMESTAMPTZ`;
    await connection.run(
      `UPDATE _sync_state SET state = '${text}'::JSON, last_full_scan_at = ${scan} WHERE ${where}`,
    );
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

const shift = (iso: string, days: number) => new Date(Date.parse(iso) - days * DAY_MS).toISOString();

/** `state.extra[key]` as the id → ISO time map the fulfillment-orders stream keeps there. */
const timesOf = (state: StreamState, key: string) => state.extra[key] as Record<string, string>;

describe('store-sync sync: a nightly run costs what changed', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouse: string;
  let configFor: (streams: Record<string, unknown>) => Promise<string>;

  const read = <T = Record<string, unknown>>(sql: string) => readWarehouse<T>(warehouse, sql);
  const sync = async (streams: Record<string, unknown> = {}) => {
    sandbox.resetStats();
    assertExit(await runCli(['sync', '--config', await configFor(streams)]), 0);
    return sandbox.stats().byRoute;
  };
  const pages = (records: number) => Math.ceil(records / PAGE_SIZE) || 1;
  const openIds = () =>
    (sandbox.store.snapshot('fulfillment_orders') as { id: number; status: string }[])
      .filter((fo) => !CLOSED.has(fo.status))
      .map((fo) => String(fo.id))
      .sort((a, b) => Number(a) - Number(b));

  before(async () => {
    sandbox = await testSandbox({ scale: 40, pageSize: PAGE_SIZE });
    ({ dir, cleanup } = await tempDir());
    warehouse = path.join(dir, 'w.duckdb');
    configFor = (streams) =>
      writeConfig(dir, {
        warehouse: 'w.duckdb',
        streams,
        stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
      });
    const first = await sync();
    // The first run is a full sync: every product page was read.
    assert.ok(first['GET /products/']! >= pages(sandbox.store.counts.products));
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('with nothing changed, a second run makes at most the stated requests: no product page, refreshes within the budget', async () => {
    const budget = 2;
    assert.ok(openIds().length > budget, 'the store has more open fulfillment orders than the budget');
    const byRoute = await sync({ fulfillment_orders: { maxRefreshPerRun: budget } });
    const total = Object.values(byRoute).reduce((a, b) => a + b, 0);
    // docs/streams.md, "What a nightly run costs": the pages of the short lists, the subscription slices of
    // one empty page each (a creation window, a failing re-read, and a cancellation and a recovery window per
    // day from the watermark − lookbackDays to today: the watermark is today), one empty creation window of
    // fulfillment orders, and the refreshes.
    const days = defaultStreamOptions('subscriptions').lookbackDays + 1;
    const subscriptionSlices = 1 + 1 + 2 * days;
    const bound =
      pages(sandbox.store.counts.locations) +
      pages(sandbox.store.counts.metadata) +
      subscriptionSlices +
      1 +
      budget;
    assert.ok(total <= bound, `${total} requests, stated bound ${bound}: ${JSON.stringify(byRoute)}`);
    // Every open one was first seen minutes ago, so all are due: the budget is what bounds them.
    assert.equal(byRoute[REFRESH_ROUTE], budget);
    assert.equal(byRoute['GET /products/'], undefined, 'no product page is read');
  });

  it('re-reads open fulfillment orders in proportion to their age, the ones due longest first', async () => {
    const open = openIds();
    const [young, ...old] = open;
    // As if the old ones had been open for 40 days (due again a third of that after their last read: the
    // time since a read reaches a quarter of the age) and the young one had appeared at its last read.
    await editState(warehouse, 'fulfillment_orders', (state) => {
      const seen = timesOf(state, 'openFulfillmentOrders');
      const since = timesOf(state, 'openFulfillmentOrdersSince');
      assert.deepEqual(
        Object.keys(seen).sort((a, b) => Number(a) - Number(b)),
        open,
      );
      for (const id of old) since[id] = shift(seen[id]!, 40);
      since[young!] = seen[young!]!;
    });
    let byRoute = await sync({ fulfillment_orders: { maxRefreshPerRun: 100 } });
    assert.equal(byRoute[REFRESH_ROUTE], 1, 'only the young one is due');

    // Later by the state's clock: every one open since 40 days, last read 20 days ago (due 20 ÷ 3 days after
    // that read), except two last read 30 days ago (due 10 ÷ 3 days after theirs): all are due, and with a
    // budget of 3 the two due longest go first, then the lowest id of the rest.
    const stale = [open[3]!, open[5]!];
    const now = Date.now();
    await editState(warehouse, 'fulfillment_orders', (state) => {
      const seen = timesOf(state, 'openFulfillmentOrders');
      const since = timesOf(state, 'openFulfillmentOrdersSince');
      for (const id of open) {
        since[id] = new Date(now - 40 * DAY_MS).toISOString();
        seen[id] = new Date(now - (stale.includes(id) ? 30 : 20) * DAY_MS).toISOString();
      }
    });
    const before = timesOf(await savedState('fulfillment_orders'), 'openFulfillmentOrders');
    byRoute = await sync({ fulfillment_orders: { maxRefreshPerRun: 3 } });
    assert.equal(byRoute[REFRESH_ROUTE], 3);
    const after = timesOf(await savedState('fulfillment_orders'), 'openFulfillmentOrders');
    const refreshed = open.filter((id) => after[id] !== before[id]);
    assert.deepEqual(refreshed.sort(), [open[0]!, ...stale].sort());
  });

  it('picks up a changed product and soft-deletes a removed one at the next periodic full scan, not before', async () => {
    const summary = sandbox.store.mutate({ updateProducts: 1, removeProducts: 1, seed: 5 });
    const changed = summary.changed['products']![0]!;
    const removed = summary.removed['products']![0]!;
    const truth = (sandbox.store.snapshot('products') as { id: number; date_updated: string }[]).find(
      (p) => p.id === changed,
    )!;
    const productRow = async (id: number) =>
      (
        await read<{ updated_ms: number | null; deleted: boolean }>(
          `SELECT epoch_ms(date_updated)::DOUBLE AS updated_ms, _deleted_at IS NOT NULL AS deleted FROM products WHERE id = ${id}`,
        )
      )[0]!;
    const before = await productRow(changed);
    assert.notEqual(before.updated_ms, Date.parse(truth.date_updated));

    // Within fullRefreshDays (7 by default) of the last scan: no product page is read, nothing changes.
    let byRoute = await sync();
    assert.equal(byRoute['GET /products/'], undefined, 'no product page is read');
    assert.deepEqual(await productRow(changed), before);
    assert.equal((await productRow(removed)).deleted, false);

    // A week later by the state's clock, the run is a full scan of products.
    await editState(warehouse, 'products', (state) => {
      state.lastFullScanAt = shift(state.lastFullScanAt!, 7);
    });
    byRoute = await sync();
    assert.ok(byRoute['GET /products/']! >= pages(sandbox.store.counts.products), JSON.stringify(byRoute));
    assert.deepEqual(await productRow(changed), {
      updated_ms: Date.parse(truth.date_updated),
      deleted: false,
    });
    assert.equal((await productRow(removed)).deleted, true);
    const [{ live }] = await read<{ live: number }>(
      'SELECT count(*)::INTEGER AS live FROM products WHERE _deleted_at IS NULL',
    );
    assert.equal(live, sandbox.store.counts.products);
  });

  async function savedState(stream: string): Promise<StreamState> {
    const [row] = await read<{ state: string }>(
      `SELECT state::VARCHAR AS state FROM _sync_state WHERE _store = 'shop' AND stream = '${stream}'`,
    );
    return JSON.parse(row!.state) as StreamState;
  }
});
