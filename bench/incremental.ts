import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { SANDBOX_TOKEN, type SandboxProcess, seconds, spawnSandbox } from './extract-support.js';
import { type Benchmark, type BenchResult, ratioResult, runAloneIfMain, runCli } from './lib.js';

/**
 * What a nightly run costs, as users run it: `store-sync sync` as a whole process (bin/store-sync.js through
 * its `#!` line, bench/lib.ts runCli) into a
 * real warehouse, against a large sandbox store in its own process. A first sync reads everything; a second
 * one, with nothing changed, should cost at most 5 % of its requests; after 1 % of the store changes
 * (subscriptions, products, fulfillment orders), a third at most 10 %. Requests are the sandbox's own count
 * (`GET /__sandbox/stats`), so the probe, retries and refreshes are all in it.
 *
 * The runs follow each other within minutes, not a night apart: products were scanned by the first run and
 * are not due again (`fullRefreshDays` 7), and every open fulfillment order, seen only minutes ago but also
 * first seen then, is due again (its age is as young as its last read), so the refresh spends its whole
 * budget (`maxRefreshPerRun`), as a store's second night does.
 */

const TOKEN_ENV = 'STORE_SYNC_BENCH_TOKEN';
const SUBSCRIPTIONS = { medium: 10_000, large: 100_000 } as const;

interface SyncRun {
  ms: number;
  requests: number;
  byRoute: Record<string, number>;
}

async function timedSync(sandbox: SandboxProcess, config: string): Promise<SyncRun> {
  await sandbox.resetStats();
  const run = await runCli(['sync', '--config', config], {
    env: { ...process.env, [TOKEN_ENV]: SANDBOX_TOKEN },
  });
  const ms = run.wall * 1000;
  const stats = (await sandbox.stats()) as { requests: number; byRoute?: Record<string, number> };
  return { ms, requests: stats.requests, byRoute: stats.byRoute ?? {} };
}

/** The routes a run used, largest first: "GET /subscriptions/ 12, …". */
const routes = (run: SyncRun) =>
  Object.entries(run.byRoute)
    .sort(([, a], [, b]) => b - a)
    .map(([route, n]) => `${route} ${n}`)
    .join(', ');

/**
 * Changes 1 % of each kind of record of a `scale` store: subscriptions (new, canceled, recovered, failed),
 * products (changed, new, removed) and fulfillment orders (moved, closed, new). Returns how many of each.
 */
export async function changeOnePercent(
  sandbox: SandboxProcess,
  scale: 'medium' | 'large',
  seed: number,
): Promise<{ subscriptions: number; products: number; fulfillmentOrders: number }> {
  const subscriptions = SUBSCRIPTIONS[scale] / 100;
  const products = Math.round(SUBSCRIPTIONS[scale] * 0.0006);
  const fulfillmentOrders = Math.round(SUBSCRIPTIONS[scale] * 0.0015);
  const quarter = Math.round(subscriptions / 4);
  const third = (n: number) => Math.round(n / 3);
  await sandbox.mutate({
    createSubscriptions: quarter,
    cancelSubscriptions: quarter,
    recoverSubscriptions: quarter,
    failSubscriptions: subscriptions - 3 * quarter,
    updateProducts: products - 2 * third(products),
    createProducts: third(products),
    removeProducts: third(products),
    moveFulfillmentOrders: third(fulfillmentOrders),
    closeFulfillmentOrders: third(fulfillmentOrders),
    createFulfillmentOrders: fulfillmentOrders - 2 * third(fulfillmentOrders),
    seed,
  });
  return { subscriptions, products, fulfillmentOrders };
}

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'medium' : 'large';
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', '0']);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-incremental-'));
  try {
    const config = path.join(dir, 'sync.config.json');
    await writeFile(
      config,
      JSON.stringify({
        warehouse: path.join(dir, 'warehouse.duckdb'),
        rateLimit: 0,
        stores: [{ name: 'bench', baseUrl: sandbox.baseUrl, tokenEnv: TOKEN_ENV }],
      }),
    );
    log(`incremental: ${scale} store, three whole-process syncs (full, nothing changed, 1 % changed)`);
    const full = await timedSync(sandbox, config);
    log(`  full: ${full.requests} requests in ${seconds(full.ms)} s`);
    const unchanged = await timedSync(sandbox, config);
    log(
      `  nothing changed: ${unchanged.requests} requests in ${seconds(unchanged.ms)} s (${routes(unchanged)})`,
    );

    const { subscriptions, products, fulfillmentOrders } = await changeOnePercent(sandbox, scale, 11);
    const changed = await timedSync(sandbox, config);
    log(`  1 % changed: ${changed.requests} requests in ${seconds(changed.ms)} s (${routes(changed)})`);

    // Once a week (fullRefreshDays 7 for both) the nightly run is also the full scan of products and
    // subscriptions: an estimate from the full sync's pages of those two lists, to show the weekly mean too.
    const scanNight =
      unchanged.requests + (full.byRoute['GET /products/'] ?? 0) + (full.byRoute['GET /subscriptions/'] ?? 0);
    const common = {
      'full sync requests': full.requests,
      'full sync s': seconds(full.ms),
      'full sync products requests': full.byRoute['GET /products/'] ?? 0,
      'weekly scan night requests (estimate)': scanNight,
      'mean of 7 nights / full sync (estimate)': Number(
        ((6 * unchanged.requests + scanNight) / 7 / full.requests).toFixed(3),
      ),
    };
    const results: BenchResult[] = [
      ratioResult(
        {
          name: 'incremental-unchanged',
          figure: `requests: sync with nothing changed / full sync, ${scale} store, whole process`,
          measured: unchanged.requests,
          bound: full.requests,
          target: '≤ 0.05',
          extra: { ...common, 'nightly s': seconds(unchanged.ms), routes: routes(unchanged) },
        },
        'max',
        0.05,
      ),
      ratioResult(
        {
          name: 'incremental-1pct',
          figure: `requests: sync after 1 % changed / full sync, ${scale} store, whole process`,
          measured: changed.requests,
          bound: full.requests,
          target: '≤ 0.10',
          extra: {
            ...common,
            'changed subscriptions': subscriptions,
            'changed products': products,
            'changed fulfillment orders': fulfillmentOrders,
            'nightly s': seconds(changed.ms),
            routes: routes(changed),
          },
        },
        'max',
        0.1,
      ),
    ];
    return results;
  } finally {
    await sandbox.close();
    await rm(dir, { recursive: true, force: true });
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
