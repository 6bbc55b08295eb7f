import assert from 'node:assert/strict';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  scratchWarehouses,
} from './helpers.js';

/**
 * An order list item (the order's summary: no lines, transactions, discounts or addresses) and the full
 * order, through `store-sync ingest` over NDJSON files, in either order: the warehouse ends with the list
 * item's newer statuses and totals and the full order's lines, transactions and addresses. Before, the later
 * list item wiped the lines, transactions and addresses (issue 26). docs/ingest.md, "A document updates only
 * what it carries".
 */

type Doc = Record<string, unknown>;

const FULL_FILE = path.join(REPO_ROOT, 'test', 'fixtures', 'documents', 'order-2024.json');

const listItem = (full: Doc): Doc => ({
  number: full.number,
  created_at: full.created_at,
  updated_at: '2024-06-01T00:00:00Z',
  status: 'closed',
  payment_status: 'refunded',
  currency: full.currency,
  total_incl_tax: '99.00',
  total_discount: full.total_discount,
  user: full.user,
});

interface Order {
  status: string;
  payment_status: string;
  total_incl_tax: string;
  billing_line1: string | null;
  shipping_line1: string | null;
  absent: string | null;
  lines: number;
  transactions: number;
  discounts: number;
}

describe('store-sync ingest: a document updates only what it carries', () => {
  const scratch = scratchWarehouses();
  after(async () => {
    killChildren();
    assertNoSecretsOrEscapes();
    await scratch.removeAll();
  });

  async function run(order: 'full first' | 'list item first'): Promise<{ warehouse: string; row: Order }> {
    const { dir, warehouse } = await scratch.create();
    const full = JSON.parse(await readFile(FULL_FILE, 'utf8')) as Doc;
    const files = { full: path.join(dir, 'full.ndjson'), item: path.join(dir, 'list-item.ndjson') };
    await writeFile(files.full, `${JSON.stringify(full)}\n`);
    await writeFile(files.item, `${JSON.stringify(listItem(full))}\n`);
    const sequence = order === 'full first' ? [files.full, files.item] : [files.item, files.full];
    for (const file of sequence) assertExit(await runCli(['ingest', file, '--warehouse', warehouse]), 0);
    const [row] = await readWarehouse<Order>(
      warehouse,
      `SELECT status, payment_status, total_incl_tax::VARCHAR AS total_incl_tax, billing_line1, shipping_line1,
         _absent_fields AS absent,
         (SELECT count(*)::INT FROM order_lines l WHERE l.order_number = o.number) AS lines,
         (SELECT count(*)::INT FROM order_transactions t WHERE t.order_number = o.number) AS transactions,
         (SELECT count(*)::INT FROM order_discounts d WHERE d.order_number = o.number) AS discounts
       FROM orders o`,
    );
    return { warehouse, row: row! };
  }

  const expected: Order = {
    status: 'closed',
    payment_status: 'refunded',
    total_incl_tax: '99.000',
    billing_line1: '1 Analytical Way',
    shipping_line1: '2 Difference St',
    absent: null,
    lines: 2,
    transactions: 1,
    discounts: 2,
  };

  it('a list item after the full order leaves its lines, transactions and addresses', async () => {
    const { row } = await run('full first');
    assert.deepEqual(row, expected);
  });

  it('the full order after a newer list item fills them in and keeps the newer statuses and totals', async () => {
    const { warehouse, row } = await run('list item first');
    assert.deepEqual(row, expected);
    // And rebuild from the landing reproduces it.
    assertExit(await runCli(['rebuild', '--warehouse', warehouse]), 0);
    const [again] = await readWarehouse<{ status: string; lines: number }>(
      warehouse,
      `SELECT status, (SELECT count(*)::INT FROM order_lines) AS lines FROM orders`,
    );
    assert.deepEqual(again, { status: 'closed', lines: 2 });
  });
});
