import assert from 'node:assert/strict';
import path from 'node:path';
import { assertWarehouseIsTruth, streamKeys } from './compare.js';
import {
  type CliResult,
  runCli,
  seededRandom,
  sleep,
  startSandboxProcess,
  writeConfig,
} from './processes.js';
import { type MutationSummary, mutate } from './truth.js';

/**
 * Scenario 3, moving target: while several incremental syncs run, the sandbox keeps changing: new,
 * canceled, failing and recovered subscriptions, new and edited products, moved and closed fulfillment
 * orders, new orders with their fulfillment orders, and one product removed. Once the changes stop and
 * one more sync has run, the warehouse equals the truth, and the soft-deleted rows are exactly the
 * removed product (which the first sync had loaded).
 */

export interface MovingOptions {
  scale: string;
  pageSize: number;
  /** Incremental syncs run while the sandbox changes. */
  syncs: number;
  dir: string;
  seed: number;
}

export interface MovingOutcome {
  rounds: number;
  created: number;
  changed: number;
  removed: number[];
}

const int = (random: () => number, max: number) => Math.floor(random() * (max + 1));

function checkSync(result: CliResult, label: string): void {
  assert.equal(result.timedOut, false, `${label} hung`);
  assert.ok(
    result.code === 0 || result.code === 3,
    `${label} exited ${result.code}: ${result.stderr.slice(-1500)}`,
  );
  assert.match(
    result.stdout,
    /default: (succeeded|completed with rejections) in/,
    `${label}: a stream failed\n${result.stdout}`,
  );
}

export async function movingTarget(options: MovingOptions): Promise<MovingOutcome> {
  const random = seededRandom(options.seed);
  const sandbox = await startSandboxProcess([
    ...['--scale', options.scale, '--page-size', String(options.pageSize), '--rate-limit', '0'],
  ]);
  try {
    const warehouse = path.join(options.dir, 'moving.duckdb');
    // Every open fulfillment order is re-read each run, whatever its age, and products are scanned on every
    // run (the nightly defaults spread both over several nights, and the promise here is about one final sync).
    const config = await writeConfig(options.dir, {
      baseUrl: sandbox.baseUrl,
      warehouse,
      streams: {
        fulfillment_orders: { maxRefreshPerRun: 100_000, refreshAgeFraction: 0 },
        products: { fullRefreshDays: null },
      },
    });
    const sync = async (label: string) => checkSync(await runCli(['sync', '--config', config]), label);

    await sync('first sync');
    const loadedFirst = (await streamKeys(warehouse, 'products')).live;

    const summaries: MutationSummary[] = [];
    let moving = true;
    const mutator = (async () => {
      // Round 0 removes one product, before any is created, so it is one the first sync loaded.
      summaries.push(await mutate(sandbox.origin, { removeProducts: 1, seed: options.seed }));
      for (let round = 1; moving; round++) {
        const plan = {
          createSubscriptions: int(random, 3),
          cancelSubscriptions: int(random, 2),
          failSubscriptions: int(random, 2),
          recoverSubscriptions: int(random, 2),
          createProducts: int(random, 1),
          updateProducts: int(random, 2),
          moveFulfillmentOrders: int(random, 2),
          closeFulfillmentOrders: int(random, 2),
          createFulfillmentOrders: int(random, 1),
          seed: options.seed + round,
        };
        summaries.push(await mutate(sandbox.origin, plan));
        await sleep(50 + random() * 200);
      }
    })();
    try {
      for (let i = 1; i <= options.syncs; i++) await sync(`sync ${i} while the sandbox changes`);
    } finally {
      moving = false;
      await mutator;
    }
    await sync('sync after the changes stopped');

    await assertWarehouseIsTruth(warehouse, sandbox.origin, options.dir, 'moving target');
    const removed = summaries.flatMap((s) => s.removed.products ?? []).map(String);
    assert.equal(removed.length, 1, 'exactly one product was removed');
    const { deleted } = await streamKeys(warehouse, 'products');
    assert.ok(loadedFirst.has(removed[0]!), 'the removed product was one the first sync had loaded');
    assert.deepEqual([...deleted].sort(), removed, 'soft-deleted products are exactly the removed ones');
    for (const stream of ['subscriptions', 'locations', 'metadata_definitions'] as const)
      assert.equal((await streamKeys(warehouse, stream)).deleted.size, 0, `no ${stream} row is soft-deleted`);
    const count = (kind: keyof MutationSummary) =>
      summaries.reduce((n, s) => n + Object.values(s[kind]).reduce((m, ids) => m + ids.length, 0), 0);
    return {
      rounds: summaries.length,
      created: count('created'),
      changed: count('changed'),
      removed: removed.map(Number),
    };
  } finally {
    await sandbox.stop();
  }
}
