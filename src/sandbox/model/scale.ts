import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { Scale } from './types.js';

/** How many records of each kind a seeded store holds. */
export interface StoreSizes {
  subscriptions: number;
  products: number;
  customers: number;
  locations: number;
  metadata: number;
  fulfillmentOrders: number;
  tickets: number;
  carts: number;
  /** Orders placed outside any subscription (subscription renewals come on top). */
  oneOffOrders: number;
}

const NAMED_SCALES = { small: 1_000, medium: 10_000, large: 100_000 } as const;
const MAX_SUBSCRIPTIONS = 2_000_000;

/**
 * Sizes for a scale. Record-like resources grow in proportion to the subscriptions; configuration-like
 * ones (locations, metadata definitions) grow with the square root, as a real store's do. Minimums keep
 * every status and rule reachable even in a tiny store.
 */
export function sizesFor(scale: Scale): StoreSizes {
  const subscriptions = typeof scale === 'number' ? scale : NAMED_SCALES[scale];
  if (!Number.isInteger(subscriptions) || subscriptions < 1 || subscriptions > MAX_SUBSCRIPTIONS) {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `scale must be small, medium, large or a whole number of subscriptions from 1 to ${MAX_SUBSCRIPTIONS}; got ${String(scale)}`,
      { details: { field: 'scale' } },
    );
  }
  const factor = subscriptions / 1_000;
  const linear = (base: number, min: number) => Math.max(min, Math.round(base * factor));
  const sublinear = (base: number, min: number) => Math.max(min, Math.round(base * Math.sqrt(factor)));
  return {
    subscriptions,
    products: linear(60, 8),
    customers: linear(800, 1),
    locations: sublinear(5, 2),
    metadata: sublinear(32, 16),
    fulfillmentOrders: linear(150, 12),
    tickets: linear(40, 6),
    carts: linear(100, 4),
    oneOffOrders: linear(1_500, 20),
  };
}

/** Hands out ascending ids for one kind of record; API-created records always get ids above seeded ones. */
export class IdCounter {
  constructor(private nextId: number) {}

  next(): number {
    return this.nextId++;
  }

  /** The highest id handed out so far (0 when none). */
  get last(): number {
    return this.nextId - 1;
  }
}
