import { emptyStreamState, type StreamOptions, type StreamState } from '../../src/contracts.js';
import { ApiClient, type ClientOptions, runStream, STREAMS } from '../../src/extract/index.js';
import type { StreamSummary } from '../../src/extract/run-stream.js';
import type { Logger } from '../../src/log.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions, type StreamName } from '../../src/streams.js';
import { MemoryWarehouse } from './helpers.js';

/** Runs extract streams against a sandbox and compares what they got with the sandbox's truth. */

export const SANDBOX_TOKEN = 'sandbox-token';
export const ALL_STREAMS = Object.keys(STREAMS) as StreamName[];

const RESOURCE = {
  products: 'products',
  subscriptions: 'subscriptions',
  locations: 'locations',
  metadata_definitions: 'metadata',
  fulfillment_orders: 'fulfillment_orders',
} as const;

/** The sandbox's current records of a stream, as JSON would carry them, by id. */
export function truth(sandbox: Sandbox, stream: StreamName): Map<string, unknown> {
  const records = JSON.parse(JSON.stringify(sandbox.store.snapshot(RESOURCE[stream]))) as { id: number }[];
  return new Map(records.map((r) => [String(r.id), r]));
}

export function sandboxClient(
  sandbox: Sandbox,
  logger: Logger,
  options: Partial<ClientOptions> = {},
): ApiClient {
  return new ApiClient({
    baseUrl: sandbox.baseUrl,
    token: SANDBOX_TOKEN,
    rateLimit: 0,
    logger,
    retry: { baseDelayMs: 5, maxDelayMs: 50 },
    ...options,
  });
}

export interface SyncResult {
  warehouses: Record<StreamName, MemoryWarehouse>;
  summaries: Partial<Record<StreamName, StreamSummary>>;
  errors: Partial<Record<StreamName, unknown>>;
}

/** Runs the streams at once on one client, as the runner does; failures are collected per stream. */
export async function syncStreams(args: {
  client: ApiClient;
  now: Date;
  logger: Logger;
  streams?: StreamName[];
  mode?: 'incremental' | 'full_refresh' | 'backfill';
  previous?: SyncResult;
  options?: Partial<StreamOptions>;
}): Promise<SyncResult> {
  const streams = args.streams ?? ALL_STREAMS;
  const result: SyncResult = {
    warehouses: args.previous?.warehouses ?? ({} as Record<StreamName, MemoryWarehouse>),
    summaries: {},
    errors: {},
  };
  await Promise.all(
    streams.map(async (name) => {
      result.warehouses[name] ??= new MemoryWarehouse();
      const warehouse = result.warehouses[name];
      const state: StreamState = warehouse.state ?? emptyStreamState();
      try {
        result.summaries[name] = await runStream({
          stream: STREAMS[name],
          client: args.client,
          state,
          mode: args.mode ?? 'incremental',
          options: { ...defaultStreamOptions(name), ...args.options },
          now: args.now,
          commit: warehouse.commit,
          logger: args.logger,
        });
      } catch (error) {
        result.errors[name] = error;
      }
    }),
  );
  return result;
}
