import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import type { Order2023, Order2024 } from '../../schemas/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { buildStore } from '../../src/sandbox/model/store.js';
import { assertExit, runCli, type scratchWarehouses, testSandbox, writeConfig } from '../cli/helpers.js';

/**
 * A warehouse as a user gets one, for the analyst models' tests: `store-sync sync` of every stream from a
 * seeded sandbox (products, subscriptions, locations, fulfillment orders …), then `store-sync ingest` of
 * about two thirds of the sandbox's orders (the API lists none, so orders arrive as captured documents), every
 * other one in the 2023-02-10 shape and the rest in 2024-04-01. The others (every third order, and every order of one subscriber) are referenced by
 * subscriptions and fulfillment orders but never captured: what order_coverage is for.
 */

export const SEED = 7;
export const SCALE = 40;
export const STORE = 'shop';

export interface CapturedOrder {
  shape: '2023-02-10' | '2024-04-01';
  doc: Order2023 | Order2024;
}

export interface ModelStore {
  sandbox: Sandbox;
  warehouse: string;
  config: string;
  dir: string;
  /** Every order of the seeded store, by number, as the 2024-04-01 shape renders it. */
  allOrders: Map<string, Order2024>;
  captured: CapturedOrder[];
}

export const isCaptured = (index: number) => index % 3 !== 2;
export const shapeOf = (index: number) => (index % 2 === 0 ? '2023-02-10' : '2024-04-01');

export async function buildModelStore(scratch: ReturnType<typeof scratchWarehouses>): Promise<ModelStore> {
  const { dir, warehouse } = await scratch.create();
  const sandbox = await testSandbox({ seed: SEED, scale: SCALE });
  try {
    return await fill(sandbox, dir, warehouse);
  } catch (error) {
    // A failed build must not leave the sandbox listening: the test process would never exit.
    await sandbox.close();
    throw error;
  }
}

async function fill(sandbox: Sandbox, dir: string, warehouse: string): Promise<ModelStore> {
  const config = await writeConfig(dir, { warehouse, stores: [{ name: STORE, baseUrl: sandbox.baseUrl }] });
  assertExit(await runCli(['sync', '--config', config], { cwd: dir }), 0);

  // The sandbox's seeded orders are a function of seed and scale: the same store, built here to read them.
  const parts = buildStore({ seed: SEED, scale: SCALE });
  const allOrders = new Map<string, Order2024>();
  const captured: CapturedOrder[] = [];
  // One subscriber none of whose orders is captured: a customer the warehouse knows without any order.
  const uncapturedCustomer = parts.book.items[0]!.user?.id;
  for (let i = 0; i < parts.orders.count; i++) {
    const state = parts.orders.find(orderNumberOf(i))!;
    const doc = renderOrder2024(state);
    allOrders.set(state.number, doc);
    if (!isCaptured(i) || doc.user?.id === uncapturedCustomer) continue;
    const shape = shapeOf(i);
    captured.push({ shape, doc: shape === '2023-02-10' ? renderOrder2023(state) : renderOrder2024(state) });
  }
  const file = path.join(dir, 'orders.ndjson');
  await writeFile(file, `${captured.map((c) => JSON.stringify(c.doc)).join('\n')}\n`);
  const ingest = await runCli(['ingest', '--json', file, '--config', config], { cwd: dir });
  assertExit(ingest, 0);
  assert.equal((JSON.parse(ingest.stdout) as { rejections: number }).rejections, 0);
  return { sandbox, warehouse, config, dir, allOrders, captured };
}

/** Exact decimal text ("12.5", "-3.000") as thousandths. */
export function milli(value: string | null | undefined): bigint {
  if (value === null || value === undefined) return 0n;
  const negative = value.startsWith('-');
  const [whole, fraction = ''] = value.replace('-', '').split('.');
  const n = BigInt(whole!) * 1000n + BigInt(`${fraction}000`.slice(0, 3));
  return negative ? -n : n;
}

/** Thousandths as DuckDB prints a DECIMAL(…,3): "12.500". */
export function decimal(n: bigint): string {
  const negative = n < 0n;
  const a = negative ? -n : n;
  return `${negative ? '-' : ''}${a / 1000n}.${String(a % 1000n).padStart(3, '0')}`;
}

export const sum = (values: Iterable<bigint>): bigint => {
  let total = 0n;
  for (const v of values) total += v;
  return total;
};

export const utcDate = (iso: string) => iso.slice(0, 10);

/** What the sandbox holds now for a listed resource, as its API renders it. */
export const snapshotOf = (
  store: ModelStore,
  resource: Parameters<Sandbox['store']['snapshot']>[0],
): unknown[] => [...store.sandbox.store.snapshot(resource)];
