import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { isStoreSyncError } from '../../src/errors.js';
import { createStore } from '../../src/sandbox/model/index.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { storeParts } from './model-helpers.js';

const RESOURCES = ['products', 'subscriptions', 'locations', 'metadata', 'fulfillment_orders'] as const;

function fingerprint(seed: number): string {
  const parts = storeParts(seed);
  const store = createStore({ seed, scale: 'small' });
  const orders = [0, 1, 2, 500, 3000, parts.orders.count - 1].map((i) => {
    const order = parts.orders.find(orderNumberOf(i))!;
    return [renderOrder2024(order), renderOrder2023(order)];
  });
  return JSON.stringify({ lists: RESOURCES.map((r) => store.snapshot(r)), orders, counts: store.counts });
}

describe('seeded data', () => {
  it('is byte-identical for the same seed and scale', () => {
    assert.equal(fingerprint(42), fingerprint(42));
  });

  it('differs for another seed', () => {
    const a = createStore({ seed: 1, scale: 'small' }).snapshot('subscriptions');
    const b = createStore({ seed: 2, scale: 'small' }).snapshot('subscriptions');
    assert.equal(a.length, b.length);
    assert.notEqual(JSON.stringify(a), JSON.stringify(b));
  });

  it('sizes small, medium and numeric scales as documented', () => {
    const small = createStore({ seed: 1, scale: 'small' }).counts;
    assert.deepEqual(
      { subscriptions: small.subscriptions, products: small.products, locations: small.locations },
      { subscriptions: 1000, products: 60, locations: 5 },
    );
    const medium = createStore({ seed: 1, scale: 'medium' }).counts;
    assert.equal(medium.subscriptions, 10_000);
    assert.equal(medium.products, 600);
    assert.ok(medium.fulfillmentOrders >= 10 * small.fulfillmentOrders * 0.99);
    const custom = createStore({ seed: 1, scale: 2500 }).counts;
    assert.equal(custom.subscriptions, 2500);
    assert.equal(custom.products, 150);
  });

  it('refuses a scale that is not a size', () => {
    for (const scale of [0, -5, 1.5, 'huge' as never]) {
      assert.throws(
        () => createStore({ seed: 1, scale }),
        (error: unknown) => isStoreSyncError(error, 'usage') && /scale/.test((error as Error).message),
      );
    }
  });

  it('spans the two years before the anchor, in id order', () => {
    const anchor = new Date('2025-06-01T00:00:00Z');
    const subs = createStore({ seed: 3, scale: 'small', anchor }).snapshot('subscriptions') as {
      id: number;
      date_created: string;
    }[];
    const times = subs.map((s) => Date.parse(s.date_created));
    assert.ok(Math.min(...times) >= anchor.getTime() - 730 * 86_400_000);
    assert.ok(Math.max(...times) < anchor.getTime());
    assert.ok(
      Math.min(...times) < anchor.getTime() - 600 * 86_400_000,
      'history reaches back nearly two years',
    );
    for (let i = 1; i < times.length; i++) assert.ok(times[i]! >= times[i - 1]!, 'ids follow creation order');
  });

  it('does not depend on the clock', () => {
    const early = createStore({ seed: 5, scale: 100, clock: () => new Date('2020-01-01T00:00:00Z') });
    const late = createStore({ seed: 5, scale: 100, clock: () => new Date('2030-01-01T00:00:00Z') });
    assert.equal(
      JSON.stringify(early.snapshot('subscriptions')),
      JSON.stringify(late.snapshot('subscriptions')),
    );
  });
});
