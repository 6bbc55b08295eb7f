import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { analyticsModels } from '../../src/model/analytics/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  scratchWarehouses,
} from '../cli/helpers.js';
import {
  buildModelStore,
  decimal,
  type ModelStore,
  milli,
  STORE,
  snapshotOf,
  sum,
  utcDate,
} from './store.js';

/**
 * The analyst views (src/model/analytics/) over a synced and ingested warehouse: each reconciles with the base
 * tables it reads, and with the same figures computed here from the sandbox's own records (the rendered order
 * documents, its subscriptions, catalogue and fulfillment orders), in exact thousandths.
 */

/** The fields of an order document the figures are computed from (both shapes). */
interface OrderDoc {
  number: string;
  currency: string;
  date_placed: string;
  is_test: boolean;
  user: { id: number } | null;
  original_total_excl_tax: string;
  original_shipping_excl_tax: string;
  shipping_excl_tax: string;
  total_tax: string;
  total_excl_tax: string;
  subscriptions?: { id: number; billing_cycle: number }[];
  lines: {
    id: number;
    quantity: number;
    price_excl_tax: string;
    price_incl_tax: string;
    original_price_excl_tax?: string;
    price_excl_tax_excl_discounts?: string;
    variant_id?: number;
    product_id?: number;
    product?: { id: number };
    stockrecord?: { id: number };
  }[];
  refunds: {
    refund_line_items: { line_item_id: number; quantity: number; amount_excl_tax: string }[];
    adjustments: { amount_excl_tax: string }[];
  }[];
}

interface Figures {
  number: string;
  day: string;
  currency: string;
  customer: number | null;
  isTest: boolean;
  gross: bigint;
  discounts: bigint;
  shipping: bigint;
  tax: bigint;
  refunds: bigint;
  net: bigint;
  units: number;
  subscription: { id: number; billing_cycle: number } | null;
}

/** An order's figures from its document's lines and refunds (not from the order totals the view reads). */
function figuresOf(doc: OrderDoc): Figures {
  const gross = sum(
    doc.lines.map((l) => milli(l.original_price_excl_tax ?? l.price_excl_tax_excl_discounts)),
  );
  const after = sum(doc.lines.map((l) => milli(l.price_excl_tax)));
  const refunds = sum(
    doc.refunds.flatMap((r) => [
      ...r.refund_line_items.map((l) => milli(l.amount_excl_tax)),
      ...r.adjustments.map((a) => milli(a.amount_excl_tax)),
    ]),
  );
  const shipping = milli(doc.shipping_excl_tax);
  return {
    number: doc.number,
    day: utcDate(doc.date_placed),
    currency: doc.currency,
    customer: doc.user?.id ?? null,
    isTest: doc.is_test,
    gross,
    discounts: gross - after,
    shipping,
    tax: milli(doc.total_tax),
    refunds,
    net: gross - (gross - after) + shipping - refunds,
    units: doc.lines.reduce((n, l) => n + l.quantity, 0),
    subscription: doc.subscriptions?.[0] ?? null,
  };
}

describe('analyst models over a synced store with captured orders of both shapes', () => {
  const scratch = scratchWarehouses();
  let store: ModelStore;
  let orders: Figures[];
  const q = <T = Record<string, unknown>>(sql: string) => readWarehouse<T>(store.warehouse, sql);

  before(async () => {
    store = await buildModelStore(scratch);
    orders = store.captured.map((c) => figuresOf(c.doc as unknown as OrderDoc));
    // Both shapes, refunds, test orders, renewals and one-off orders are all among the captured ones.
    assert.ok(store.captured.some((c) => c.shape === '2023-02-10'));
    assert.ok(store.captured.some((c) => c.shape === '2024-04-01'));
    assert.ok(orders.some((o) => o.refunds > 0n) && orders.some((o) => o.discounts > 0n));
    assert.ok(orders.some((o) => o.subscription) && orders.some((o) => !o.subscription));
  });

  after(async () => {
    killChildren();
    await store?.sandbox.close();
    await scratch.removeAll();
  });

  it('every model is a view with a comment, and a comment on each of its columns, in the order defined', async () => {
    const views = await q<{ name: string; comment: string | null }>(
      "SELECT view_name AS name, comment FROM duckdb_views() WHERE schema_name = 'main' AND NOT internal",
    );
    assert.deepEqual(views.map((v) => v.name).sort(), analyticsModels.map((m) => m.name).sort());
    for (const model of analyticsModels) {
      assert.equal(views.find((v) => v.name === model.name)?.comment, model.comment);
      const columns = await q<{ name: string; comment: string | null; type: string }>(
        `SELECT column_name AS name, comment, data_type AS type FROM duckdb_columns()
         WHERE table_name = '${model.name}' ORDER BY column_index`,
      );
      assert.deepEqual(
        columns.map((c) => [c.name, c.comment]),
        model.columns.map((c) => [c.name, c.comment]),
        `the columns of ${model.name}`,
      );
      for (const c of columns)
        assert.doesNotMatch(
          c.type,
          /DOUBLE|FLOAT|REAL/,
          `${model.name}.${c.name} is ${c.type}: money stays DECIMAL`,
        );
    }
  });

  it('fct_orders: one row per order, each figure equal to the sandbox order computed from its lines and refunds', async () => {
    const rows = await q<Record<string, string | number | boolean | null>>(
      `SELECT number, api_version, CAST(placed_date AS VARCHAR) AS day, currency, customer_id, is_test,
              gross::VARCHAR AS gross, discounts::VARCHAR AS discounts, shipping::VARCHAR AS shipping,
              tax::VARCHAR AS tax, refunds::VARCHAR AS refunds, net::VARCHAR AS net, order_source,
              subscription_id, billing_cycle
       FROM fct_orders WHERE _store = '${STORE}' ORDER BY number`,
    );
    const expected = store.captured
      .map((c, i) => ({ c, o: orders[i]! }))
      .sort((a, b) => a.o.number.localeCompare(b.o.number))
      .map(({ c, o }) => ({
        number: o.number,
        api_version: c.shape,
        day: o.day,
        currency: o.currency,
        customer_id: o.customer,
        is_test: o.isTest,
        gross: decimal(o.gross),
        discounts: decimal(o.discounts),
        shipping: decimal(o.shipping),
        tax: decimal(o.tax),
        refunds: decimal(o.refunds),
        net: decimal(o.net),
        order_source: 'captured',
        subscription_id: o.subscription?.id ?? null,
        billing_cycle: o.subscription?.billing_cycle ?? null,
      }));
    assert.deepEqual(rows, expected);
  });

  it('fct_orders reconciles with orders and its refunds: totals, discounts, refunds, net', async () => {
    const [counts] = await q<{ orders: number; facts: number }>(
      'SELECT (SELECT count(*) FROM orders)::INTEGER AS orders, (SELECT count(*) FROM fct_orders)::INTEGER AS facts',
    );
    assert.equal(counts!.facts, counts!.orders);
    assert.deepEqual(
      await q(`SELECT f.number FROM fct_orders f JOIN orders o ON o._store = f._store AND o.number = f.number
               WHERE f.gross - f.discounts + f.shipping <> o.total_excl_tax
                  OR f.total_excl_tax + f.tax <> o.total_incl_tax
                  OR f.net <> o.total_excl_tax - f.refunds
                  OR (o.api_version = '2024-04-01' AND f.discounts <> o.total_discount)`),
      [],
    );
    // refunds: the refund lines and adjustments; with tax, the refunds' total_refund_amount.
    assert.deepEqual(
      await q(`SELECT f.number FROM fct_orders f
               LEFT JOIN (SELECT order_number, sum(total_return_excl_tax) AS r FROM order_refunds GROUP BY ALL) r
                 ON r.order_number = f.number
               LEFT JOIN (SELECT order_number, sum(amount_excl_tax) AS a FROM order_refund_adjustments GROUP BY ALL) a
                 ON a.order_number = f.number
               LEFT JOIN (SELECT order_number, sum(total_refund_amount) AS t FROM order_refunds GROUP BY ALL) t
                 ON t.order_number = f.number
               WHERE f.refunds <> coalesce(r.r, 0) + coalesce(a.a, 0) OR f.refunds_incl_tax <> coalesce(t.t, 0)`),
      [],
    );
  });

  it("fct_orders.is_first_order marks each customer's earliest non-test captured order", async () => {
    const first = new Map<number, Figures>();
    for (const o of orders) {
      if (o.customer === null || o.isTest) continue;
      const seen = first.get(o.customer);
      const placed = store.captured.find((c) => c.doc.number === o.number)!.doc.date_placed!;
      const seenPlaced = seen && store.captured.find((c) => c.doc.number === seen.number)!.doc.date_placed!;
      if (!seen || placed < seenPlaced! || (placed === seenPlaced && o.number < seen.number))
        first.set(o.customer, o);
    }
    const rows = await q<{ number: string }>(
      'SELECT number FROM fct_orders WHERE is_first_order ORDER BY number',
    );
    assert.deepEqual(
      rows.map((r) => r.number),
      [...first.values()].map((o) => o.number).sort(),
    );
    const [nulls] = await q<{ n: number }>(
      'SELECT count(*)::INTEGER AS n FROM fct_orders WHERE is_first_order IS NULL AND NOT is_test',
    );
    assert.equal(nulls!.n, orders.filter((o) => o.customer === null && !o.isTest).length);
  });

  it('fct_order_lines: one currency, the variant of both shapes, refunded units, exact line totals', async () => {
    const variantOfStockrecord = new Map<number, number>();
    for (const product of snapshotOf(store, 'products') as {
      variants?: { id: number; stockrecords?: { id: number }[] }[];
    }[])
      for (const v of product.variants ?? [])
        for (const s of v.stockrecords ?? []) variantOfStockrecord.set(s.id, v.id);
    const expected: unknown[] = [];
    for (const { shape, doc } of store.captured) {
      const d = doc as unknown as OrderDoc;
      for (const line of d.lines) {
        const refunded = d.refunds
          .flatMap((r) => r.refund_line_items)
          .filter((l) => l.line_item_id === line.id);
        expected.push({
          key: `${d.number}/${line.id}`,
          currency: d.currency,
          product_id: shape === '2023-02-10' ? line.product!.id : line.product_id,
          variant_id:
            shape === '2023-02-10' ? variantOfStockrecord.get(line.stockrecord!.id) : line.variant_id,
          quantity: line.quantity,
          total: line.price_excl_tax && decimal(milli(line.price_excl_tax)),
          total_incl: decimal(milli(line.price_incl_tax)),
          discount: decimal(
            milli(line.original_price_excl_tax ?? line.price_excl_tax_excl_discounts) -
              milli(line.price_excl_tax),
          ),
          refunded_quantity: refunded.reduce((n, l) => n + l.quantity, 0),
          refunded: decimal(sum(refunded.map((l) => milli(l.amount_excl_tax)))),
        });
      }
    }
    expected.sort((a, b) => ((a as { key: string }).key < (b as { key: string }).key ? -1 : 1));
    const rows = await q(
      `SELECT order_number || '/' || line_id AS key, currency, product_id, variant_id, quantity,
              line_total_excl_tax::VARCHAR AS total, line_total_incl_tax::VARCHAR AS total_incl,
              discount::VARCHAR AS discount, refunded_quantity, refunded_excl_tax::VARCHAR AS refunded
       FROM fct_order_lines ORDER BY key`,
    );
    assert.deepEqual(rows, expected);
    // Unit prices: exact where the total divides by the quantity, NULL where it does not, never rounded.
    assert.deepEqual(
      await q(`SELECT line_id FROM fct_order_lines
               WHERE (unit_price_excl_tax IS NOT NULL AND unit_price_excl_tax * quantity <> line_total_excl_tax)
                  OR (unit_price_incl_tax IS NOT NULL AND unit_price_incl_tax * quantity <> line_total_incl_tax)
                  OR (unit_price_excl_tax IS NULL AND quantity > 0
                      AND CAST(line_total_excl_tax * 1000 AS HUGEINT) % quantity = 0)`),
      [],
    );
    // The lines add up to their orders: after discounts (shipping aside), and the refunded line items.
    assert.deepEqual(
      await q(`SELECT f.number FROM fct_orders f
               JOIN (SELECT order_number, sum(line_total_excl_tax) AS t, sum(discount) AS d,
                            sum(refunded_excl_tax) AS r FROM fct_order_lines GROUP BY ALL) l
                 ON l.order_number = f.number
               LEFT JOIN (SELECT order_number, sum(amount_excl_tax) AS a FROM order_refund_adjustments GROUP BY ALL) a
                 ON a.order_number = f.number
               WHERE l.t <> f.total_excl_tax - f.shipping OR l.d <> f.discounts
                  OR l.r + coalesce(a.a, 0) <> f.refunds`),
      [],
    );
  });

  it('daily_sales: per UTC day and currency, equal to the sandbox orders of that day, and summing to fct_orders', async () => {
    const days = new Map<
      string,
      {
        orders: number;
        units: number;
        gross: bigint;
        discounts: bigint;
        refunds: bigint;
        net: bigint;
        customers: Set<number>;
        first: number;
      }
    >();
    const firsts = new Set(
      (await q<{ number: string }>('SELECT number FROM fct_orders WHERE is_first_order')).map(
        (r) => r.number,
      ),
    );
    for (const o of orders) {
      if (o.isTest) continue;
      const key = `${o.day} ${o.currency}`;
      const day = days.get(key) ?? {
        orders: 0,
        units: 0,
        gross: 0n,
        discounts: 0n,
        refunds: 0n,
        net: 0n,
        customers: new Set(),
        first: 0,
      };
      day.orders += 1;
      day.units += o.units;
      day.gross += o.gross;
      day.discounts += o.discounts;
      day.refunds += o.refunds;
      day.net += o.net;
      if (o.customer !== null) day.customers.add(o.customer);
      if (firsts.has(o.number)) day.first += 1;
      days.set(key, day);
    }
    const expected = [...days.entries()]
      .sort(([a], [b]) => (a < b ? -1 : 1))
      .map(([key, d]) => ({
        key,
        orders: d.orders,
        units: d.units,
        gross: decimal(d.gross),
        discounts: decimal(d.discounts),
        refunds: decimal(d.refunds),
        net: decimal(d.net),
        new_customers: d.first,
        returning_customers: d.customers.size - d.first,
      }));
    const rows = await q(
      `SELECT CAST(day AS VARCHAR) || ' ' || currency AS key, orders::INTEGER AS orders, units::INTEGER AS units,
              gross::VARCHAR AS gross, discounts::VARCHAR AS discounts, refunds::VARCHAR AS refunds,
              net::VARCHAR AS net, new_customers::INTEGER AS new_customers,
              returning_customers::INTEGER AS returning_customers
       FROM daily_sales ORDER BY key`,
    );
    assert.deepEqual(rows, expected);
    assert.deepEqual(
      await q(`SELECT currency FROM (SELECT currency, sum(net) AS n FROM daily_sales GROUP BY ALL) d
               FULL JOIN (SELECT currency, sum(net) AS n FROM fct_orders WHERE NOT is_test GROUP BY ALL) f USING (currency)
               WHERE d.n IS DISTINCT FROM f.n`),
      [],
    );
    const [units] = await q<{ d: string; l: string }>(
      `SELECT (SELECT sum(units) FROM daily_sales)::VARCHAR AS d,
              (SELECT sum(quantity) FROM fct_order_lines WHERE NOT is_test)::VARCHAR AS l`,
    );
    assert.equal(units!.d, units!.l);
  });

  it('customers_summary: orders and net revenue per customer and currency, subscriptions, lifetime', async () => {
    const subscriptions = snapshotOf(store, 'subscriptions') as {
      status: string;
      is_test: boolean;
      user: { id: number } | null;
    }[];
    const active = new Map<number, number>();
    for (const s of subscriptions)
      if (s.user && !s.is_test && s.status === 'active')
        active.set(s.user.id, (active.get(s.user.id) ?? 0) + 1);
    const per = new Map<string, { orders: number; net: bigint }>();
    /** Per customer: the UTC days (as epoch ms) of the first and last order. */
    const span = new Map<number, { first: number; last: number }>();
    for (const [i, o] of orders.entries()) {
      if (o.customer === null || o.isTest) continue;
      const key = `${o.customer} ${o.currency}`;
      const entry = per.get(key) ?? { orders: 0, net: 0n };
      entry.orders += 1;
      entry.net += o.net;
      per.set(key, entry);
      const day = Date.parse(utcDate(store.captured[i]!.doc.date_placed!));
      const s = span.get(o.customer) ?? { first: day, last: day };
      span.set(o.customer, { first: Math.min(day, s.first), last: Math.max(day, s.last) });
    }
    const rows = await q<{ key: string; orders: number; net: string; active: number; lifetime: number }>(
      `SELECT customer_id || ' ' || currency AS key, orders::INTEGER AS orders, net_revenue::VARCHAR AS net,
              active_subscriptions::INTEGER AS active, lifetime_days::INTEGER AS lifetime
       FROM customers_summary WHERE currency IS NOT NULL ORDER BY key`,
    );
    const dayMs = 86_400_000;
    assert.deepEqual(
      rows,
      [...per.entries()]
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([key, e]) => {
          const customer = Number(key.split(' ')[0]);
          const s = span.get(customer)!;
          return {
            key,
            orders: e.orders,
            net: decimal(e.net),
            active: active.get(customer) ?? 0,
            lifetime: (s.last - s.first) / dayMs,
          };
        }),
    );
    // Customers without a captured order (seen in subscriptions) have one row, with their subscriptions.
    const without = await q<{ id: number; active: number }>(
      `SELECT customer_id AS id, active_subscriptions::INTEGER AS active FROM customers_summary
       WHERE currency IS NULL ORDER BY id`,
    );
    assert.ok(without.length > 0, 'some subscribers have no captured order');
    for (const c of without) assert.equal(c.active, active.get(c.id) ?? 0, `customer ${c.id}`);
    // net_revenue sums to fct_orders.net per currency.
    assert.deepEqual(
      await q(`SELECT currency FROM (SELECT currency, sum(net_revenue) AS n FROM customers_summary GROUP BY ALL) c
               FULL JOIN (SELECT currency, sum(net) AS n FROM fct_orders
                          WHERE NOT is_test AND customer_id IS NOT NULL GROUP BY ALL) f USING (currency)
               WHERE c.currency IS NOT NULL AND c.n IS DISTINCT FROM f.n`),
      [],
    );
  });

  it('inventory_levels: every stockrecord of the catalogue, with available and below threshold', async () => {
    const locations = new Map(
      (snapshotOf(store, 'locations') as { id: number; name: string }[]).map((l) => [l.id, l.name]),
    );
    const expected: unknown[] = [];
    for (const product of snapshotOf(store, 'products') as {
      id: number;
      variants?: {
        id: number;
        stockrecords?: {
          id: number;
          location_id: number;
          num_in_stock: number;
          num_allocated: number;
          low_stock_threshold: number;
        }[];
      }[];
    }[])
      for (const v of product.variants ?? [])
        for (const s of v.stockrecords ?? [])
          expected.push({
            id: s.id,
            variant_id: v.id,
            location: locations.get(s.location_id) ?? null,
            available: s.num_in_stock - s.num_allocated,
            below: s.num_in_stock - s.num_allocated < s.low_stock_threshold,
          });
    expected.sort((a, b) => (a as { id: number }).id - (b as { id: number }).id);
    assert.ok(
      expected.some((e) => (e as { below: boolean }).below),
      'some stock is below its threshold',
    );
    const rows = await q(
      `SELECT stockrecord_id::INTEGER AS id, variant_id::INTEGER AS variant_id, location_name AS location,
              available::INTEGER AS available, below_threshold AS below
       FROM inventory_levels ORDER BY id`,
    );
    assert.deepEqual(rows, expected);
  });

  it('fulfillment_backlog: the unfinished fulfillment orders, aged from their order placement, else from when first seen', async () => {
    const finished = new Set(['closed', 'fulfilled', 'cancelled', 'canceled', 'incomplete']);
    const open = (
      snapshotOf(store, 'fulfillment_orders') as {
        id: number;
        order_number: string;
        status: string;
        assigned_location: { id: number };
        fulfillment_holds: unknown[];
        line_items: { fulfillable_quantity: string }[];
      }[]
    ).filter((fo) => !finished.has(fo.status));
    assert.ok(open.length > 0, 'the sandbox has open fulfillment orders');
    const capturedPlaced = new Map(store.captured.map((c) => [c.doc.number, c.doc.date_placed!]));
    const before = Date.now();
    const rows = await q<{
      id: number;
      status: string;
      location_id: number;
      units: string;
      on_hold: boolean;
      basis: string | null;
      age_days: number | null;
      first_seen: string;
      first_synced: string;
    }>(
      `SELECT b.fulfillment_order_id::INTEGER AS id, status, location_id::INTEGER AS location_id,
              units_to_fulfil::VARCHAR AS units, on_hold, age_basis AS basis, age_days::INTEGER AS age_days,
              strftime(b.first_seen_at, '%Y-%m-%dT%H:%M:%S.%gZ') AS first_seen,
              (SELECT strftime(min(h._synced_at), '%Y-%m-%dT%H:%M:%S.%gZ') FROM fulfillment_orders_history h
                WHERE h._store = b._store AND h.id = b.fulfillment_order_id) AS first_synced
       FROM fulfillment_backlog b ORDER BY id`,
    );
    const afterMs = Date.now();
    // First seen: the load that first stored a version of it, an observed time not after this test began.
    for (const row of rows) {
      assert.equal(row.first_seen, row.first_synced, `first_seen_at of ${row.id}`);
      assert.ok(Date.parse(row.first_seen) <= before, `${row.id} was first seen by the sync`);
    }
    assert.deepEqual(
      rows.map(({ age_days: _, first_seen: _s, first_synced: _f, ...r }) => r),
      open
        .sort((a, b) => a.id - b.id)
        .map((fo) => ({
          id: fo.id,
          status: fo.status,
          location_id: fo.assigned_location.id,
          units: decimal(sum(fo.line_items.map((l) => milli(l.fulfillable_quantity)))),
          on_hold: fo.fulfillment_holds.length > 0,
          basis: capturedPlaced.has(fo.order_number) ? 'order_placed' : 'first_seen',
        })),
    );
    assert.ok(
      rows.some((r) => r.basis === 'order_placed') && rows.some((r) => r.basis === 'first_seen'),
      'some backlog orders were captured, some not',
    );
    for (const [i, row] of rows.entries()) {
      const placed = capturedPlaced.get(open[i]!.order_number) ?? row.first_seen;
      // The view ages to now(), somewhere between the two clock readings around the query.
      const low = Math.floor((before - Date.parse(placed)) / 86_400_000);
      const high = Math.floor((afterMs - Date.parse(placed)) / 86_400_000);
      assert.ok(
        row.age_days! >= low && row.age_days! <= high,
        `age ${row.age_days} of ${row.id} in [${low}, ${high}]`,
      );
    }
  });

  it('order_coverage: the referenced order numbers not captured, and status prints the counts', async () => {
    const capturedNumbers = new Set(store.captured.map((c) => c.doc.number));
    const referenced = new Map<string, { subscription_id: number | null; billing_cycle: number | null }>();
    const subscriptions = snapshotOf(store, 'subscriptions') as {
      id: number;
      orders: { order_number: string; billing_cycle: number }[];
    }[];
    for (const s of [...subscriptions].sort((a, b) => a.id - b.id))
      for (const o of s.orders)
        if (!referenced.has(o.order_number))
          referenced.set(o.order_number, { subscription_id: s.id, billing_cycle: o.billing_cycle });
    for (const fo of snapshotOf(store, 'fulfillment_orders') as { order_number: string }[])
      if (!referenced.has(fo.order_number))
        referenced.set(fo.order_number, { subscription_id: null, billing_cycle: null });
    const missing = [...referenced.entries()]
      .filter(([n]) => !capturedNumbers.has(n))
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([order_number, r]) => ({ order_number, ...r }));
    assert.ok(missing.length > 0);
    // Each is an order of the sandbox's store that the warehouse was not given.
    for (const m of missing) assert.ok(store.allOrders.has(m.order_number), m.order_number);
    const rows = await q(
      `SELECT order_number, subscription_id::INTEGER AS subscription_id, billing_cycle::INTEGER AS billing_cycle
       FROM order_coverage ORDER BY order_number`,
    );
    assert.deepEqual(rows, missing);

    const status = await runCli(['status', '--config', store.config], { cwd: store.dir });
    assertExit(status, 0);
    const line = `orders: ${capturedNumbers.size.toLocaleString('en-US')} captured, ${missing.length.toLocaleString('en-US')} referenced but not captured → see order_coverage`;
    assert.ok(status.stdout.includes(`\n${line}\n`), status.stdout);
    const json = await runCli(['status', '--config', store.config, '--json'], { cwd: store.dir });
    assertExit(json, 0);
    const parsed = JSON.parse(json.stdout) as Record<string, unknown>;
    // Backward compatible: the keys it had, and one more.
    for (const key of ['freshnessHours', 'streams', 'newFields']) assert.ok(key in parsed, key);
    assert.deepEqual(parsed.orderCoverage, [
      { store: STORE, captured: capturedNumbers.size, referencedNotCaptured: missing.length },
    ]);
  });

  it('dim_date: one row per UTC day from the first to the last order or subscription, with calendar parts', async () => {
    const subscriptions = snapshotOf(store, 'subscriptions') as { date_created: string }[];
    const days = [...orders.map((o) => o.day), ...subscriptions.map((s) => utcDate(s.date_created))].sort();
    const lo = days[0]!;
    const hi = days.at(-1)!;
    const rows = await q<{
      day: string;
      weekday: number;
      iso_week: number;
      month_start: string;
      is_weekend: boolean;
    }>(
      `SELECT CAST(day AS VARCHAR) AS day, weekday, iso_week, CAST(month_start AS VARCHAR) AS month_start, is_weekend
       FROM dim_date ORDER BY day`,
    );
    assert.equal(rows[0]!.day, lo);
    assert.equal(rows.at(-1)!.day, hi);
    assert.equal(rows.length, (Date.parse(hi) - Date.parse(lo)) / 86_400_000 + 1);
    for (const row of rows) {
      const date = new Date(`${row.day}T00:00:00Z`);
      const isoWeekday = ((date.getUTCDay() + 6) % 7) + 1;
      assert.equal(row.weekday, isoWeekday, row.day);
      assert.equal(row.is_weekend, isoWeekday >= 6, row.day);
      assert.equal(row.month_start, `${row.day.slice(0, 7)}-01`);
    }
    // Every day with sales is a day of the calendar.
    assert.deepEqual(await q('SELECT day FROM daily_sales WHERE day NOT IN (SELECT day FROM dim_date)'), []);
  });

  it("days are UTC days whatever the reader's TimeZone (a DuckDB CLI uses the machine's)", async () => {
    const sql = `SELECT CAST(day AS VARCHAR) || ' ' || currency || ' ' || net AS row FROM daily_sales
                 UNION ALL SELECT 'placed ' || number || ' ' || CAST(placed_date AS VARCHAR) FROM fct_orders
                 UNION ALL SELECT 'first ' || CAST(min(day) AS VARCHAR) FROM dim_date ORDER BY row`;
    const read = async (timeZone: string) => {
      const instance = await DuckDBInstance.create(store.warehouse, { access_mode: 'READ_ONLY' });
      const connection = await instance.connect();
      try {
        await connection.run(`SET TimeZone = '${timeZone}'`);
        return (await connection.runAndReadAll(sql)).getRows().map(([row]) => String(row));
      } finally {
        connection.closeSync();
        instance.closeSync();
      }
    };
    const utc = await read('UTC');
    // Kiritimati is UTC+14, Pago Pago UTC-11: between them every order of the day falls on another local day.
    assert.deepEqual(await read('Pacific/Kiritimati'), utc);
    assert.deepEqual(await read('Pacific/Pago_Pago'), utc);
  });

  it('a rebuild (its tables dropped and recreated) leaves the views answering the same', async () => {
    const answers = () =>
      q(`SELECT (SELECT count(*) FROM fct_orders)::INTEGER AS orders, (SELECT sum(net) FROM fct_orders)::VARCHAR AS net,
                (SELECT count(*) FROM fct_order_lines)::INTEGER AS lines, (SELECT count(*) FROM order_coverage)::INTEGER AS missing,
                (SELECT count(*) FROM duckdb_views() WHERE NOT internal AND comment IS NOT NULL)::INTEGER AS views`);
    const before = await answers();
    assertExit(
      await runCli(['rebuild', '--config', store.config], { cwd: store.dir, timeoutMs: 120_000 }),
      0,
    );
    assert.deepEqual(await answers(), before);
    assert.equal((before[0] as { views: number }).views, analyticsModels.length);
  });

  it('leaks no secret and no escape into any output', () => {
    assertNoSecretsOrEscapes();
  });
});
