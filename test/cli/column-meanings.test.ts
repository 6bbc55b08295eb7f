import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, it } from 'node:test';
import { assertExit, ingestWithSummary, readWarehouse, scratchWarehouses } from './helpers.js';

/**
 * What an analyst reads off the warehouse: a product at 19.99 bought twice is a line whose price_incl_tax is
 * 39.98 (the line total, not the unit price), whose unit_price_incl_tax is 19.990, and whose total_cost is
 * the cost of goods; the column comments say so. Through `store-sync ingest`, for an order of each shape
 * (the 2024-04-01 one takes the fast path) and a cart (the object path).
 */

const scratch = scratchWarehouses();
after(scratch.removeAll);

const taxLine = (amount: string) => ({
  amount,
  currency: 'EUR',
  rate: 0.19,
  source: 'tax_table',
  tax_id: 7,
  tax_title: 'VAT',
});

/** 19.99 including 19% VAT is 16.80 + 3.19 a unit; two units: 33.60 + 6.38 = 39.98. Cost of goods 6.00 a unit. */
const twoAt1999 = {
  quantity: 2,
  price_excl_tax: '33.60',
  price_incl_tax: '39.98',
  total_cost: '12.00',
  unit_cost: '6.00',
  tax_lines: [taxLine('6.38')],
};
/** Three units for 10.00 in all (after a discount): 10.00 ÷ 3 has no exact unit price. */
const threeFor1000 = {
  quantity: 3,
  price_excl_tax: '8.40',
  price_incl_tax: '10.00',
  total_cost: '4.50',
  unit_cost: '1.50',
  tax_lines: [taxLine('1.60')],
};
const orderTotals = {
  currency: 'EUR',
  shipping_excl_tax: '0.00',
  shipping_incl_tax: '0.00',
  shipping_tax: '0.00',
  total_cost: '16.50',
  total_excl_tax: '42.00',
  total_incl_tax: '49.98',
  total_tax: '7.98',
};

const documents = [
  {
    number: 'M-2024',
    created_at: '2025-02-01T10:00:00Z',
    updated_at: '2025-02-01T10:00:00Z',
    ...orderTotals,
    total_discount: '1.68',
    lines: [
      {
        id: 1,
        product_id: 501,
        product_title: 'Tea tin',
        ...twoAt1999,
        original_price_excl_tax: '33.60',
        total_discount: '0.00',
      },
      {
        id: 2,
        product_id: 502,
        product_title: 'Spoon',
        ...threeFor1000,
        original_price_excl_tax: '10.08',
        total_discount: '1.68',
      },
    ],
  },
  {
    number: 'M-2023',
    created_at: '2025-02-01T10:00:00Z',
    updated_at: '2025-02-01T10:00:00Z',
    ...orderTotals,
    lines: [
      {
        id: 3,
        product: { id: 501, title: 'Tea tin' },
        price_currency: 'EUR',
        ...twoAt1999,
        price_excl_tax_excl_discounts: '33.60',
        price_incl_tax_excl_discounts: '39.98',
      },
      {
        id: 4,
        product: { id: 502, title: 'Spoon' },
        price_currency: 'EUR',
        ...threeFor1000,
        price_excl_tax_excl_discounts: '10.08',
        price_incl_tax_excl_discounts: '12.00',
      },
    ],
  },
  {
    id: 77,
    checkout_url: 'https://shop.example/checkout/77/',
    abandoned: false,
    created_at: '2025-02-01T10:00:00Z',
    currency: 'EUR',
    total_cost: '12.00',
    total_excl_tax: '39.98',
    total_incl_tax: '39.98',
    lines: [
      {
        id: 7701,
        product_id: 501,
        quantity: 2,
        price_excl_tax: '39.98',
        price_incl_tax: '39.98',
        total_cost: '12.00',
        unit_cost: '6.00',
      },
    ],
  },
];

it('store-sync ingest: 19.99 × 2 is a line total of 39.98 with a unit price of 19.990, and the comments say so', async () => {
  const { dir, warehouse } = await scratch.create();
  const file = path.join(dir, 'meanings.ndjson');
  await writeFile(file, `${documents.map((d) => JSON.stringify(d)).join('\n')}\n`);
  const { result, summary } = await ingestWithSummary<{ documents: number; rejections: number }>(
    [file],
    warehouse,
  );
  assertExit(result, 0);
  assert.deepEqual(
    { documents: summary.documents, rejections: summary.rejections },
    { documents: 3, rejections: 0 },
  );

  const lines = await readWarehouse(
    warehouse,
    `SELECT order_number AS doc, id::INTEGER AS id, quantity::INTEGER AS quantity,
            price_incl_tax::VARCHAR AS price_incl_tax, unit_price_incl_tax::VARCHAR AS unit_price_incl_tax,
            total_cost::VARCHAR AS total_cost, unit_cost::VARCHAR AS unit_cost
     FROM order_lines
     UNION ALL
     SELECT 'cart ' || cart_id, id::INTEGER, quantity::INTEGER, price_incl_tax::VARCHAR,
            unit_price_incl_tax::VARCHAR, total_cost::VARCHAR, unit_cost::VARCHAR
     FROM cart_lines
     ORDER BY doc, id`,
  );
  const line = (
    doc: string,
    id: number,
    price: string,
    unit: string | null,
    cost: string,
    unitCost: string,
  ) => ({
    doc,
    id,
    quantity: price === '10.000' ? 3 : 2,
    price_incl_tax: price,
    unit_price_incl_tax: unit,
    total_cost: cost,
    unit_cost: unitCost,
  });
  assert.deepEqual(lines, [
    line('M-2023', 3, '39.980', '19.990', '12.000', '6.000'),
    line('M-2023', 4, '10.000', null, '4.500', '1.500'),
    line('M-2024', 1, '39.980', '19.990', '12.000', '6.000'),
    line('M-2024', 2, '10.000', null, '4.500', '1.500'),
    line('cart 77', 7701, '39.980', '19.990', '12.000', '6.000'),
  ]);

  // Revenue is the sum of line totals, and matches the order total; cost of goods is apart from it.
  const [sums] = await readWarehouse(
    warehouse,
    `SELECT (SELECT sum(price_incl_tax) FROM order_lines WHERE order_number = 'M-2024')::VARCHAR AS revenue,
            (SELECT total_incl_tax FROM orders WHERE number = 'M-2024')::VARCHAR AS total_incl_tax,
            (SELECT total_cost FROM orders WHERE number = 'M-2024')::VARCHAR AS cost_of_goods`,
  );
  assert.deepEqual(sums, { revenue: '49.980', total_incl_tax: '49.980', cost_of_goods: '16.500' });

  const comments = new Map(
    (
      await readWarehouse<{ name: string; comment: string }>(
        warehouse,
        `SELECT table_name || '.' || column_name AS name, comment FROM duckdb_columns()
         WHERE table_name IN ('order_lines', 'cart_lines', 'orders')`,
      )
    ).map((r) => [r.name, r.comment]),
  );
  const says = (column: string, pattern: RegExp) =>
    assert.match(comments.get(column) ?? '(no comment)', pattern, `the comment of ${column}`);
  for (const table of ['order_lines', 'cart_lines']) {
    says(`${table}.price_incl_tax`, /^Line total including tax, after discounts.* Not a unit price/);
    says(`${table}.price_excl_tax`, /^Line total excluding tax, after discounts/);
    says(
      `${table}.unit_price_incl_tax`,
      /^Unit price including tax, after discounts: price_incl_tax \(the line total\) divided by quantity/,
    );
    says(`${table}.unit_price_incl_tax`, /NULL when .* the division is not exact/);
    says(
      `${table}.total_cost`,
      /^Cost of goods of the line: unit_cost × quantity\. What the goods cost the store, not revenue/,
    );
    says(`${table}.unit_cost`, /^Cost of goods of one unit/);
  }
  says('order_lines.price_incl_tax', /39\.98 for two units at 19\.99/);
  says('orders.total_cost', /^Cost of goods of the order/);
  says('order_lines.price_incl_tax', /The sandbox's reading of the spec: verify on your store\.$/);
});
