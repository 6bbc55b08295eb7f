import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { emptyStreamState, type StreamState } from '../../src/contracts.js';
import { ApiClient, runStream, STREAMS } from '../../src/extract/index.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions } from '../../src/streams.js';
import { count, snapshot, tempWarehouse } from './helpers.js';

/**
 * A periodic full scan of subscriptions bounded by `startDate` (docs/streams.md): it reads only what was
 * created from that day on, so it soft-deletes only such rows, children included, and leaves the older
 * rows a warehouse already holds (from runs before the start date was set, or a backfill) alone. Real
 * sandbox over loopback HTTP, real DuckDB file; rebuild replays the same bounded soft deletes.
 */

const START = '2025-06-01';
const pause = () => new Promise((resolve) => setTimeout(resolve, 5));

describe('a full scan bounded by startDate', () => {
  let sandbox: Sandbox;
  let client: ApiClient;
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  const sync = async (state: StreamState, startDate: string | null) => {
    await pause();
    const summary = await runStream({
      stream: STREAMS.subscriptions,
      client,
      state,
      mode: 'incremental',
      options: { ...defaultStreamOptions('subscriptions'), startDate },
      now: new Date(),
      logger: silentLogger,
      commit: async (page) => {
        await warehouse.commitPage(page);
      },
    });
    await pause();
    return summary;
  };

  before(async () => {
    sandbox = await startSandbox({ seed: 7, scale: 120, rateLimit: 0 });
    client = new ApiClient({
      baseUrl: sandbox.baseUrl,
      token: 'sandbox-token',
      rateLimit: 0,
      logger: silentLogger,
    });
    ({ warehouse, cleanup } = await tempWarehouse());
  });
  after(async () => {
    await client.close();
    await sandbox.close();
    await cleanup();
  });

  it('soft-deletes what vanished from its range and nothing older', async () => {
    // Before the start date was configured: an unbounded full scan loaded the whole history.
    const first = await sync(emptyStreamState(), null);
    assert.match(first.passId, /^full\//);
    const total = await count(warehouse.connection, 'subscriptions');
    const older = await count(warehouse.connection, 'subscriptions', `date_created < DATE '${START}'`);
    assert.ok(older > 0 && older < total, `some of the ${total} are older than ${START}: ${older}`);

    // Two subscriptions the warehouse holds and the API no longer returns: one created in range, one before.
    const records = [...sandbox.store.snapshot('subscriptions')] as Record<string, unknown>[];
    const day = (r: Record<string, unknown>) => String(r['date_created']).slice(0, 10);
    const recent = records.find((r) => day(r) >= START && (r['lines'] as unknown[]).length > 0)!;
    const old = records.find((r) => day(r) < START && (r['lines'] as unknown[]).length > 0)!;
    await warehouse.commitPage({
      store: 'default',
      stream: 'subscriptions',
      entity: 'subscription',
      runId: 'gone',
      records: [
        { ...recent, id: 900_001 },
        { ...old, id: 900_002 },
      ],
      rejections: [],
      state: first.state,
    });

    // The start date is set and a week has gone by: the periodic full scan reads windows from it.
    const bounded = await sync({ ...first.state, lastFullScanAt: '2025-01-01T00:00:00.000Z' }, START);
    assert.match(bounded.passId, /^full\/incremental\//);
    assert.ok(bounded.records < total, `read ${bounded.records} of ${total}`);

    const deleted = async (table: string, column: string) => {
      const reader = await warehouse.connection.runAndReadAll(
        `SELECT DISTINCT ${column} FROM ${table} WHERE _deleted_at IS NOT NULL ORDER BY 1`,
      );
      return reader.getRows().map(([id]) => Number(id));
    };
    assert.deepEqual(await deleted('subscriptions', 'id'), [900_001]);
    assert.deepEqual(await deleted('subscription_lines', 'subscription_id'), [900_001]);
    const orders = await deleted('subscription_orders', 'subscription_id');
    assert.ok(
      orders.every((id) => id === 900_001),
      `orders of ${orders}`,
    );
    assert.equal(await count(warehouse.connection, 'subscriptions', '_deleted_at IS NULL'), total + 1);

    // Rebuild replays the bounded soft deletes from the landing, to the same tables.
    const before = await snapshot(warehouse.connection, ['_synced_at', '_run_id']);
    await rebuildWarehouse(warehouse, { logger: silentLogger });
    assert.deepEqual(await snapshot(warehouse.connection, ['_synced_at', '_run_id']), before);
  });
});
