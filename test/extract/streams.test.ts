import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { type ApiClient, runStream, STREAMS } from '../../src/extract/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions, type StreamName } from '../../src/streams.js';
import { captureLogger, MemoryWarehouse } from './helpers.js';
import {
  ALL_STREAMS,
  SANDBOX_TOKEN,
  type SyncResult,
  sandboxClient,
  syncStreams,
  truth,
} from './sandbox-helpers.js';

const SCALE = 120;
const { logger, lines } = captureLogger();
const sandboxes: Sandbox[] = [];
const clients: ApiClient[] = [];

/** The seeded history ends on 2026-01-01; the test's clock starts a few hours later. */
let clockMs = Date.parse('2026-01-01T08:00:00Z');
const clock = () => new Date(clockMs);

async function sandbox(pageSize: number): Promise<Sandbox> {
  const s = await startSandbox({ seed: 7, scale: SCALE, pageSize, rateLimit: 0, clock });
  sandboxes.push(s);
  return s;
}

function client(s: Sandbox): ApiClient {
  const c = sandboxClient(s, logger);
  clients.push(c);
  return c;
}

/** Every stream's extracted rows equal the sandbox's records: same keys, same JSON. */
function assertEqualsTruth(s: Sandbox, result: SyncResult, streams: StreamName[] = ALL_STREAMS): void {
  for (const name of streams) {
    assert.equal(result.errors[name], undefined, `${name} failed: ${String(result.errors[name])}`);
    const expected = truth(s, name);
    const rows = result.warehouses[name].rows;
    assert.ok(expected.size > 0, `${name} has records in the sandbox`);
    assert.equal(rows.size, expected.size, `${name}: count`);
    assert.deepEqual([...rows.keys()].sort(), [...expected.keys()].sort(), `${name}: key set`);
    for (const [key, record] of expected) assert.deepEqual(rows.get(key), record, `${name} ${key}: content`);
    assert.equal(result.warehouses[name].rejections.length, 0, `${name}: no rejections`);
  }
}

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(sandboxes.map((s) => s.close()));
  assert.ok(lines.length > 0);
  for (const line of lines) assert.ok(!line.includes(SANDBOX_TOKEN), `token leaked: ${line}`);
});

describe('full extraction equals the sandbox', () => {
  for (const pageSize of [1, 7, 100]) {
    it(`every stream at page size ${pageSize}`, async () => {
      const s = await sandbox(pageSize);
      const result = await syncStreams({ client: client(s), now: clock(), logger });
      assertEqualsTruth(s, result);
      const subscriptions = result.summaries.subscriptions!;
      assert.equal(subscriptions.pages, Math.max(1, Math.ceil(SCALE / pageSize)));
      // A first run is a full scan: it completes with the soft-delete marker and the watermark.
      const last = result.warehouses.products.commits.at(-1)!;
      assert.deepEqual(last.completedFullScan, { passStartedAt: clock().toISOString() });
      assert.equal(last.state.watermark, '2026-01-01');
      assert.equal(result.warehouses.fulfillment_orders.commits.at(-1)!.completedFullScan, undefined);
    });
  }

  it('by date windows from a start date, several chains at once, equals it too', async () => {
    const s = await sandbox(7);
    const options = { startDate: '2023-12-01', windowDays: 60, concurrency: 3, fullRefreshDays: null };
    const result = await syncStreams({ client: client(s), now: clock(), logger, options });
    assertEqualsTruth(s, result);
    const planned = Object.keys(result.warehouses.subscriptions.commits[0]!.state.pass!.slices);
    assert.ok(planned.length >= 13, `windows + canceled + recovered + failing slices, got ${planned.length}`);
    assert.ok(planned.includes('created:2023-12-01..2024-01-29'));
    assert.equal(result.summaries.subscriptions!.state.lastFullScanAt, null, 'windows are not a full scan');
  });
});

describe('incremental runs', () => {
  it('converge on the truth after creates, cancels, recoveries, failures, moves and removals', async () => {
    const s = await sandbox(7);
    const api = client(s);
    const first = await syncStreams({ client: api, now: clock(), logger });
    assertEqualsTruth(s, first);

    clockMs = Date.parse('2026-01-02T09:30:00Z');
    const summary = s.store.mutate({
      createSubscriptions: 6,
      cancelSubscriptions: 5,
      recoverSubscriptions: 4,
      failSubscriptions: 4,
      createProducts: 2,
      removeProducts: 2,
      updateProducts: 3,
      createFulfillmentOrders: 3,
      moveFulfillmentOrders: 2,
      closeFulfillmentOrders: 2,
      createLocations: 1,
      removeLocations: 1,
      seed: 3,
    });
    assert.ok((summary.changed['fulfillment_orders'] ?? []).length >= 3, 'moves and closes happened');
    s.resetStats();
    const second = await syncStreams({ client: api, now: clock(), logger, previous: first });
    assertEqualsTruth(
      s,
      second,
      ALL_STREAMS.filter((name) => name !== 'products'),
    );
    // Products are read whole only every fullRefreshDays (7): a day after the first scan, not at all; a week
    // after it, the periodic scan converges on them, removals included.
    assert.equal(second.summaries.products!.requests, 0);
    assert.match(second.summaries.products!.passId, /^windows\//);
    const weekLater = await syncStreams({
      client: api,
      now: new Date(Date.parse('2026-01-08T08:00:00Z')),
      logger,
      previous: second,
      streams: ['products'],
    });
    assertEqualsTruth(s, weekLater, ['products']);
    assert.match(weekLater.summaries.products!.passId, /^full\//);

    const subscriptions = second.summaries.subscriptions!;
    assert.match(
      subscriptions.passId,
      /^windows\//,
      'a nightly subscriptions run reads windows, not everything',
    );
    assert.equal(subscriptions.state.watermark, '2026-01-02');
    const byRoute = s.stats().byRoute;
    assert.ok((byRoute['GET /fulfillment-orders/{id}/'] ?? 0) > 0, 'open fulfillment orders were refreshed');
    s.resetStats();
    clockMs = Date.parse('2026-01-03T09:30:00Z');
    await syncStreams({ client: api, now: clock(), logger, previous: second, streams: ['subscriptions'] });
    assert.ok(
      (s.stats().byRoute['GET /subscriptions/'] ?? 0) < Math.ceil(SCALE / 7),
      'cheaper than a full scan',
    );
  });

  it('resumes a pass killed mid-way and ends with every record once, without re-reading committed pages', async () => {
    const s = await sandbox(5);
    const api = client(s);
    const warehouse = new MemoryWarehouse();
    warehouse.failAfter = 9;
    const args = {
      stream: STREAMS.subscriptions,
      client: api,
      mode: 'incremental' as const,
      options: {
        ...defaultStreamOptions('subscriptions'),
        startDate: '2023-12-01',
        windowDays: 120,
        concurrency: 3,
      },
      now: clock(),
      commit: warehouse.commit,
      logger,
    };
    const killed = await runStream({
      ...args,
      options: { ...args.options, fullRefreshDays: null },
      state: emptyStreamState(),
    }).catch((e: unknown) => e);
    assert.match(String(killed), /simulated kill/);
    const saved = warehouse.state!;
    assert.ok(
      Object.values(saved.pass!.slices).some((slice) => slice.nextUrl !== null && !slice.done),
      'saved mid-slice',
    );
    warehouse.failAfter = Number.POSITIVE_INFINITY;
    const resumed = await runStream({
      ...args,
      options: { ...args.options, fullRefreshDays: null },
      state: saved,
    });
    assert.equal(resumed.resumed, true);
    const expected = truth(s, 'subscriptions');
    assert.deepEqual(
      warehouse.keys(),
      [...expected.keys()].map(Number).sort((a, b) => a - b),
    );
    const uninterrupted = new MemoryWarehouse();
    const fresh = await runStream({
      ...args,
      options: { ...args.options, fullRefreshDays: null },
      state: emptyStreamState(),
      commit: uninterrupted.commit,
    });
    // The resumed run fetched only what was not committed (plus at most one prefetched page per chain).
    assert.ok(resumed.requests + 9 <= fresh.requests + 3, `${resumed.requests} + 9 vs ${fresh.requests}`);
  });

  it('backfill and full refresh never move the watermark; a full refresh records its scan', async () => {
    const s = await sandbox(50);
    const api = client(s);
    const state = {
      ...emptyStreamState(),
      watermark: '2025-12-31',
      lastFullScanAt: '2025-12-30T00:00:00.000Z',
    };
    const base = {
      stream: STREAMS.subscriptions,
      client: api,
      options: defaultStreamOptions('subscriptions'),
      now: clock(),
      logger,
    };
    const backfill = new MemoryWarehouse();
    const b = await runStream({
      ...base,
      state,
      mode: 'backfill',
      window: { from: '2025-06-01', to: '2025-08-31' },
      commit: backfill.commit,
    });
    assert.equal(b.state.watermark, '2025-12-31');
    assert.equal(b.state.lastFullScanAt, state.lastFullScanAt);
    assert.deepEqual(Object.keys(backfill.commits[0]!.state.pass!.slices), [
      'created:2025-06-01..2025-06-30',
      'created:2025-07-01..2025-07-30',
      'created:2025-07-31..2025-08-29',
      'created:2025-08-30..2025-08-31',
    ]);
    for (const record of backfill.rows.values()) {
      const day = String(record['date_created']).slice(0, 10);
      assert.ok(day >= '2025-06-01' && day <= '2025-08-31', day);
    }
    // A fulfillment-order backfill reads its windows and leaves the refresh of open ones to nightly runs.
    const fos = new MemoryWarehouse();
    const foBase = {
      ...base,
      stream: STREAMS.fulfillment_orders,
      options: defaultStreamOptions('fulfillment_orders'),
    };
    const seen = await runStream({
      ...foBase,
      state: emptyStreamState(),
      mode: 'incremental',
      commit: fos.commit,
    });
    assert.ok(
      Object.keys(seen.state.extra['openFulfillmentOrders'] as object).length > 0,
      'open ones remembered',
    );
    s.resetStats();
    await runStream({
      ...foBase,
      now: new Date(clock().getTime() + 86_400_000),
      state: seen.state,
      mode: 'backfill',
      window: { from: '2025-12-01', to: '2025-12-31' },
      commit: fos.commit,
    });
    assert.equal(s.stats().byRoute['GET /fulfillment-orders/{id}/'] ?? 0, 0);
    assert.ok((s.stats().byRoute['GET /assigned-fulfillment-orders/'] ?? 0) > 0);

    const full = new MemoryWarehouse();
    const f = await runStream({ ...base, state, mode: 'full_refresh', commit: full.commit });
    assert.equal(f.state.watermark, '2025-12-31');
    assert.equal(f.state.lastFullScanAt, clock().toISOString());
    assert.equal(full.rows.size, SCALE);
    assert.deepEqual(full.commits.at(-1)!.completedFullScan, { passStartedAt: clock().toISOString() });
  });

  it('runs the periodic full scan when the last one is older than fullRefreshDays', async () => {
    const s = await sandbox(100);
    const api = client(s);
    const now = new Date('2026-01-01T12:00:00Z');
    const stale = {
      ...emptyStreamState(),
      watermark: '2025-12-31',
      lastFullScanAt: '2025-12-25T11:00:00.000Z',
    };
    const options = defaultStreamOptions('subscriptions');
    const run = (state: typeof stale) =>
      runStream({
        stream: STREAMS.subscriptions,
        client: api,
        state,
        mode: 'incremental',
        options,
        now,
        logger,
        commit: async () => {},
      });
    assert.match((await run(stale)).passId, /^full\//);
    assert.match((await run({ ...stale, lastFullScanAt: '2025-12-25T13:00:00.000Z' })).passId, /^windows\//);
  });
});

describe('startDate bounds every pass by creation day', () => {
  const START = '2025-10-01';
  const createdDay = (record: unknown) =>
    String((record as Record<string, unknown>)['date_created']).slice(0, 10);
  const inScope = (s: Sandbox) =>
    new Map([...truth(s, 'subscriptions')].filter(([, r]) => createdDay(r) >= START));

  it('subscriptions: first run, nightly runs, periodic full scans and full refreshes never read older records', async () => {
    let ms = Date.parse('2026-01-01T08:00:00Z');
    const s = await startSandbox({
      seed: 7,
      scale: SCALE,
      pageSize: 7,
      rateLimit: 0,
      clock: () => new Date(ms),
    });
    sandboxes.push(s);
    const api = client(s);
    // The default fullRefreshDays (7) with a start date, as in docs/configuration.md.
    const options = { startDate: START };
    const run = (previous?: SyncResult, mode?: 'full_refresh') =>
      syncStreams({
        client: api,
        now: new Date(ms),
        logger,
        options,
        streams: ['subscriptions'],
        ...(previous ? { previous } : {}),
        ...(mode ? { mode } : {}),
      });
    const assertInScope = (result: SyncResult, from: number, what: string) => {
      const warehouse = result.warehouses.subscriptions;
      assert.equal(result.errors.subscriptions, undefined, `${what}: ${String(result.errors.subscriptions)}`);
      for (const commit of warehouse.commits.slice(from))
        for (const record of commit.records)
          assert.ok(createdDay(record) >= START, `${what} read ${createdDay(record)}`);
      const expected = inScope(s);
      assert.deepEqual([...warehouse.rows.keys()].sort(), [...expected.keys()].sort(), `${what}: key set`);
      for (const [key, record] of expected)
        assert.deepEqual(warehouse.rows.get(key), record, `${what} ${key}`);
    };
    const older = truth(s, 'subscriptions').size - inScope(s).size;
    assert.ok(
      inScope(s).size > 0 && older > 0,
      'the seeded history starts before START and goes on after it',
    );

    // The first run reads windows from the start date, and they count as the full scan: a bounded one.
    const first = await run();
    const firstPass = first.warehouses.subscriptions.commits[0]!.state.pass!;
    assert.match(first.summaries.subscriptions!.passId, /^full\/incremental\//);
    assert.deepEqual(Object.keys(firstPass.slices), [
      'created:2025-10-01..2025-10-30',
      'created:2025-10-31..2025-11-29',
      'created:2025-11-30..2025-12-29',
      'created:2025-12-30..',
    ]);
    assertInScope(first, 0, 'first run');
    assert.equal(first.summaries.subscriptions!.state.lastFullScanAt, new Date(ms).toISOString());
    assert.deepEqual(first.warehouses.subscriptions.commits.at(-1)!.completedFullScan, {
      passStartedAt: new Date(ms).toISOString(),
      createdFrom: START,
    });

    // Subscriptions created before START change too; the nightly run's re-reads leave them out.
    ms = Date.parse('2026-01-02T09:30:00Z');
    const before = truth(s, 'subscriptions');
    const changed = s.store.mutate({
      createSubscriptions: 3,
      cancelSubscriptions: 8,
      recoverSubscriptions: 4,
      failSubscriptions: 4,
      seed: 5,
    }).changed['subscriptions']!;
    assert.ok(
      changed.some((id) => createdDay(before.get(String(id))) < START),
      'an older one was canceled, recovered or failed',
    );
    let seen = first.warehouses.subscriptions.commits.length;
    const second = await run(first);
    assert.match(second.summaries.subscriptions!.passId, /^windows\//, 'the next night is not a full scan');
    assertInScope(second, seen, 'nightly run');

    // A week on, the periodic full scan reads from START again and soft-deletes only within it.
    ms = Date.parse('2026-01-09T09:30:00Z');
    seen = second.warehouses.subscriptions.commits.length;
    const third = await run(second);
    assert.match(third.summaries.subscriptions!.passId, /^full\/incremental\//);
    assertInScope(third, seen, 'periodic full scan');
    assert.equal(third.warehouses.subscriptions.commits.at(-1)!.completedFullScan?.createdFrom, START);

    seen = third.warehouses.subscriptions.commits.length;
    const fourth = await run(third, 'full_refresh');
    assert.match(fourth.summaries.subscriptions!.passId, /^full\/full_refresh\//);
    assertInScope(fourth, seen, 'full refresh');
  });

  it('fulfillment orders: a full refresh reads from startDate, and a lookback never reaches behind it', async () => {
    const s = await sandbox(7);
    const api = client(s);
    const now = new Date('2026-01-01T08:00:00Z');
    const options = { ...defaultStreamOptions('fulfillment_orders'), startDate: START, maxRefreshPerRun: 0 };
    const base = { stream: STREAMS.fulfillment_orders, client: api, now, logger, options };
    const windows = new MemoryWarehouse();
    await runStream({
      ...base,
      state: emptyStreamState(),
      mode: 'backfill',
      window: { from: START, to: '2026-01-01' },
      commit: windows.commit,
    });
    const full = new MemoryWarehouse();
    const refresh = await runStream({
      ...base,
      state: emptyStreamState(),
      mode: 'full_refresh',
      commit: full.commit,
    });
    assert.match(refresh.passId, /^full\/full_refresh\//);
    assert.ok(full.rows.size > 0 && full.rows.size < truth(s, 'fulfillment_orders').size);
    assert.deepEqual(full.keys(), windows.keys(), 'what was created from START on, and nothing older');

    const nightly = new MemoryWarehouse();
    await runStream({
      ...base,
      options: { ...options, lookbackDays: 5 },
      state: { ...emptyStreamState(), watermark: '2025-10-02' },
      mode: 'incremental',
      commit: nightly.commit,
    });
    assert.equal(Object.keys(nightly.commits[0]!.state.pass!.slices)[0], 'created:2025-10-01..2025-10-30');
  });
});

describe('subscriptions: the one-day windows that date cancellations and recoveries', () => {
  const plan = (watermark: string | null, startDate: string | null) =>
    STREAMS.subscriptions.plan({
      mode: 'incremental',
      state: { ...emptyStreamState(), watermark, lastFullScanAt: '2026-03-09T00:00:00Z' },
      options: { ...defaultStreamOptions('subscriptions'), startDate, fullRefreshDays: null },
      now: new Date('2026-03-10T08:00:00Z'),
    });
  const dated = (slices: { params: Record<string, string | string[]> }[]) =>
    slices.map((s) => STREAMS.subscriptions.windowEvent?.(s.params) ?? null);

  it('a nightly run reads one window per day since watermark − lookback, each dating its records', () => {
    const { slices } = plan('2026-03-09', null);
    const cancels = slices.filter((s) => 'cancel_date_from' in s.params);
    assert.deepEqual(
      cancels.map((s) => s.id),
      ['canceled:2026-03-07', 'canceled:2026-03-08', 'canceled:2026-03-09', 'canceled:2026-03-10'],
    );
    assert.deepEqual(dated(cancels), [
      { event: 'cancelled', day: '2026-03-07' },
      { event: 'cancelled', day: '2026-03-08' },
      { event: 'cancelled', day: '2026-03-09' },
      { event: 'cancelled', day: '2026-03-10' },
    ]);
    const recoveries = slices.filter((s) => 'recoveries_date_from' in s.params);
    assert.deepEqual(dated(recoveries).at(-1), { event: 'recovered', day: '2026-03-10' });
    assert.equal(recoveries.length, 4);
    // The creation windows and the failing re-read date nothing.
    assert.ok(
      dated(
        slices.filter((s) => !('cancel_date_from' in s.params || 'recoveries_date_from' in s.params)),
      ).every((d) => d === null),
    );
  });

  it('a run from a start date years back dates only its last 14 days, the rest in one window', () => {
    const { slices } = plan(null, '2020-01-01');
    const cancels = slices.filter((s) => 'cancel_date_from' in s.params);
    assert.equal(cancels.length, 15);
    assert.deepEqual(cancels[0]!.params, {
      date_from: '2020-01-01',
      cancel_date_from: '2020-01-01',
      cancel_date_to: '2026-02-24',
    });
    assert.equal(dated(cancels)[0], null);
    const lastFourteen = Array.from({ length: 14 }, (_, i) =>
      new Date(Date.UTC(2026, 1, 25 + i)).toISOString().slice(0, 10),
    );
    assert.deepEqual(
      dated(cancels)
        .slice(1)
        .map((d) => d!.day),
      lastFourteen,
    );
    assert.equal(lastFourteen.at(-1), '2026-03-10');
  });
});
