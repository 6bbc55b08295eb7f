import { request } from 'undici';
import { type EntityKind, emptyStreamState, type Rejection } from '../../../src/contracts.js';
import { STREAMS } from '../../../src/extract/index.js';
import { openWarehouse } from '../../../src/load/index.js';
import type { StreamName } from '../../../src/streams.js';

/**
 * The sandbox's truth, and a warehouse built from it: every current record of every stream, read from
 * `GET /__sandbox/snapshot/{resource}`, validated with the stream's schema and committed once through the
 * warehouse, as a clean, uninterrupted load of exactly that truth would leave it. A chaos scenario's
 * warehouse is then compared with this one table by table and row by row (compare.ts).
 */

export const API_STREAMS = Object.keys(STREAMS) as StreamName[];

const RESOURCE: Record<StreamName, string> = {
  locations: 'locations',
  metadata_definitions: 'metadata',
  products: 'products',
  subscriptions: 'subscriptions',
  fulfillment_orders: 'fulfillment_orders',
};

/** The table holding a stream's records themselves (children hang off it). */
export const ROOT_TABLE: Record<StreamName, string> = {
  locations: 'locations',
  metadata_definitions: 'metadata_definitions',
  products: 'products',
  subscriptions: 'subscriptions',
  fulfillment_orders: 'fulfillment_orders',
};

export type Truth = Record<StreamName, Record<string, unknown>[]>;

export async function fetchSnapshot(origin: string, stream: StreamName): Promise<Record<string, unknown>[]> {
  const response = await request(`${origin}/__sandbox/snapshot/${RESOURCE[stream]}`);
  if (response.statusCode !== 200) throw new Error(`snapshot of ${stream}: HTTP ${response.statusCode}`);
  const body = (await response.body.json()) as { count: number; results: Record<string, unknown>[] };
  if (body.results.length !== body.count) throw new Error(`snapshot of ${stream} is incomplete`);
  return body.results;
}

export async function fetchTruth(origin: string): Promise<Truth> {
  const entries = await Promise.all(
    API_STREAMS.map(async (s) => [s, await fetchSnapshot(origin, s)] as const),
  );
  return Object.fromEntries(entries) as Truth;
}

/** Records committed per transaction while building the reference (bounded memory). */
const CHUNK = 2000;

/** Loads `truth` into a new warehouse at `file`, for store `default`, as one clean load. */
export async function buildReference(file: string, truth: Truth, store = 'default'): Promise<void> {
  const warehouse = await openWarehouse(file);
  try {
    for (const stream of API_STREAMS) {
      const definition = STREAMS[stream];
      for (let i = 0; i < truth[stream].length; i += CHUNK) {
        const records: Record<string, unknown>[] = [];
        const rejections: Rejection[] = [];
        for (const record of truth[stream].slice(i, i + CHUNK)) {
          const parsed = definition.schema.safeParse(record);
          if (parsed.success) records.push(record);
          else rejections.push({ stream, key: String(record.id), reason: parsed.error.message, raw: record });
        }
        await warehouse.commitPage({
          store,
          stream,
          entity: definition.entity as EntityKind,
          runId: 'reference',
          records,
          rejections,
          state: emptyStreamState(),
        });
      }
    }
  } finally {
    await warehouse.close();
  }
}

/** `GET /__sandbox/stats`: what the sandbox answered, by status. */
export async function sandboxStats(
  origin: string,
): Promise<{ requests: number; byStatus: Record<string, number> }> {
  const response = await request(`${origin}/__sandbox/stats`);
  return (await response.body.json()) as { requests: number; byStatus: Record<string, number> };
}

export interface MutationSummary {
  created: Record<string, number[]>;
  changed: Record<string, number[]>;
  removed: Record<string, number[]>;
}

/** `POST /__sandbox/mutate` with a MutationPlan (docs/sandbox.md). */
export async function mutate(origin: string, plan: Record<string, number>): Promise<MutationSummary> {
  const response = await request(`${origin}/__sandbox/mutate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(plan),
  });
  const body = (await response.body.json()) as MutationSummary;
  if (response.statusCode !== 200) throw new Error(`mutate ${JSON.stringify(plan)}: ${JSON.stringify(body)}`);
  return body;
}
