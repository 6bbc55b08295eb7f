import type { StreamName, StreamOptions } from '../contracts.js';

/**
 * Each stream's defaults (src/config.ts mirrors them for display; sync.config.json overrides them).
 * Nightly runs re-read two days behind the watermark so late writes are caught; subscriptions are fully
 * reconciled weekly; date windows of 30 days keep a long backfill in parallel chains of moderate length.
 */
const BASE: StreamOptions = {
  enabled: true,
  startDate: null,
  lookbackDays: 2,
  windowDays: 30,
  fullRefreshDays: null,
  concurrency: 2,
  maxRefreshPerRun: 200,
};

const PER_STREAM: Record<StreamName, Partial<StreamOptions>> = {
  products: {},
  locations: {},
  metadata_definitions: {},
  subscriptions: { fullRefreshDays: 7 },
  fulfillment_orders: {},
};

export function defaultStreamOptions(name: StreamName): StreamOptions {
  return { ...BASE, ...PER_STREAM[name] };
}
