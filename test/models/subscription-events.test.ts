import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertExit, readWarehouse, runCli, sandboxJob } from '../cli/helpers.js';

/**
 * Issue 27, `subscription_events` (src/model/analytics/subscription-events.ts), through the CLI against the
 * embedded sandbox as a moving target: the first sync's events are what the sandbox's subscriptions say
 * (their creation, the state they are first seen in, their renewals), the changes made between syncs (one
 * subscription created, one cancelled, one failing, one recovered) add exactly their events, dated by the sync
 * that saw them, and a repeated sync adds none.
 */

interface Truth {
  id: number;
  status: string;
  date_created: string;
  orders: { order_number: string; billing_cycle: number }[];
}

interface Event {
  id: number;
  event: string;
  at_ms: number | null;
  basis: string | null;
  from_status: string | null;
  to_status: string | null;
  cycle: number | null;
  order_number: string | null;
  run: string | null;
}

/** An event without its time and run, as compared with the truth. */
const shape = (e: Event) =>
  JSON.stringify([e.id, e.event, e.basis, e.from_status, e.to_status, e.cycle, e.order_number]);

describe('subscription_events: what happened to each subscription, when', () => {
  let sandbox: Sandbox;
  let close: () => Promise<void>;
  let warehouse: string;
  let config: string;

  const events = () =>
    readWarehouse<Event>(
      warehouse,
      `SELECT subscription_id::INTEGER AS id, event, epoch_ms(occurred_at)::DOUBLE AS at_ms, at_basis AS basis,
              from_status, to_status, billing_cycle::INTEGER AS cycle, order_number, _observed_run_id AS run
       FROM subscription_events ORDER BY ALL`,
    );
  const truth = () => sandbox.store.snapshot('subscriptions') as Truth[];
  const sync = async () => {
    assertExit(await runCli(['sync', '--full-refresh', '--config', config]), 0);
    const [last] = await readWarehouse<{ run: string; at_ms: number }>(
      warehouse,
      "SELECT _run_id AS run, epoch_ms(started_at)::DOUBLE AS at_ms FROM _sync_runs WHERE command = 'sync' ORDER BY started_at DESC LIMIT 1",
    );
    return last!;
  };

  before(async () => {
    ({ sandbox, warehouse, config, close } = await sandboxJob({ scale: 40, pageSize: 20 }));
  });

  after(() => close?.());

  it('after a first sync: each creation at its date_created, the state first seen, every renewal', async () => {
    const first = await sync();
    const subscriptions = truth();
    assert.ok(
      subscriptions.some((s) => s.status !== 'active'),
      'the sandbox has subscriptions not active',
    );
    const expected: string[] = [];
    for (const s of subscriptions) {
      expected.push(shape({ id: s.id, event: 'created', basis: 'api' } as Event));
      if (s.status !== 'active')
        expected.push(
          shape({
            id: s.id,
            event: s.status === 'canceled' ? 'cancelled' : 'status_changed',
            basis: 'by_first_observation',
            from_status: null,
            to_status: s.status,
          } as Event),
        );
      for (const o of s.orders.filter((o) => o.billing_cycle >= 2))
        expected.push(
          shape({
            id: s.id,
            event: 'renewed',
            basis: 'by_first_observation',
            cycle: o.billing_cycle,
            order_number: o.order_number,
          } as Event),
        );
    }
    const found = await events();
    assert.ok(
      found.some((e) => e.event === 'renewed'),
      'some subscriptions have renewed',
    );
    assert.deepEqual(found.map(shape).sort(), expected.sort());
    const created = new Map(subscriptions.map((s) => [s.id, Date.parse(s.date_created)]));
    for (const e of found) {
      if (e.event === 'created') assert.equal(e.at_ms, created.get(e.id), `created at of ${e.id}`);
      else assert.ok(e.at_ms !== null && e.at_ms >= first.at_ms, `${e.event} of ${e.id} seen by the sync`);
    }
  });

  it('changes between syncs add exactly their events, observed by the sync that saw them; again, none', async () => {
    const before = await events();
    const old = new Map(truth().map((s) => [s.id, s]));
    const summary = sandbox.store.mutate({
      createSubscriptions: 1,
      cancelSubscriptions: 1,
      failSubscriptions: 1,
      recoverSubscriptions: 1,
      seed: 5,
    });
    const second = await sync();
    const now = new Map(truth().map((s) => [s.id, s]));
    const created = summary.created['subscriptions']!;
    const changed = summary.changed['subscriptions']!.filter((id) => !created.includes(id));
    assert.equal(created.length, 1);
    assert.equal(changed.length, 3, JSON.stringify(summary));
    const expected = [shape({ id: created[0]!, event: 'created', basis: 'api' } as Event)];
    for (const id of changed) {
      const was = old.get(id)!;
      const is = now.get(id)!;
      const event =
        is.status === 'canceled'
          ? 'cancelled'
          : is.status === 'active' && (was.status === 'past_due' || was.status === 'retrying')
            ? 'recovered'
            : 'status_changed';
      expected.push(
        shape({ id, event, basis: 'observed', from_status: was.status, to_status: is.status } as Event),
      );
      for (const o of is.orders.filter((o) => o.billing_cycle >= 2 && o.billing_cycle > was.orders.length))
        expected.push(
          shape({
            id,
            event: 'renewed',
            basis: 'observed',
            cycle: o.billing_cycle,
            order_number: o.order_number,
          } as Event),
        );
    }
    assert.ok(
      expected.some((e) => e.includes('"recovered"')) && expected.some((e) => e.includes('"renewed"')),
    );
    const after = await events();
    const beforeShapes = new Set(before.map((e) => JSON.stringify(e)));
    const added = after.filter((e) => !beforeShapes.has(JSON.stringify(e)));
    assert.equal(after.length, before.length + added.length, 'no earlier event changed or went');
    assert.deepEqual(added.map(shape).sort(), expected.sort());
    for (const e of added.filter((e) => e.event !== 'created' && e.event !== 'renewed')) {
      assert.equal(e.run, second.run, `${e.event} of ${e.id} recorded by the second sync`);
      assert.ok(e.at_ms! >= second.at_ms, `${e.event} of ${e.id} dated by the second sync`);
    }
    const settled = await events();
    await sync();
    assert.deepEqual(await events(), settled);
  });
});

/**
 * Issue 27, "use what the API says about time": subscriptions carry no time of their cancellation or
 * recovery, so an incremental sync reads them through one-day `cancel_date` and `recoveries_date` windows,
 * and each found is dated on its window's day (`_window_events`, `at_basis` api_window) rather than by the
 * sync that saw it. The sandbox dates its mutations on the day they are made.
 */
describe('subscription_events: cancellations and recoveries dated by the API day windows', () => {
  let sandbox: Sandbox;
  let close: () => Promise<void>;
  let warehouse: string;
  let config: string;

  before(async () => {
    ({ sandbox, warehouse, config, close } = await sandboxJob({ scale: 40, pageSize: 20 }));
  });
  after(() => close?.());

  const dayOf = (ms: number) => new Date(ms).toISOString().slice(0, 10);
  const windowEvents = () =>
    readWarehouse<{ id: string; event: string; day: string; run: string }>(
      warehouse,
      `SELECT record_id AS id, event, strftime(day, '%Y-%m-%d') AS day, run_id AS run
       FROM _window_events WHERE stream = 'subscriptions' ORDER BY ALL`,
    );
  const statusEvents = () =>
    readWarehouse<{ id: number; event: string; at: string; basis: string; from_ms: number }>(
      warehouse,
      `SELECT subscription_id::INTEGER AS id, event, strftime(timezone('UTC', occurred_at), '%Y-%m-%d %H:%M:%S') AS at,
              at_basis AS basis
       FROM subscription_events WHERE event IN ('cancelled', 'recovered') ORDER BY ALL`,
    );

  it('an incremental sync dates each cancellation and recovery on the day the API gives, once', async () => {
    assertExit(await runCli(['sync', '--config', config]), 0);
    const first = await statusEvents();
    assert.ok(
      first.every((e) => e.basis !== 'api_window'),
      'a first full scan reads no dating windows',
    );
    assert.deepEqual(await windowEvents(), []);
    const [firstRun] = await readWarehouse<{ at_ms: number }>(
      warehouse,
      'SELECT epoch_ms(max(_valid_from))::DOUBLE AS at_ms FROM subscriptions_history',
    );

    const mutatedAt = Date.now();
    const summary = sandbox.store.mutate({ cancelSubscriptions: 2, recoverSubscriptions: 1, seed: 11 });
    const changed = summary.changed['subscriptions']!;
    assert.equal(changed.length, 3, JSON.stringify(summary));
    const now = new Map((sandbox.store.snapshot('subscriptions') as Truth[]).map((s) => [s.id, s]));
    const cancelled = changed.filter((id) => now.get(id)!.status === 'canceled').sort((a, b) => a - b);
    const recovered = changed.filter((id) => now.get(id)!.status === 'active');
    assert.equal(cancelled.length, 2);
    assert.equal(recovered.length, 1);

    assertExit(await runCli(['sync', '--config', config]), 0);
    const [second] = await readWarehouse<{ run: string }>(
      warehouse,
      "SELECT _run_id AS run FROM _sync_runs WHERE command = 'sync' ORDER BY started_at DESC LIMIT 1",
    );
    const day = dayOf(mutatedAt);
    const expectedWindows = [
      ...cancelled.map((id) => ({ id: String(id), event: 'cancelled', day, run: second!.run })),
      ...recovered.map((id) => ({ id: String(id), event: 'recovered', day, run: second!.run })),
    ].sort((a, b) => (a.id + a.event < b.id + b.event ? -1 : 1));
    const windows = await windowEvents();
    assert.deepEqual(
      [...windows].sort((a, b) => (a.id + a.event < b.id + b.event ? -1 : 1)),
      expectedWindows,
    );

    // The day starts before the first sync's observation (same day): the event is dated no earlier than it.
    const dayStart = Date.parse(`${day}T00:00:00Z`);
    const expectedAt = new Date(Math.max(dayStart, firstRun!.at_ms))
      .toISOString()
      .replace('T', ' ')
      .slice(0, 19);
    const added = (await statusEvents()).filter((e) => e.basis === 'api_window');
    assert.deepEqual(
      added.map((e) => [e.id, e.event, e.at]).sort(),
      [
        ...cancelled.map((id) => [id, 'cancelled', expectedAt]),
        ...recovered.map((id) => [id, 'recovered', expectedAt]),
      ].sort(),
    );

    // The windows are read again within the lookback: nothing is added, nothing moves.
    const settled = await statusEvents();
    assertExit(await runCli(['sync', '--config', config]), 0);
    assert.deepEqual(await windowEvents(), windows);
    assert.deepEqual(await statusEvents(), settled);

    // A rebuild re-derives the dating from the raw landing, where each such record kept its window.
    assertExit(await runCli(['rebuild', '--config', config]), 0);
    assert.deepEqual(await windowEvents(), windows);
    assert.deepEqual(await statusEvents(), settled);
  });
});
