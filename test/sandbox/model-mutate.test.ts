import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AssignedFulfillmentOrdersQuery,
  ProductsQuery,
  Subscription,
  type Subscription as SubscriptionRecord,
  SubscriptionsQuery,
} from '../../schemas/index.js';
import { createStore } from '../../src/sandbox/model/index.js';
import type { MutationPlan, StoreModel } from '../../src/sandbox/model/types.js';
import { assertValid, matching, NOW, steppingClock } from './model-helpers.js';

const TODAY = new Date(NOW).toISOString().slice(0, 10);
const fresh = () => createStore({ seed: 61, scale: 'small', clock: steppingClock() });
const subscriptions = (store: StoreModel, raw: Record<string, string>) =>
  matching(store.listSubscriptions(SubscriptionsQuery.parse(raw)));
const ids = (records: readonly { id: number }[]) => records.map((r) => r.id).sort((a, b) => a - b);

describe('mutations between syncs', () => {
  it('create, cancel, recover and fail subscriptions, visible through the date and status filters', () => {
    const store = fresh();
    const before = store.snapshot('subscriptions') as SubscriptionRecord[];
    const failing = before.filter((s) => s.status === 'past_due' || s.status === 'retrying').length;
    const summary = store.mutate({
      createSubscriptions: 3,
      cancelSubscriptions: 4,
      recoverSubscriptions: 2,
      failSubscriptions: 2,
      seed: 1,
    });
    const created = summary.created.subscriptions!;
    assert.equal(created.length, 3);
    assert.ok(Math.min(...created) > Math.max(...ids(before)));
    assert.deepEqual(ids(subscriptions(store, { date_from: TODAY })), created);
    for (const s of subscriptions(store, { date_from: TODAY })) {
      assertValid(Subscription, s, `new subscription ${s.id}`);
      assert.equal(s.status, 'active');
      assert.equal(s.num_orders, 1);
      assert.ok(s.date_created!.startsWith(TODAY));
      assert.ok(summary.created.orders!.includes(Number(s.orders![0]!.order_number)));
    }
    const changed = new Set(summary.changed.subscriptions);
    const canceledToday = subscriptions(store, { cancel_date_from: TODAY });
    assert.equal(canceledToday.length, 4);
    for (const s of canceledToday) {
      assert.ok(changed.has(s.id));
      assert.equal(s.status, 'canceled');
      assert.ok(s.cancel_reason);
    }
    const recovered = subscriptions(store, { recoveries_date_from: TODAY, recoveries_date_to: TODAY });
    assert.equal(recovered.length, 2);
    for (const s of recovered) {
      const old = before.find((b) => b.id === s.id)!;
      assert.ok(old.status === 'past_due' || old.status === 'retrying');
      assert.equal(s.status, 'active');
      assert.equal(s.num_orders, old.num_orders! + 1);
      assert.deepEqual(ids(subscriptions(store, { order_number: s.orders!.at(-1)!.order_number! })), [s.id]);
    }
    const nowFailing = subscriptions(store, { status: 'past_due,retrying' }).length;
    assert.equal(
      nowFailing,
      failing -
        2 +
        2 -
        canceledToday.filter((s) => before.find((b) => b.id === s.id)!.status !== 'active').length,
    );
    assert.equal(store.counts.subscriptions, before.length + 3);
  });

  it('requantify subscriptions: the first line gains or loses a unit, and the total its unit price', () => {
    const store = fresh();
    const before = new Map((store.snapshot('subscriptions') as SubscriptionRecord[]).map((s) => [s.id, s]));
    const summary = store.mutate({ requantifySubscriptions: 4, seed: 4 });
    const changed = summary.changed.subscriptions!;
    assert.equal(changed.length, 4);
    const after = new Map((store.snapshot('subscriptions') as SubscriptionRecord[]).map((s) => [s.id, s]));
    const cents = (text: string | null | undefined) => Math.round(Number(text) * 1000);
    const deltas = changed.map((id) => {
      const [old, now] = [before.get(id)!, after.get(id)!];
      assert.notEqual(old.status, 'canceled');
      assertValid(Subscription, now, `subscription ${id}`);
      const delta = now.lines![0]!.quantity! - old.lines![0]!.quantity!;
      assert.equal(cents(now.total) - cents(old.total), delta * cents(old.lines![0]!.price));
      assert.deepEqual(now.lines!.slice(1), old.lines!.slice(1));
      assert.deepEqual({ ...now, lines: [], total: '' }, { ...old, lines: [], total: '' });
      return { delta, quantity: old.lines![0]!.quantity! };
    });
    assert.deepEqual(
      deltas.map((d) => d.delta),
      deltas.map((d, i) => (i % 2 === 1 && d.quantity > 1 ? -1 : 1)),
    );
    assert.ok(deltas.some((d) => d.delta === -1) && deltas.some((d) => d.delta === 1));
  });

  it('create, update and remove products; removed ones leave the list', () => {
    const store = fresh();
    const before = store.snapshot('products') as { id: number; date_updated: string }[];
    const summary = store.mutate({ createProducts: 2, updateProducts: 3, removeProducts: 2, seed: 2 });
    const after = store.snapshot('products') as { id: number; date_updated: string }[];
    assert.equal(after.length, before.length + 2 - 2);
    for (const id of summary.removed.products!) {
      assert.ok(!after.some((p) => p.id === id));
      assert.ok(!matching(store.listProducts(ProductsQuery.parse({}))).some((p) => p.id === id));
    }
    assert.ok(Math.min(...summary.created.products!) > Math.max(...ids(before)));
    for (const id of summary.changed.products!.filter((id) => !summary.removed.products!.includes(id))) {
      assert.ok(after.find((p) => p.id === id)!.date_updated > before.find((p) => p.id === id)!.date_updated);
    }
  });

  it('create, move and close fulfillment orders; create and remove locations', () => {
    const store = fresh();
    const fosBefore = store.snapshot('fulfillment_orders').length;
    const summary = store.mutate({
      createFulfillmentOrders: 2,
      moveFulfillmentOrders: 2,
      closeFulfillmentOrders: 1,
      createLocations: 1,
      removeLocations: 2,
      seed: 3,
    });
    assert.equal(summary.created.fulfillment_orders!.length, 4, 'two new orders, two moves');
    assert.equal(store.snapshot('fulfillment_orders').length, fosBefore + 4);
    const recent = matching(
      store.listAssignedFulfillmentOrders(AssignedFulfillmentOrdersQuery.parse({ date_created_from: TODAY })),
    );
    assert.deepEqual(
      ids(recent),
      summary.created.fulfillment_orders!.sort((a, b) => a - b),
    );
    const closed = summary.changed.fulfillment_orders!.map((id) => store.getFulfillmentOrder(id));
    assert.ok(closed.some((fo) => fo.status === 'incomplete'));
    const locations = ids(store.snapshot('locations'));
    assert.equal(locations.length, 5 + 1 - 2);
    assert.ok(locations.includes(summary.created.locations![0]!));
    for (const id of summary.removed.locations!) assert.ok(!locations.includes(id));
  });

  it('the same plan and seed change the same records', () => {
    const plan: MutationPlan = {
      createSubscriptions: 2,
      cancelSubscriptions: 3,
      updateProducts: 2,
      moveFulfillmentOrders: 1,
      seed: 9,
    };
    const a = fresh();
    const b = fresh();
    assert.deepEqual(a.mutate(plan), b.mutate(plan));
    assert.equal(JSON.stringify(a.snapshot('subscriptions')), JSON.stringify(b.snapshot('subscriptions')));
    const c = fresh();
    assert.notDeepEqual(c.mutate({ ...plan, seed: 10 }).changed, a.mutate(plan).changed);
  });
});
