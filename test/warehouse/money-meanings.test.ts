import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { buildStore } from '../../src/sandbox/model/store.js';
import { ndjson, tempWarehouse } from './helpers.js';

/**
 * The column descriptions of money and quantity columns (src/model/tables/, docs/warehouse.md) say what the
 * values are: a line's price_* are line totals, total_cost and unit_cost are cost of goods, discounts exclude
 * tax. The spec does not say so; the sandbox computes them that way (src/sandbox/model/order-state.ts). Here
 * every seeded order of a sandbox store, rendered in both API shapes and ingested, is checked against those
 * meanings in SQL, order by order and line by line, so a description and the arithmetic cannot part.
 */

const SEED = 7;
// 764 orders: enough for discounts (vouchers and offers), refunds, gift cards, KWD (three decimals) and lines
// whose total does not divide by their quantity.
const SCALE = 80;
const SHAPES = { '2023-02-10': 'shape_2023', '2024-04-01': 'shape_2024' } as const;

describe('money columns mean what their descriptions say, for every seeded sandbox order', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  let orderCount = 0;
  let cartCount = 0;

  const rows = async (sql: string): Promise<Record<string, unknown>[]> => {
    const reader = await warehouse.connection.runAndReadAll(sql);
    const names = reader.columnNames();
    return reader.getRowsJson().map((r) => Object.fromEntries(names.map((n, i) => [n, r[i]])));
  };
  const one = async (sql: string): Promise<unknown> => Object.values((await rows(sql))[0]!)[0];
  /** Fails naming the first few orders (or lines) that break an identity, with their values. */
  const none = async (label: string, sql: string) => {
    const broken = await rows(`${sql} LIMIT 5`);
    assert.deepEqual(broken, [], `${label}: these break it`);
  };

  before(async () => {
    let dir: string;
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    const parts = buildStore({ seed: SEED, scale: SCALE, clock: () => new Date('2026-01-15T12:00:00Z') });
    orderCount = parts.orders.count;
    const states = Array.from({ length: orderCount }, (_, i) => parts.orders.find(orderNumberOf(i))!);
    // Each shape as its own store: both carry the same order numbers, which would otherwise merge (newest wins).
    for (const [shape, store] of Object.entries(SHAPES)) {
      const file = path.join(dir, `${store}.ndjson`);
      await writeFile(file, ndjson(states.map(shape === '2024-04-01' ? renderOrder2024 : renderOrder2023)));
      const summary = await ingestPaths(warehouse, [file], { store, runId: store, logger: silentLogger });
      assert.equal(summary.rejections, 0, `the ${shape} orders load without rejections`);
    }
    // Carts are made through the API only (create and replace): two lines each, some with a voucher, in
    // every currency, quantities up to 3.
    const products = parts.catalogue.items.filter((p) => p.is_public && (p.variants?.length ?? 0) > 0);
    const currencies = ['USD', 'EUR', 'GBP', 'KWD'];
    const carts = products.slice(0, 48).map((p, i) =>
      parts.carts.create({
        currency: currencies[i % currencies.length]!,
        lines: [
          { product_id: p.id, quantity: 1 + (i % 3) },
          { product_id: products[(i + 7) % products.length]!.id, quantity: 3 },
        ],
        user: { email: `cart${i}@example.com` },
        vouchers: i % 2 === 0 ? [{ code: i % 4 === 0 ? 'WELCOME10' : 'SAVE5' }] : [],
      }),
    );
    cartCount = carts.length;
    const file = path.join(dir, 'carts.ndjson');
    await writeFile(file, ndjson(carts));
    const summary = await ingestPaths(warehouse, [file], {
      store: 'carts',
      runId: 'carts',
      logger: silentLogger,
    });
    assert.equal(summary.rejections, 0, 'the carts load without rejections');
  });
  after(() => cleanup?.());

  it('loads every seeded order in both shapes, with the cases the identities must survive', async () => {
    assert.ok(orderCount > 500, `a store of ${orderCount} orders`);
    for (const store of Object.values(SHAPES))
      assert.equal(Number(await one(`SELECT count(*) FROM orders WHERE _store = '${store}'`)), orderCount);
    const has = async (what: string, where: string, table = 'orders') =>
      assert.ok(
        Number(await one(`SELECT count(*) FROM ${table} WHERE ${where}`)) > 0,
        `some order has ${what}`,
      );
    await has('a discount', "_store = 'shape_2024' AND total_discount > 0");
    await has('voucher and offer discounts', "kind = 'voucher'", 'order_discounts');
    await has('an offer discount', "kind = 'offer'", 'order_discounts');
    await has('shipping tax', 'shipping_tax > 0');
    await has('a three-decimal currency', "currency = 'KWD'");
    await has('a refund', 'true', 'order_refunds');
    await has('a refunded shipping', "type = 'shipping_refund'", 'order_refund_adjustments');
    await has('a gift card line', 'is_gift_card', 'order_lines');
    await has(
      'a line of several units with an exact unit price',
      'quantity > 1 AND unit_price_incl_tax IS NOT NULL',
      'order_lines',
    );
    await has(
      'a line whose total does not divide by its quantity',
      'unit_price_incl_tax IS NULL',
      'order_lines',
    );
  });

  const lineSums = `
    SELECT _store, order_number, sum(price_excl_tax) AS excl, sum(price_incl_tax) AS incl,
           sum(total_cost) AS cost, sum(original_price_excl_tax) AS original_excl,
           sum(original_price_incl_tax) AS original_incl, sum(total_discount) AS discount,
           sum(price_excl_tax_excl_discounts) AS excl_before, sum(price_incl_tax_excl_discounts) AS incl_before
    FROM order_lines GROUP BY ALL`;
  const taxSums = (table: string) =>
    `SELECT _store, order_number, sum(amount) AS tax FROM ${table} GROUP BY ALL`;
  const ordersWith = `
    SELECT o.*, l.excl, l.incl, l.cost, l.original_excl, l.original_incl, l.discount, l.excl_before, l.incl_before,
           coalesce(lt.tax, 0) AS line_tax, coalesce(st.tax, 0) AS shipping_tax_lines,
           coalesce(ot.tax, 0) AS order_tax_lines, coalesce(d.amount, 0) AS discounts
    FROM (SELECT *, number AS order_number FROM orders) o
    JOIN (${lineSums}) l USING (_store, order_number)
    LEFT JOIN (${taxSums('order_line_tax_lines')}) lt USING (_store, order_number)
    LEFT JOIN (${taxSums('order_shipping_tax_lines')}) st USING (_store, order_number)
    LEFT JOIN (${taxSums('order_tax_lines')}) ot USING (_store, order_number)
    LEFT JOIN (SELECT _store, order_number, sum(amount) AS amount FROM order_discounts GROUP BY ALL) d
      USING (_store, order_number)`;
  const broken = (condition: string, columns: string, where = 'true') =>
    `SELECT _store, number, ${columns} FROM (${ordersWith}) WHERE (${where}) AND (${condition}) IS NOT TRUE ORDER BY ALL`;

  it('line totals after discounts plus shipping make the order total, excluding and including tax', async () => {
    // Every order is checked: none lacks lines (the join would drop it), and a NULL fails an identity.
    assert.equal(Number(await one(`SELECT count(*) FROM (${ordersWith})`)), 2 * orderCount);
    await none(
      'Σ lines.price_excl_tax + shipping_excl_tax = total_excl_tax',
      broken('excl + shipping_excl_tax = total_excl_tax', 'excl, shipping_excl_tax, total_excl_tax'),
    );
    await none(
      'Σ lines.price_incl_tax + shipping_incl_tax = total_incl_tax',
      broken('incl + shipping_incl_tax = total_incl_tax', 'incl, shipping_incl_tax, total_incl_tax'),
    );
    await none(
      'total_excl_tax + total_tax = total_incl_tax',
      broken('total_excl_tax + total_tax = total_incl_tax', 'total_excl_tax, total_tax, total_incl_tax'),
    );
    await none(
      'shipping_excl_tax + shipping_tax = shipping_incl_tax',
      broken('shipping_excl_tax + shipping_tax = shipping_incl_tax', 'shipping_excl_tax, shipping_tax'),
    );
  });

  it('tax lines add up to the order tax: lines and shipping, and the order-level lines', async () => {
    await none(
      'Σ line tax lines + Σ shipping tax lines = total_tax',
      broken('line_tax + shipping_tax_lines = total_tax', 'line_tax, shipping_tax_lines, total_tax'),
    );
    await none(
      'Σ shipping tax lines = shipping_tax',
      broken('shipping_tax_lines = shipping_tax', 'shipping_tax_lines, shipping_tax'),
    );
    await none(
      'Σ order_tax_lines = total_tax',
      broken('order_tax_lines = total_tax', 'order_tax_lines, total_tax'),
    );
  });

  it('the order cost of goods is the sum of its lines, not revenue', async () => {
    await none('Σ lines.total_cost = orders.total_cost', broken('cost = total_cost', 'cost, total_cost'));
    // Cost of goods and revenue differ: were total_cost a line total, they would coincide.
    assert.ok(
      Number(await one('SELECT count(*) FROM order_lines WHERE total_cost <> price_excl_tax')) > 0,
      'total_cost is not the line total',
    );
  });

  it('2024-04-01: line totals before discounts, less the discount, make the order total', async () => {
    const where = "_store = 'shape_2024'";
    await none(
      'Σ original_price_excl_tax − total_discount + shipping_excl_tax + total_tax = total_incl_tax',
      broken(
        'original_excl - total_discount + shipping_excl_tax + total_tax = total_incl_tax',
        'original_excl, total_discount, shipping_excl_tax, total_tax, total_incl_tax',
        where,
      ),
    );
    await none(
      'Σ lines.total_discount = total_discount = Σ order_discounts.amount',
      broken(
        'discount = total_discount AND discounts = total_discount',
        'discount, discounts, total_discount',
        where,
      ),
    );
    await none(
      'Σ original_price_excl_tax + original_shipping_excl_tax = original_total_excl_tax',
      broken(
        'original_excl + original_shipping_excl_tax = original_total_excl_tax',
        'original_excl, original_shipping_excl_tax, original_total_excl_tax',
        where,
      ),
    );
    await none(
      'Σ original_price_incl_tax + original_shipping_incl_tax = original_total_incl_tax',
      broken(
        'original_incl + original_shipping_incl_tax = original_total_incl_tax',
        'original_incl, original_shipping_incl_tax, original_total_incl_tax',
        where,
      ),
    );
    // What is still to be paid: the total less the captured sales and captures (refunds do not lower it).
    await none(
      'total_outstanding = greatest(0, total_incl_tax − captured)',
      `SELECT o.number, o.total_incl_tax, o.total_outstanding, coalesce(t.captured, 0) AS captured
       FROM orders o LEFT JOIN (
         SELECT _store, order_number, sum(amount) AS captured FROM order_transactions
         WHERE status = 'success' AND type IN ('sale', 'capture') GROUP BY ALL
       ) t ON t._store = o._store AND t.order_number = o.number
       WHERE o.${where} AND o.total_outstanding IS DISTINCT FROM greatest(0, o.total_incl_tax - coalesce(t.captured, 0))
       ORDER BY ALL`,
    );
  });

  it('2023-02-10: line totals before discounts, less the order discounts, make the order total', async () => {
    const where = "_store = 'shape_2023'";
    await none(
      'Σ price_excl_tax_excl_discounts − Σ order_discounts.amount + shipping_excl_tax + total_tax = total_incl_tax',
      broken(
        'excl_before - discounts + shipping_excl_tax + total_tax = total_incl_tax',
        'excl_before, discounts, shipping_excl_tax, total_tax, total_incl_tax',
        where,
      ),
    );
    await none(
      'Σ price_excl_tax_excl_discounts + original_shipping_excl_tax = original_total_excl_tax',
      broken(
        'excl_before + original_shipping_excl_tax = original_total_excl_tax',
        'excl_before, original_total_excl_tax',
        where,
      ),
    );
    await none(
      'Σ price_incl_tax_excl_discounts + original_shipping_incl_tax = original_total_incl_tax',
      broken(
        'incl_before + original_shipping_incl_tax = original_total_incl_tax',
        'incl_before, original_total_incl_tax',
        where,
      ),
    );
  });

  it('per line: cost of goods is unit_cost × quantity; unit_price_incl_tax × quantity is the line total', async () => {
    await none(
      'unit_cost × quantity = total_cost',
      `SELECT _store, order_number, id, unit_cost, quantity, total_cost FROM order_lines
       WHERE unit_cost * quantity IS DISTINCT FROM total_cost ORDER BY ALL`,
    );
    await none(
      'unit_price_incl_tax × quantity = price_incl_tax',
      `SELECT _store, order_number, id, unit_price_incl_tax, quantity, price_incl_tax FROM order_lines
       WHERE unit_price_incl_tax IS NOT NULL AND unit_price_incl_tax * quantity IS DISTINCT FROM price_incl_tax ORDER BY ALL`,
    );
    // NULL exactly where the line total, in thousandths, does not divide by the quantity.
    await none(
      'unit_price_incl_tax is NULL only where the division is not exact',
      `SELECT _store, order_number, id, unit_price_incl_tax, quantity, price_incl_tax FROM order_lines
       WHERE (unit_price_incl_tax IS NULL) IS DISTINCT FROM ((price_incl_tax * 1000)::BIGINT % quantity <> 0) ORDER BY ALL`,
    );
    await none(
      "a line's tax lines are the difference between its totals including and excluding tax",
      `SELECT l._store, l.order_number, l.id, l.price_excl_tax, l.price_incl_tax, sum(t.amount) AS tax
       FROM order_lines l JOIN order_line_tax_lines t
         ON t._store = l._store AND t.order_number = l.order_number AND t.line_id = l.id
       GROUP BY ALL HAVING l.price_excl_tax + sum(t.amount) IS DISTINCT FROM l.price_incl_tax ORDER BY ALL`,
    );
    await none(
      '2024-04-01: original_price_excl_tax − total_discount = price_excl_tax',
      `SELECT order_number, id, original_price_excl_tax, total_discount, price_excl_tax FROM order_lines
       WHERE _store = 'shape_2024' AND original_price_excl_tax - total_discount IS DISTINCT FROM price_excl_tax ORDER BY ALL`,
    );
  });

  it('refunds: the amount given back is the refunded lines and adjustments, including tax', async () => {
    const sums = (table: string) =>
      `SELECT _store, order_number, refund_id, sum(amount_excl_tax) AS excl, sum(amount_incl_tax) AS incl
       FROM ${table} GROUP BY ALL`;
    await none(
      'total_return_* = Σ refund lines; total_refund_amount = Σ lines + Σ adjustments, including tax',
      `SELECT r._store, r.order_number, r.id, r.total_return_excl_tax, r.total_return_incl_tax,
              r.total_refund_amount, l.excl, l.incl, a.incl AS adjustments
       FROM order_refunds r
       LEFT JOIN (${sums('order_refund_lines')}) l
         ON l._store = r._store AND l.order_number = r.order_number AND l.refund_id = r.id
       LEFT JOIN (${sums('order_refund_adjustments')}) a
         ON a._store = r._store AND a.order_number = r.order_number AND a.refund_id = r.id
       WHERE r.total_return_excl_tax IS DISTINCT FROM coalesce(l.excl, 0)
          OR r.total_return_incl_tax IS DISTINCT FROM coalesce(l.incl, 0)
          OR r.total_refund_amount IS DISTINCT FROM coalesce(l.incl, 0) + coalesce(a.incl, 0)
       ORDER BY ALL`,
    );
  });

  it('carts: line totals after discounts add up to the cart totals; cost of goods per unit and line', async () => {
    assert.equal(Number(await one("SELECT count(*) FROM carts WHERE _store = 'carts'")), cartCount);
    assert.ok(
      Number(await one('SELECT count(*) FROM carts WHERE total_discount > 0')) > 0,
      'some cart has a discount',
    );
    await none(
      'Σ lines = the cart totals',
      `SELECT c.id, c.total_excl_tax, c.total_incl_tax, c.total_cost, c.total_discount, l.*, d.amount
       FROM carts c
       JOIN (SELECT _store, cart_id, sum(price_excl_tax) AS excl, sum(price_incl_tax) AS incl,
                    sum(total_cost) AS cost, sum(total_discount) AS discount
             FROM cart_lines GROUP BY ALL) l ON l._store = c._store AND l.cart_id = c.id
       LEFT JOIN (SELECT _store, cart_id, sum(amount) AS amount FROM cart_discounts GROUP BY ALL) d
         ON d._store = c._store AND d.cart_id = c.id
       WHERE (l.excl = c.total_excl_tax AND l.incl = c.total_incl_tax AND l.cost = c.total_cost
              AND l.discount = c.total_discount AND coalesce(d.amount, 0) = c.total_discount) IS NOT TRUE
       ORDER BY ALL`,
    );
    await none(
      'per cart line: unit_cost × quantity = total_cost; unit_price_incl_tax × quantity = price_incl_tax',
      `SELECT cart_id, id, quantity, unit_cost, total_cost, unit_price_incl_tax, price_incl_tax FROM cart_lines
       WHERE unit_cost * quantity IS DISTINCT FROM total_cost
          OR (unit_price_incl_tax IS NULL) IS DISTINCT FROM ((price_incl_tax * 1000)::BIGINT % quantity <> 0)
          OR (unit_price_incl_tax IS NOT NULL AND unit_price_incl_tax * quantity <> price_incl_tax)
       ORDER BY ALL`,
    );
  });

  it('the descriptions say line total, unit price and cost of goods where the values are those', async () => {
    const comments = new Map(
      (
        await rows(
          `SELECT table_name || '.' || column_name AS name, comment FROM duckdb_columns()
           WHERE table_name IN ('orders', 'order_lines', 'cart_lines', 'carts')`,
        )
      ).map((r) => [String(r.name), String(r.comment)]),
    );
    const says = (column: string, pattern: RegExp) =>
      assert.match(comments.get(column) ?? '(no comment)', pattern, `the comment of ${column}`);
    for (const table of ['order_lines', 'cart_lines']) {
      says(`${table}.price_excl_tax`, /^Line total excluding tax, after discounts/);
      says(`${table}.price_incl_tax`, /^Line total including tax, after discounts/);
      says(`${table}.price_incl_tax`, /Not a unit price/);
      says(`${table}.unit_price_incl_tax`, /^Unit price including tax/);
      says(`${table}.total_cost`, /^Cost of goods of the line: unit_cost × quantity/);
      says(`${table}.total_cost`, /not revenue/);
      says(`${table}.unit_cost`, /^Cost of goods of one unit/);
    }
    says('order_lines.original_price_excl_tax', /^Line total excluding tax, before discounts/);
    says('order_lines.price_excl_tax_excl_discounts', /^Line total excluding tax, before discounts/);
    says('orders.total_cost', /^Cost of goods of the order/);
    says('carts.total_cost', /^Cost of goods of the cart/);
    says('orders.total_excl_tax', /after discounts: the sum of the lines' price_excl_tax \(line totals\)/);
    says('orders.total_discount', /excluding tax/);
    // Where the spec is silent, the description says whose reading it is.
    says('order_lines.price_incl_tax', /The sandbox's reading of the spec: verify on your store\./);
  });
});
