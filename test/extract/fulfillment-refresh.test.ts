import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptyStreamState, type StreamState } from '../../src/contracts.js';
import { STREAMS } from '../../src/extract/index.js';
import {
  MAX_REFRESH_INTERVAL_MS,
  openFulfillmentOrders,
  openFulfillmentOrdersSince,
  refreshDueAt,
} from '../../src/extract/streams/fulfillment-orders.js';
import type { StreamContext } from '../../src/extract/streams/types.js';

/**
 * When an open fulfillment order is due for a re-read (docs/streams.md, fulfillment_orders): once the time
 * since its last read reaches `refreshAgeFraction` of its age, at most 30 days after that read; and what the
 * stream remembers of each one it sees (its age from `created_at` when sent, else from its first sight).
 * End to end through `store-sync sync`: test/cli/nightly-cost.test.ts.
 */

const DAY = 86_400_000;
const T = Date.parse('2026-03-01T02:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

function stateWith(entries: Record<string, { seen: number; since?: number }>): StreamState {
  const state = emptyStreamState();
  for (const [id, { seen, since }] of Object.entries(entries)) {
    openFulfillmentOrders(state)[id] = iso(seen);
    if (since !== undefined) openFulfillmentOrdersSince(state)[id] = iso(since);
  }
  return state;
}

/** The stream's own bookkeeping after a page, as the driver calls it inside a commit. */
function seePage(state: StreamState, records: Record<string, unknown>[], now: number): void {
  STREAMS.fulfillment_orders.afterPage!(records, state, { now: new Date(now) } as StreamContext);
}

describe('fulfillment-order refresh schedule', () => {
  it('is due at once when it was last read as it appeared, and after a third of its age at a quarter', () => {
    const state = stateWith({ young: { seen: T, since: T }, old: { seen: T, since: T - 40 * DAY } });
    assert.equal(refreshDueAt(state, 'young', 0.25), T);
    // Due at t with t − T = ¼ (t − (T − 40 d)): 40 ÷ 3 days after the read, when it is 53⅓ days old.
    assert.equal(refreshDueAt(state, 'old', 0.25), T + (40 * DAY) / 3);
    assert.equal(refreshDueAt(state, 'old', 0), T, 'fraction 0: due every run');
    assert.equal(refreshDueAt(state, 'unknown', 0.25), null);
  });

  it('is never more than 30 days after the last read, however old', () => {
    const state = stateWith({ ancient: { seen: T, since: T - 3 * 365 * DAY } });
    assert.equal(refreshDueAt(state, 'ancient', 0.25), T + MAX_REFRESH_INTERVAL_MS);
    assert.equal(refreshDueAt(state, 'ancient', 1), T + MAX_REFRESH_INTERVAL_MS);
  });

  it('counts a state saved before ages were kept from its last read, and a time that does not parse as due', () => {
    const legacy = stateWith({ '7': { seen: T } });
    assert.equal(refreshDueAt(legacy, '7', 0.25), T);
    openFulfillmentOrders(legacy)['8'] = 'not a time';
    assert.equal(refreshDueAt(legacy, '8', 0.25), 0);
  });

  it('remembers the age from created_at when sent, else from the first sight, and forgets closed ones', () => {
    const state = emptyStreamState();
    seePage(
      state,
      [
        { id: 1, status: 'open', created_at: iso(T - 10 * DAY) },
        { id: 2, status: 'in_progress' },
        { id: 3, status: 'open', created_at: 'yesterday' },
      ],
      T,
    );
    assert.deepEqual(openFulfillmentOrdersSince(state), { '1': iso(T - 10 * DAY), '2': iso(T), '3': iso(T) });
    // Seen again a day later: the last read moves, the first sight does not; a closed one is forgotten.
    seePage(
      state,
      [
        { id: 2, status: 'in_progress' },
        { id: 3, status: 'closed' },
      ],
      T + DAY,
    );
    assert.deepEqual(openFulfillmentOrders(state), { '1': iso(T), '2': iso(T + DAY) });
    assert.deepEqual(openFulfillmentOrdersSince(state), { '1': iso(T - 10 * DAY), '2': iso(T) });
    assert.equal(refreshDueAt(state, '2', 0.25), T + DAY + DAY / 3);
  });
});
