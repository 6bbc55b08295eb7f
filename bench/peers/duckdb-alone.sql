-- DuckDB alone, as a user would load the benchmark's order documents with SQL (bench/ingest.ts runs it
-- through bench/peers/duckdb-alone.ts after tables.sql): one typed read of the NDJSON into a temporary
-- table, then one INSERT per table, UNNEST for the arrays. The variable `files` is the path or glob of the input; the
-- customers are kept once each, from their newest order.
CREATE TEMP TABLE docs AS SELECT * FROM read_ndjson(getvariable('files'), format = 'newline_delimited', columns = {
  number: 'VARCHAR', created_at: 'TIMESTAMPTZ', date_placed: 'TIMESTAMPTZ', updated_at: 'TIMESTAMPTZ',
  status: 'VARCHAR', payment_status: 'VARCHAR', fulfillment_status: 'VARCHAR', source: 'VARCHAR',
  is_test: 'BOOLEAN', currency: 'VARCHAR', display_taxes: 'VARCHAR', total_cost: 'DECIMAL(18,3)',
  total_discount: 'DECIMAL(18,3)', total_excl_tax: 'DECIMAL(18,3)', total_incl_tax: 'DECIMAL(18,3)',
  total_tax: 'DECIMAL(18,3)', total_outstanding: 'DECIMAL(18,3)', original_total_discount: 'DECIMAL(18,3)',
  original_total_excl_tax: 'DECIMAL(18,3)', original_total_incl_tax: 'DECIMAL(18,3)',
  original_shipping_excl_tax: 'DECIMAL(18,3)', original_shipping_incl_tax: 'DECIMAL(18,3)',
  shipping_code: 'VARCHAR', shipping_method: 'VARCHAR', shipping_excl_tax: 'DECIMAL(18,3)',
  shipping_incl_tax: 'DECIMAL(18,3)', shipping_tax: 'DECIMAL(18,3)', supports_post_purchase_upsells: 'BOOLEAN',
  order_status_url: 'VARCHAR', tags: 'VARCHAR[]', metadata: 'JSON',
  report_values: 'STRUCT(currency VARCHAR, total_cost DECIMAL(18,3), total_excl_tax DECIMAL(18,3), total_incl_tax DECIMAL(18,3))',
  billing_address: 'STRUCT(id BIGINT, first_name VARCHAR, last_name VARCHAR, line1 VARCHAR, line2 VARCHAR, line3 VARCHAR, line4 VARCHAR, postcode VARCHAR, state VARCHAR, country VARCHAR, phone_number VARCHAR)',
  shipping_address: 'STRUCT(id BIGINT, first_name VARCHAR, last_name VARCHAR, line1 VARCHAR, line2 VARCHAR, line3 VARCHAR, line4 VARCHAR, postcode VARCHAR, state VARCHAR, country VARCHAR, phone_number VARCHAR, notes VARCHAR)',
  "user": 'STRUCT(id BIGINT, email VARCHAR, first_name VARCHAR, last_name VARCHAR, accepts_marketing BOOLEAN)',
  attribution: 'STRUCT(utm_source VARCHAR, utm_medium VARCHAR, utm_campaign VARCHAR)',
  lines: 'STRUCT(id BIGINT, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ, quantity BIGINT, is_gift_card BOOLEAN, is_upsell BOOLEAN, metadata JSON, price_excl_tax DECIMAL(18,3), price_incl_tax DECIMAL(18,3), total_cost DECIMAL(18,3), unit_cost DECIMAL(18,3), tax_lines STRUCT(amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, report_values STRUCT(amount DECIMAL(18,3), currency VARCHAR), source VARCHAR, tax_id BIGINT, tax_title VARCHAR)[], currency VARCHAR, current_quantity BIGINT, editable_quantity BIGINT, fulfillable_quantity BIGINT, original_price_excl_tax DECIMAL(18,3), original_price_incl_tax DECIMAL(18,3), original_total_discount DECIMAL(18,3), total_discount DECIMAL(18,3), product_id BIGINT, product_image VARCHAR, product_title VARCHAR, product_url VARCHAR, requires_shipping BOOLEAN, sku VARCHAR, variant_id BIGINT, variant_title VARCHAR, price_currency VARCHAR, price_excl_tax_excl_discounts DECIMAL(18,3), price_incl_tax_excl_discounts DECIMAL(18,3), product STRUCT(id BIGINT, title VARCHAR, upc VARCHAR, url VARCHAR, categories JSON, images JSON), stockrecord STRUCT(id BIGINT, partner_sku VARCHAR, price DECIMAL(18,3), price_currency VARCHAR, price_retail DECIMAL(18,3), num_in_stock BIGINT, num_allocated BIGINT, low_stock_threshold BIGINT), report_values STRUCT(currency VARCHAR, price_excl_tax DECIMAL(18,3), price_incl_tax DECIMAL(18,3), total_cost DECIMAL(18,3), total_discount DECIMAL(18,3), unit_cost DECIMAL(18,3)))[]',
  tax_lines: 'STRUCT(id BIGINT, amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, report_values STRUCT(amount DECIMAL(18,3), currency VARCHAR), source VARCHAR, tax_title VARCHAR)[]',
  shipping_tax_lines: 'STRUCT(amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, report_values STRUCT(amount DECIMAL(18,3), currency VARCHAR), source VARCHAR, tax_id BIGINT, tax_title VARCHAR)[]',
  transactions: 'STRUCT(id BIGINT, type VARCHAR, status VARCHAR, amount DECIMAL(18,3), currency VARCHAR, date_created TIMESTAMPTZ, payment_method VARCHAR, is_test BOOLEAN, payment_details STRUCT(bankcard_first_six VARCHAR, bankcard_last_four VARCHAR, gateway STRUCT(id BIGINT, name VARCHAR, type VARCHAR)), report_values STRUCT(amount DECIMAL(18,3), currency VARCHAR))[]',
  fulfillments: 'STRUCT(id BIGINT, order_number VARCHAR, status VARCHAR, delivery_status VARCHAR, created_at TIMESTAMPTZ, last_event_date TIMESTAMPTZ, location_id BIGINT, requires_shipping BOOLEAN, shipping_method VARCHAR, tracking_code VARCHAR, tracking_link VARCHAR, tracking_carrier VARCHAR, carrier VARCHAR, date_created TIMESTAMPTZ, lines VARCHAR, reference VARCHAR, origin_address STRUCT(line1 VARCHAR, line4 VARCHAR, country VARCHAR), line_items STRUCT(id BIGINT, order_line_id BIGINT, quantity BIGINT, fulfilled_quantity DECIMAL(18,3), currency VARCHAR, price_excl_tax DECIMAL(18,3), price_incl_tax DECIMAL(18,3), sku VARCHAR, tax_lines STRUCT(amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, report_values STRUCT(amount DECIMAL(18,3), currency VARCHAR), source VARCHAR, tax_id BIGINT, tax_title VARCHAR)[])[])[]'
});

INSERT INTO orders SELECT
  number, CASE WHEN lines[1].product IS NOT NULL THEN '2023-02-10' ELSE '2024-04-01' END, created_at,
  date_placed, updated_at, status, payment_status, fulfillment_status, source, is_test, currency, display_taxes,
  total_cost, total_discount, total_excl_tax, total_incl_tax, total_tax, total_outstanding,
  original_total_discount, original_total_excl_tax, original_total_incl_tax, original_shipping_excl_tax,
  original_shipping_incl_tax, shipping_code, shipping_method, shipping_excl_tax, shipping_incl_tax, shipping_tax,
  supports_post_purchase_upsells, order_status_url, tags, metadata, report_values.currency,
  report_values.total_cost, report_values.total_excl_tax, report_values.total_incl_tax,
  billing_address.id, billing_address.first_name, billing_address.last_name, billing_address.line1,
  billing_address.line2, billing_address.line3, billing_address.line4, billing_address.postcode,
  billing_address.state, billing_address.country, billing_address.phone_number,
  shipping_address.id, shipping_address.first_name, shipping_address.last_name, shipping_address.line1,
  shipping_address.line2, shipping_address.line3, shipping_address.line4, shipping_address.postcode,
  shipping_address.state, shipping_address.country, shipping_address.phone_number, shipping_address.notes,
  "user".id, "user".email, "user".first_name, "user".last_name, "user".accepts_marketing,
  attribution.utm_source, attribution.utm_medium, attribution.utm_campaign
FROM docs;

INSERT INTO order_lines SELECT
  number, l.id, CASE WHEN l.product IS NOT NULL THEN '2023-02-10' ELSE '2024-04-01' END, l.created_at,
  l.updated_at, l.quantity, l.is_gift_card, l.is_upsell, l.metadata, l.price_excl_tax, l.price_incl_tax,
  l.total_cost, l.unit_cost, l.currency, l.current_quantity, l.editable_quantity, l.fulfillable_quantity,
  l.original_price_excl_tax, l.original_price_incl_tax, l.original_total_discount, l.total_discount,
  coalesce(l.product_id, l.product.id), l.product_image, coalesce(l.product_title, l.product.title),
  coalesce(l.product_url, l.product.url), l.requires_shipping, coalesce(l.sku, l.stockrecord.partner_sku),
  coalesce(l.variant_id, l.stockrecord.id), l.variant_title, l.price_currency, l.price_excl_tax_excl_discounts,
  l.price_incl_tax_excl_discounts, l.product.upc, l.product.categories, l.product.images, l.stockrecord.id,
  l.stockrecord.price, l.stockrecord.price_currency, l.stockrecord.price_retail, l.stockrecord.num_in_stock,
  l.stockrecord.num_allocated, l.stockrecord.low_stock_threshold, l.report_values.currency,
  l.report_values.price_excl_tax, l.report_values.price_incl_tax, l.report_values.total_cost,
  l.report_values.total_discount, l.report_values.unit_cost
FROM (SELECT number, unnest(lines) AS l FROM docs);

INSERT INTO order_line_tax_lines SELECT
  number, line_id, i - 1, t.amount, t.currency, t.rate, t.tax_title, t.source, t.tax_id, t.report_values.amount,
  t.report_values.currency
FROM (
  SELECT number, l.id AS line_id, generate_subscripts(l.tax_lines, 1) AS i, unnest(l.tax_lines) AS t
  FROM (SELECT number, unnest(lines) AS l FROM docs)
);

INSERT INTO order_tax_lines SELECT
  number, t.id, t.amount, t.currency, t.rate, t.tax_title, t.source, t.report_values.amount, t.report_values.currency
FROM (SELECT number, unnest(tax_lines) AS t FROM docs);

INSERT INTO order_shipping_tax_lines SELECT
  number, i - 1, t.amount, t.currency, t.rate, t.tax_title, t.source, t.tax_id, t.report_values.amount,
  t.report_values.currency
FROM (SELECT number, generate_subscripts(shipping_tax_lines, 1) AS i, unnest(shipping_tax_lines) AS t FROM docs);

INSERT INTO order_transactions SELECT
  number, t.id, t.type, t.status, t.amount, t.currency, t.date_created, t.payment_method, t.is_test,
  t.payment_details.gateway.id, t.payment_details.gateway.name, t.payment_details.gateway.type,
  t.payment_details.bankcard_first_six, t.payment_details.bankcard_last_four, t.report_values.amount,
  t.report_values.currency
FROM (SELECT number, unnest(transactions) AS t FROM docs);

INSERT INTO fulfillments SELECT
  f.id, number, CASE WHEN f.line_items IS NULL THEN '2023-02-10' ELSE '2024-04-01' END, f.status,
  f.delivery_status, f.created_at, f.last_event_date, f.location_id, f.requires_shipping, f.shipping_method,
  f.tracking_code, f.tracking_link, f.tracking_carrier, f.carrier, f.date_created, f.lines, f.reference,
  f.origin_address.country, f.origin_address.line1, f.origin_address.line4
FROM (SELECT number, unnest(fulfillments) AS f FROM docs);

INSERT INTO fulfillment_line_items SELECT
  fulfillment_id, li.id, number, li.order_line_id, li.sku, li.quantity, li.fulfilled_quantity, li.currency,
  li.price_excl_tax, li.price_incl_tax
FROM (
  SELECT number, f.id AS fulfillment_id, unnest(f.line_items) AS li
  FROM (SELECT number, unnest(fulfillments) AS f FROM docs)
);

INSERT INTO fulfillment_line_item_tax_lines SELECT
  fulfillment_id, number, line_item_id, i - 1, t.amount, t.currency, t.rate, t.tax_title, t.source, t.tax_id,
  t.report_values.amount, t.report_values.currency
FROM (
  SELECT number, fulfillment_id, li.id AS line_item_id, generate_subscripts(li.tax_lines, 1) AS i,
    unnest(li.tax_lines) AS t
  FROM (
    SELECT number, f.id AS fulfillment_id, unnest(f.line_items) AS li
    FROM (SELECT number, unnest(fulfillments) AS f FROM docs)
  )
);

INSERT INTO customers SELECT
  "user".id, "user".email, "user".first_name, "user".last_name, "user".accepts_marketing, updated_at, number
FROM docs
QUALIFY row_number() OVER (PARTITION BY "user".id ORDER BY updated_at DESC, number DESC) = 1;
