import { createReadStream } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { type DuckDBAppender, DuckDBInstance, LIST, VARCHAR } from '@duckdb/node-api';

/**
 * Peer of bench/ingest.ts: a plain Node script, as a user would write one, loads the benchmark's order
 * documents into the ten tables of tables.sql: readline, JSON.parse, and a DuckDB Appender row per record
 * (values passed as JavaScript values; DuckDB casts text to DECIMAL and TIMESTAMPTZ). Customers are kept once
 * each, from their newest order. No newest-wins across runs, rejections, landing or resume.
 *   node node-appender.js <input file or folder> <database>
 * Prints one JSON line: the rows of each table.
 */

const PEERS = fileURLToPath(
  new URL(import.meta.url.endsWith('.js') ? '../../../bench/peers/' : './', import.meta.url),
);

// biome-ignore lint/suspicious/noExplicitAny: a user's script reads the documents untyped
type Doc = Record<string, any>;
type Cell = string | number | bigint | boolean | null | undefined | readonly string[];

const [input, database] = process.argv.slice(2);
if (!input || !database) throw new Error('usage: node-appender <input file or folder> <database>');
const files = (await stat(input)).isDirectory()
  ? (await readdir(input))
      .filter((name) => name.endsWith('.ndjson'))
      .sort()
      .map((name) => path.join(input, name))
  : [input];

const instance = await DuckDBInstance.create(database);
const connection = await instance.connect();
await connection.run(await readFile(path.join(PEERS, 'tables.sql'), 'utf8'));
const appenders = new Map<string, DuckDBAppender>();
const rows: Record<string, number> = {};

async function appenderOf(table: string): Promise<DuckDBAppender> {
  let appender = appenders.get(table);
  if (!appender) {
    appender = await connection.createAppender(table);
    appenders.set(table, appender);
    rows[table] = 0;
  }
  return appender;
}

const TAGS = LIST(VARCHAR);

/** One row: each value by its JavaScript type (the columns' order is tables.sql's). */
async function append(table: string, cells: Cell[]): Promise<void> {
  const appender = await appenderOf(table);
  for (const cell of cells) {
    if (cell === null || cell === undefined) appender.appendNull();
    else if (typeof cell === 'string') appender.appendVarchar(cell);
    else if (typeof cell === 'boolean') appender.appendBoolean(cell);
    else if (typeof cell === 'bigint') appender.appendBigInt(cell);
    else if (typeof cell === 'number') {
      if (Number.isInteger(cell)) appender.appendBigInt(BigInt(cell));
      else appender.appendDouble(cell);
    } else appender.appendList([...cell], TAGS);
  }
  appender.endRow();
  rows[table]!++;
}

const json = (value: unknown): string | null => (value === undefined ? null : JSON.stringify(value));
const taxCells = (t: Doc): Cell[] => [
  t.amount,
  t.currency,
  t.rate,
  t.tax_title,
  t.source,
  t.tax_id,
  t.report_values?.amount,
  t.report_values?.currency,
];

/** Newest order of each customer: appended once every document is read. */
const customers = new Map<number, Cell[]>();

async function load(doc: Doc): Promise<void> {
  const number = doc.number as string;
  const v2023 = doc.lines?.[0]?.product !== undefined;
  const b = doc.billing_address ?? {};
  const s = doc.shipping_address ?? {};
  const u = doc.user ?? {};
  const a = doc.attribution ?? {};
  const r = doc.report_values ?? {};
  await append('orders', [
    number,
    v2023 ? '2023-02-10' : '2024-04-01',
    doc.created_at,
    doc.date_placed,
    doc.updated_at,
    doc.status,
    doc.payment_status,
    doc.fulfillment_status,
    doc.source,
    doc.is_test,
    doc.currency,
    doc.display_taxes,
    doc.total_cost,
    doc.total_discount,
    doc.total_excl_tax,
    doc.total_incl_tax,
    doc.total_tax,
    doc.total_outstanding,
    doc.original_total_discount,
    doc.original_total_excl_tax,
    doc.original_total_incl_tax,
    doc.original_shipping_excl_tax,
    doc.original_shipping_incl_tax,
    doc.shipping_code,
    doc.shipping_method,
    doc.shipping_excl_tax,
    doc.shipping_incl_tax,
    doc.shipping_tax,
    doc.supports_post_purchase_upsells,
    doc.order_status_url,
    doc.tags,
    json(doc.metadata),
    r.currency,
    r.total_cost,
    r.total_excl_tax,
    r.total_incl_tax,
    b.id,
    b.first_name,
    b.last_name,
    b.line1,
    b.line2,
    b.line3,
    b.line4,
    b.postcode,
    b.state,
    b.country,
    b.phone_number,
    s.id,
    s.first_name,
    s.last_name,
    s.line1,
    s.line2,
    s.line3,
    s.line4,
    s.postcode,
    s.state,
    s.country,
    s.phone_number,
    s.notes,
    u.id,
    u.email,
    u.first_name,
    u.last_name,
    u.accepts_marketing,
    a.utm_source,
    a.utm_medium,
    a.utm_campaign,
  ]);
  for (const l of (doc.lines ?? []) as Doc[]) {
    const p = l.product ?? {};
    const sr = l.stockrecord ?? {};
    const rv = l.report_values ?? {};
    await append('order_lines', [
      number,
      l.id,
      l.product ? '2023-02-10' : '2024-04-01',
      l.created_at,
      l.updated_at,
      l.quantity,
      l.is_gift_card,
      l.is_upsell,
      json(l.metadata),
      l.price_excl_tax,
      l.price_incl_tax,
      l.total_cost,
      l.unit_cost,
      l.currency,
      l.current_quantity,
      l.editable_quantity,
      l.fulfillable_quantity,
      l.original_price_excl_tax,
      l.original_price_incl_tax,
      l.original_total_discount,
      l.total_discount,
      l.product_id ?? p.id,
      l.product_image,
      l.product_title ?? p.title,
      l.product_url ?? p.url,
      l.requires_shipping,
      l.sku ?? sr.partner_sku,
      l.variant_id ?? sr.id,
      l.variant_title,
      l.price_currency,
      l.price_excl_tax_excl_discounts,
      l.price_incl_tax_excl_discounts,
      p.upc,
      json(p.categories),
      json(p.images),
      sr.id,
      sr.price,
      sr.price_currency,
      sr.price_retail,
      sr.num_in_stock,
      sr.num_allocated,
      sr.low_stock_threshold,
      rv.currency,
      rv.price_excl_tax,
      rv.price_incl_tax,
      rv.total_cost,
      rv.total_discount,
      rv.unit_cost,
    ]);
    let index = 0;
    for (const t of (l.tax_lines ?? []) as Doc[])
      await append('order_line_tax_lines', [number, l.id, index++, ...taxCells(t)]);
  }
  for (const t of (doc.tax_lines ?? []) as Doc[])
    await append('order_tax_lines', [
      number,
      t.id,
      t.amount,
      t.currency,
      t.rate,
      t.tax_title,
      t.source,
      t.report_values?.amount,
      t.report_values?.currency,
    ]);
  let index = 0;
  for (const t of (doc.shipping_tax_lines ?? []) as Doc[])
    await append('order_shipping_tax_lines', [number, index++, ...taxCells(t)]);
  for (const t of (doc.transactions ?? []) as Doc[]) {
    const d = t.payment_details ?? {};
    await append('order_transactions', [
      number,
      t.id,
      t.type,
      t.status,
      t.amount,
      t.currency,
      t.date_created,
      t.payment_method,
      t.is_test,
      d.gateway?.id,
      d.gateway?.name,
      d.gateway?.type,
      d.bankcard_first_six,
      d.bankcard_last_four,
      t.report_values?.amount,
      t.report_values?.currency,
    ]);
  }
  for (const f of (doc.fulfillments ?? []) as Doc[]) {
    const o = f.origin_address ?? {};
    await append('fulfillments', [
      f.id,
      number,
      f.line_items ? '2024-04-01' : '2023-02-10',
      f.status,
      f.delivery_status,
      f.created_at,
      f.last_event_date,
      f.location_id,
      f.requires_shipping,
      f.shipping_method,
      f.tracking_code,
      f.tracking_link,
      f.tracking_carrier,
      f.carrier,
      f.date_created,
      f.lines,
      f.reference,
      o.country,
      o.line1,
      o.line4,
    ]);
    for (const li of (f.line_items ?? []) as Doc[]) {
      await append('fulfillment_line_items', [
        f.id,
        li.id,
        number,
        li.order_line_id,
        li.sku,
        li.quantity,
        li.fulfilled_quantity,
        li.currency,
        li.price_excl_tax,
        li.price_incl_tax,
      ]);
      let i = 0;
      for (const t of (li.tax_lines ?? []) as Doc[])
        await append('fulfillment_line_item_tax_lines', [f.id, number, li.id, i++, ...taxCells(t)]);
    }
  }
  if (u.id !== undefined && u.id !== null) {
    const seen = customers.get(u.id);
    const newer =
      !seen || (seen[5] as string) < doc.updated_at || (seen[5] === doc.updated_at && seen[6]! < number);
    if (newer)
      customers.set(u.id, [
        u.id,
        u.email,
        u.first_name,
        u.last_name,
        u.accepts_marketing,
        doc.updated_at,
        number,
      ]);
  }
}

for (const file of files) {
  const lines = createInterface({ input: createReadStream(file), crlfDelay: Number.POSITIVE_INFINITY });
  for await (const line of lines) if (line.trim()) await load(JSON.parse(line) as Doc);
}
for (const cells of customers.values()) await append('customers', cells);
for (const appender of appenders.values()) appender.closeSync();
connection.closeSync();
instance.closeSync();
process.stdout.write(`${JSON.stringify({ rows })}\n`);
