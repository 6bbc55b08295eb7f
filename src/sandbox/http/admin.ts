import type { IncomingMessage } from 'node:http';
import * as z from 'zod';
import { isStoreSyncError } from '../../errors.js';
import type { StoreModel } from '../model/types.js';
import { HttpError, validationError } from './errors.js';
import { FAULT_KINDS, type FaultInjector, type FaultSpec, formatFaultSpec } from './faults.js';
import type { StatsRecorder } from './stats.js';

/**
 * Test-only routes under `/__sandbox/`: outside the API root, no token, no rate limit, no faults,
 * not counted in the stats. They read the truth and drive change so tests can check convergence.
 */

export const ADMIN_PREFIX = '/__sandbox/';

const SNAPSHOT_RESOURCES = [
  'products',
  'subscriptions',
  'locations',
  'metadata',
  'fulfillment_orders',
] as const;

const count = z.int().min(0).max(1_000_000).optional();
const MutationPlanSchema = z.strictObject({
  createSubscriptions: count,
  cancelSubscriptions: count,
  recoverSubscriptions: count,
  failSubscriptions: count,
  createProducts: count,
  removeProducts: count,
  updateProducts: count,
  createFulfillmentOrders: count,
  moveFulfillmentOrders: count,
  closeFulfillmentOrders: count,
  createLocations: count,
  removeLocations: count,
  seed: z.int().optional(),
});

const FaultJson = z.union([
  z.string(),
  z.strictObject({ spec: z.string() }),
  z.strictObject({
    rates: z.partialRecord(z.enum(FAULT_KINDS), z.number()),
    seed: z.int().optional(),
    stallMs: z.int().optional(),
  }),
]);

export interface AdminContext {
  model: StoreModel;
  stats: StatsRecorder;
  faults: FaultInjector;
}

export interface AdminResult {
  status: number;
  body?: unknown;
}

export async function handleAdmin(
  req: IncomingMessage,
  path: string,
  readText: () => Promise<string>,
  ctx: AdminContext,
): Promise<AdminResult> {
  const route = `${req.method} ${path}`;
  const snapshot = /^\/__sandbox\/snapshot\/([^/]+)\/?$/.exec(path);
  if (snapshot && req.method === 'GET') {
    const resource = snapshot[1]!;
    if (!(SNAPSHOT_RESOURCES as readonly string[]).includes(resource)) {
      throw new HttpError(
        404,
        'not_found',
        `No snapshot of "${resource}"; use one of ${SNAPSHOT_RESOURCES.join(', ')}.`,
      );
    }
    const records = ctx.model.snapshot(resource as (typeof SNAPSHOT_RESOURCES)[number]);
    return { status: 200, body: { count: records.length, results: records } };
  }
  const events = /^\/__sandbox\/orders\/([^/]+)\/fulfillments\/(\d+)\/events\/?$/.exec(path);
  if (events && req.method === 'GET') {
    const ids = ctx.model.fulfillmentEventIds(decodeURIComponent(events[1]!), Number(events[2]));
    return { status: 200, body: { results: ids } };
  }
  switch (route) {
    case 'GET /__sandbox/stats':
      return { status: 200, body: ctx.stats.snapshot() };
    case 'POST /__sandbox/stats/reset':
      ctx.stats.reset();
      return { status: 200, body: ctx.stats.snapshot() };
    case 'GET /__sandbox/faults':
      return { status: 200, body: describeFaults(ctx.faults) };
    case 'PUT /__sandbox/faults':
      setFaults(ctx.faults, parseFaultBody(await readText(), req.headers['content-type']));
      return { status: 200, body: describeFaults(ctx.faults) };
    case 'POST /__sandbox/mutate': {
      const parsed = MutationPlanSchema.safeParse(parseJsonText(await readText()));
      if (!parsed.success) throw validationError('mutation plan', parsed.error);
      return { status: 200, body: ctx.model.mutate(parsed.data) };
    }
    case 'GET /__sandbox/':
    case 'GET /__sandbox':
      return { status: 200, body: { routes: ADMIN_ROUTES } };
  }
  throw new HttpError(404, 'not_found', `No sandbox route ${route}; GET ${ADMIN_PREFIX} lists them.`);
}

const ADMIN_ROUTES = [
  'GET /__sandbox/stats',
  'POST /__sandbox/stats/reset',
  'GET /__sandbox/faults',
  'PUT /__sandbox/faults',
  'POST /__sandbox/mutate',
  ...SNAPSHOT_RESOURCES.map((r) => `GET /__sandbox/snapshot/${r}`),
  'GET /__sandbox/orders/{number}/fulfillments/{id}/events',
];

function describeFaults(faults: FaultInjector): FaultSpec & { spec: string } {
  const spec = faults.spec();
  return { spec: formatFaultSpec(spec), ...spec, stallMs: faults.stallMs };
}

function parseJsonText(text: string): unknown {
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HttpError(400, 'invalid_json', `The request body is not valid JSON: ${reason}`);
  }
}

/** The fault mix comes as JSON (`"500:0.1"`, `{"spec": …}` or `{"rates": …}`) or as a bare spec string. */
function parseFaultBody(text: string, contentType: string | undefined): string | FaultSpec {
  let input: string | FaultSpec = text;
  if (/json/i.test(contentType ?? '') || /^\s*[{"]/.test(text)) {
    const parsed = FaultJson.safeParse(parseJsonText(text));
    if (!parsed.success) throw validationError('fault settings', parsed.error);
    const value = parsed.data;
    input = typeof value === 'string' ? value : 'spec' in value ? value.spec : (value as FaultSpec);
  }
  return input;
}

/** Applies a new fault mix; a bad mix is the caller's mistake here (400), not a usage exit. */
function setFaults(faults: FaultInjector, input: string | FaultSpec): void {
  try {
    faults.set(input);
  } catch (error) {
    if (isStoreSyncError(error)) {
      throw new HttpError(400, 'validation_error', error.message, [
        { field: 'faults', message: error.message },
      ]);
    }
    throw error;
  }
}
