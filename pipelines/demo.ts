import { readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { parseConfig } from '../src/config.js';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { ApiClient } from '../src/extract/index.js';
import { openWarehouse } from '../src/load/index.js';
import { type OrderCoverage, readOrderCoverage } from '../src/load/models.js';
import type { Logger } from '../src/log.js';
import { tableDefinitions } from '../src/model/index.js';
import { deliverThroughReceiver } from '../src/receive/loopback.js';
import { spoolStatus } from '../src/receive/status.js';
import { writeReport } from '../src/report/index.js';
import { DEFAULT_TOKEN, startSandbox } from '../src/sandbox/index.js';
import { enabledStreams } from '../src/streams.js';
import { type CapturedDocuments, captureDemoDocuments } from './demo-documents.js';
import { drainStoreRun } from './drain.js';
import { exportParquet } from './export.js';
import { ingestPaths } from './ingest.js';
import { runSync, type SyncResult } from './sync.js';

/**
 * `store-sync demo` (what `npm start` runs): a seeded sandbox store on a free loopback port, orders created
 * through the API in both versions and captured as documents, every stream synced, the documents ingested,
 * Parquet exported, and a few analyst answers printed. Everything lands under data/demo/, replaced on each run.
 */

export const DEMO_SEED = 20240401;
/** The sandbox is local, so the demo paces at 50 requests a second; a real store is paced at its 4. */
export const DEMO_RATE = 50;

export interface DemoOptions {
  dir: string;
  logger: Logger;
}

export interface DemoQuery {
  title: string;
  sql: string;
}

export const DEMO_QUERIES: DemoQuery[] = [
  {
    title:
      'Revenue by month and currency, latest eight (fct_orders: net of discounts and refunds, excluding tax; captured orders)',
    sql: `SELECT strftime(placed_date, '%Y-%m') AS month, currency, count(*) AS orders, sum(gross) AS gross,
  sum(refunds) AS refunds, sum(net) AS net
FROM fct_orders WHERE NOT is_test GROUP BY ALL ORDER BY month DESC, currency LIMIT 8`,
  },
  {
    title: 'Subscriptions by status',
    sql: `SELECT status, count(*) AS subscriptions, round(100 * count(*) / sum(count(*)) OVER (), 1) AS percent,
  count(*) FILTER (WHERE cancel_reason IS NOT NULL) AS with_cancel_reason
FROM subscriptions WHERE _deleted_at IS NULL GROUP BY ALL ORDER BY subscriptions DESC`,
  },
  {
    title:
      'MRR by currency now, and what moved it over the last 12 months (subscription_mrr_monthly; states at month ends)',
    sql: `SELECT currency, sum(previous_mrr) FILTER (WHERE month = first_month) AS mrr_12_months_ago, sum(new_mrr) AS new,
  sum(expansion_mrr) AS expansion, sum(contraction_mrr) AS contraction, sum(churned_mrr) AS churned,
  sum(reactivated_mrr) AS reactivated, sum(mrr) FILTER (WHERE month = last_month) AS mrr_now
FROM subscription_mrr_monthly,
  (SELECT max(month) AS last_month, CAST(max(month) - INTERVAL 11 MONTH AS DATE) AS first_month FROM subscription_mrr_monthly)
WHERE month BETWEEN first_month AND last_month GROUP BY currency ORDER BY mrr_now DESC`,
  },
  {
    title: 'Top products by units ordered (fct_order_lines)',
    sql: `SELECT product_id, any_value(product_title) AS product_title, sum(quantity) AS units,
  sum(refunded_quantity) AS refunded, count(DISTINCT order_number) AS orders
FROM fct_order_lines GROUP BY product_id ORDER BY units DESC, product_id LIMIT 5`,
  },
  {
    title:
      'Fulfillment backlog by location (fulfillment_backlog; ages from the order placement where it was captured)',
    sql: `SELECT location_name AS location, count(*) AS open_fulfillment_orders, sum(units_to_fulfil) AS units,
  max(age_days) AS oldest_days, count(*) FILTER (WHERE age_days IS NULL) AS age_unknown
FROM fulfillment_backlog GROUP BY ALL ORDER BY open_fulfillment_orders DESC, location`,
  },
];

export interface DemoResult {
  sync: SyncResult;
  documents: number;
  /** Orders delivered as signed webhooks to a loopback receiver, then drained from its spool. */
  webhooks: { delivered: number; loaded: number; rejections: number; spoolDir: string };
  warehouse: string;
  parquetDir: string;
  tables: { table: string; rows: number }[];
  answers: { title: string; columns: string[]; rows: unknown[][] }[];
  /** Orders captured, and order numbers referenced but not captured (the order_coverage view). */
  coverage: OrderCoverage[];
  /** The HTML report of the warehouse (what `store-sync report` writes). */
  report: string;
}

/** What a demo run writes into its folder; anything else there belongs to someone else. */
const DEMO_ENTRIES = new Set([
  'inbox',
  'spool',
  'parquet',
  'parquet.versions',
  'warehouse.duckdb',
  'warehouse.duckdb.wal',
  'warehouse.duckdb.tmp',
  'report.html',
]);

/**
 * Replaces the previous demo completely, so two runs give the same warehouse. Only a folder that holds
 * nothing but the demo's own files is emptied: `--dir .` or `--dir ~` must never delete a user's files.
 */
async function clearDemoDir(dir: string): Promise<void> {
  let entries: string[];
  try {
    entries = await readdir(dir);
  } catch (error) {
    const { code } = error as NodeJS.ErrnoException;
    if (code === 'ENOENT') return;
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `cannot use ${dir} as the demo folder: ${code === 'ENOTDIR' ? 'it is a file, not a folder' : `reading it failed (${code ?? (error as Error).message})`}; pass --dir with a new or empty folder.`,
      { cause: error },
    );
  }
  const foreign = entries.filter((name) => !DEMO_ENTRIES.has(name));
  if (foreign.length > 0) {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `the demo folder ${dir} holds files the demo did not write (${foreign.slice(0, 3).join(', ')}${foreign.length > 3 ? ', …' : ''}); the demo replaces its folder on every run, so pass --dir with a new or empty folder.`,
    );
  }
  for (const name of entries) await rm(path.join(dir, name), { recursive: true, force: true });
}

export async function runDemo(options: DemoOptions): Promise<DemoResult> {
  const { dir, logger } = options;
  await clearDemoDir(dir);
  const inbox = path.join(dir, 'inbox');
  const warehousePath = path.join(dir, 'warehouse.duckdb');
  const parquetDir = path.join(dir, 'parquet');
  const spoolDir = path.join(dir, 'spool');

  const sandbox = await startSandbox({ seed: DEMO_SEED, scale: 'small', rateLimit: DEMO_RATE });
  logger.info('demo.sandbox', { baseUrl: sandbox.baseUrl, seed: DEMO_SEED });
  try {
    const client = new ApiClient({
      baseUrl: sandbox.baseUrl,
      token: DEFAULT_TOKEN,
      rateLimit: DEMO_RATE,
      logger,
    });
    let captured: CapturedDocuments;
    try {
      const eventIds = (order: string, fulfillment: number) =>
        sandbox.store.fulfillmentEventIds(order, fulfillment);
      captured = await captureDemoDocuments(client, inbox, new Date(), eventIds, logger);
    } finally {
      await client.close();
    }
    const config = parseConfig(
      {
        warehouse: warehousePath,
        parquetDir,
        rateLimit: DEMO_RATE,
        stores: [{ name: 'demo', baseUrl: sandbox.baseUrl, tokenEnv: 'STORE_SYNC_DEMO_TOKEN' }],
      },
      'the demo',
      process.cwd(),
    );
    const warehouse = await openWarehouse(warehousePath, { logger });
    try {
      const sync = await runSync({
        config,
        store: config.stores[0]!,
        streams: null,
        mode: 'incremental',
        logger,
        token: DEFAULT_TOKEN,
        warehouse,
      });
      // The orders arrive as a store sends them: signed webhooks, acknowledged once spooled, then drained.
      const delivered = await deliverThroughReceiver({
        store: 'demo',
        spoolDir,
        documents: captured.webhooks,
        logger,
      });
      const drain = await drainStoreRun(warehouse, config, { store: 'demo', spoolDir }, { logger });
      const runId = await warehouse.startRun({
        store: 'demo',
        command: 'ingest',
        mode: null,
        streams: ['documents'],
      });
      const ingest = await ingestPaths(warehouse, [inbox], { store: 'demo', runId, logger });
      await warehouse.finishRun(runId, {
        outcome: ingest.rejections > 0 ? 'completed_with_rejections' : 'succeeded',
        counts: { documents: ingest.documents, rows: ingest.rows, rejections: ingest.rejections },
        requests: 0,
        retries: 0,
      });
      await exportParquet(warehouse, parquetDir, {});
      const tables: { table: string; rows: number }[] = [];
      const dataTables = tableDefinitions.map((t) => t.name).filter((name) => !name.startsWith('_'));
      for (const name of dataTables.sort()) {
        tables.push({ table: name, rows: await warehouse.countRows(name) });
      }
      const answers = [];
      for (const query of DEMO_QUERIES)
        answers.push({ title: query.title, ...(await warehouse.selectJson(query.sql)) });
      const coverage = await readOrderCoverage(warehouse);
      const store = config.stores[0]!;
      const report = await writeReport(warehouse, path.join(dir, 'report.html'), {
        warehousePath,
        expected: enabledStreams([store]),
        freshnessHours: config.freshnessHours,
        spools: [await spoolStatus(store.name, spoolDir)],
      });
      const webhooks = {
        delivered: delivered.delivered,
        loaded: drain.documents,
        rejections: drain.rejections,
        spoolDir,
      };
      return {
        sync,
        documents: captured.documents,
        webhooks,
        warehouse: warehousePath,
        parquetDir,
        tables,
        answers,
        coverage,
        report: report.file,
      };
    } finally {
      await warehouse.close();
    }
  } finally {
    await sandbox.close();
  }
}
