import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  scratchWarehouses,
} from '../cli/helpers.js';
import { buildModelStore, type ModelStore } from './store.js';

/**
 * Every ```sql block of docs/analytics.md runs, as printed, through `store-sync query` against a synced
 * sandbox store with captured orders, and answers with rows: a query that broke, or that the data could
 * never answer, fails here.
 */

/** The questions (### headings) of docs/analytics.md with the SQL block under each. */
export async function analyticsQueries(): Promise<{ question: string; sql: string }[]> {
  const text = await readFile(path.join(REPO_ROOT, 'docs', 'analytics.md'), 'utf8');
  const queries: { question: string; sql: string }[] = [];
  let question = '';
  for (const block of text.split(/^```/m).entries()) {
    const [i, part] = block;
    if (i % 2 === 0) {
      const headings = [...part.matchAll(/^### (.+)$/gm)];
      if (headings.length) question = headings.at(-1)![1]!;
    } else if (part.startsWith('sql\n')) {
      queries.push({ question, sql: part.slice(4).trim() });
    }
  }
  return queries;
}

describe('docs/analytics.md: every query runs against a demo-like warehouse', () => {
  const scratch = scratchWarehouses();
  let store: ModelStore;

  before(async () => {
    store = await buildModelStore(scratch);
  });

  after(async () => {
    killChildren();
    await store?.sandbox.close();
    await scratch.removeAll();
  });

  it('has a query under each question', async () => {
    const queries = await analyticsQueries();
    assert.ok(queries.length >= 9, `${queries.length} queries`);
    for (const question of [
      'Revenue by month and currency, net of refunds',
      'Average order value',
      'Top products',
      'Repeat customers',
      'Stock-outs and low stock',
      'Fulfillment backlog by location',
      'Order coverage',
      'MRR and its movements',
      'Churn per month',
      'Cohort retention',
    ])
      assert.ok(
        queries.some((q) => q.question === question),
        `no query under "### ${question}"`,
      );
  });

  it('each query runs through store-sync query and returns rows', async () => {
    for (const { question, sql } of await analyticsQueries()) {
      const result = await runCli(['query', sql, '--format', 'json', '--warehouse', store.warehouse], {
        cwd: store.dir,
      });
      assertExit(result, 0);
      const rows = JSON.parse(result.stdout) as unknown[];
      assert.ok(rows.length > 0, `"${question}" returned no rows`);
    }
  });

  it('the revenue query adds up to the orders it reads', async () => {
    const revenue = (await analyticsQueries()).find(
      (q) => q.question === 'Revenue by month and currency, net of refunds',
    )!;
    const [check] = await readWarehouse<{ documented: string; orders: string }>(
      store.warehouse,
      `SELECT (SELECT sum(net) FROM (${revenue.sql}))::VARCHAR AS documented,
              (SELECT sum(o.total_excl_tax) - sum(f.refunds) FROM fct_orders f JOIN orders o USING (_store, number)
               WHERE NOT o.is_test)::VARCHAR AS orders`,
    );
    assert.equal(check!.documented, check!.orders);
  });

  it('leaks no secret and no escape into any output', () => {
    assertNoSecretsOrEscapes();
  });
});
