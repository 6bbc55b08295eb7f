-- The ten tables the benchmark's order documents fill, as a user would declare them for the peers of
-- bench/ingest.ts (DuckDB alone and a plain Node script): the columns the documents carry, with store-sync's
-- types (money DECIMAL(18,3), times TIMESTAMPTZ, ids BIGINT). Not store-sync's DDL: no bookkeeping columns.
CREATE TABLE orders (
  number VARCHAR, api_version VARCHAR, created_at TIMESTAMPTZ, date_placed TIMESTAMPTZ,
  updated_at TIMESTAMPTZ, status VARCHAR, payment_status VARCHAR, fulfillment_status VARCHAR, source VARCHAR,
  is_test BOOLEAN, currency VARCHAR, display_taxes VARCHAR, total_cost DECIMAL(18,3), total_discount DECIMAL(18,3),
  total_excl_tax DECIMAL(18,3), total_incl_tax DECIMAL(18,3), total_tax DECIMAL(18,3),
  total_outstanding DECIMAL(18,3), original_total_discount DECIMAL(18,3), original_total_excl_tax DECIMAL(18,3),
  original_total_incl_tax DECIMAL(18,3), original_shipping_excl_tax DECIMAL(18,3),
  original_shipping_incl_tax DECIMAL(18,3), shipping_code VARCHAR, shipping_method VARCHAR,
  shipping_excl_tax DECIMAL(18,3), shipping_incl_tax DECIMAL(18,3), shipping_tax DECIMAL(18,3),
  supports_post_purchase_upsells BOOLEAN, order_status_url VARCHAR, tags VARCHAR[], metadata JSON,
  report_currency VARCHAR, report_total_cost DECIMAL(18,3), report_total_excl_tax DECIMAL(18,3),
  report_total_incl_tax DECIMAL(18,3),
  billing_id BIGINT, billing_first_name VARCHAR, billing_last_name VARCHAR, billing_line1 VARCHAR,
  billing_line2 VARCHAR, billing_line3 VARCHAR, billing_line4 VARCHAR, billing_postcode VARCHAR,
  billing_state VARCHAR, billing_country VARCHAR, billing_phone_number VARCHAR,
  shipping_id BIGINT, shipping_first_name VARCHAR, shipping_last_name VARCHAR, shipping_line1 VARCHAR,
  shipping_line2 VARCHAR, shipping_line3 VARCHAR, shipping_line4 VARCHAR, shipping_postcode VARCHAR,
  shipping_state VARCHAR, shipping_country VARCHAR, shipping_phone_number VARCHAR, shipping_notes VARCHAR,
  user_id BIGINT, user_email VARCHAR, user_first_name VARCHAR, user_last_name VARCHAR,
  user_accepts_marketing BOOLEAN, attribution_utm_source VARCHAR, attribution_utm_medium VARCHAR,
  attribution_utm_campaign VARCHAR
);
CREATE TABLE order_lines (
  order_number VARCHAR, id BIGINT, api_version VARCHAR, created_at TIMESTAMPTZ, updated_at TIMESTAMPTZ,
  quantity BIGINT, is_gift_card BOOLEAN, is_upsell BOOLEAN, metadata JSON, price_excl_tax DECIMAL(18,3),
  price_incl_tax DECIMAL(18,3), total_cost DECIMAL(18,3), unit_cost DECIMAL(18,3), currency VARCHAR,
  current_quantity BIGINT, editable_quantity BIGINT, fulfillable_quantity BIGINT,
  original_price_excl_tax DECIMAL(18,3), original_price_incl_tax DECIMAL(18,3),
  original_total_discount DECIMAL(18,3), total_discount DECIMAL(18,3), product_id BIGINT, product_image VARCHAR,
  product_title VARCHAR, product_url VARCHAR, requires_shipping BOOLEAN, sku VARCHAR, variant_id BIGINT,
  variant_title VARCHAR, price_currency VARCHAR, price_excl_tax_excl_discounts DECIMAL(18,3),
  price_incl_tax_excl_discounts DECIMAL(18,3), product_upc VARCHAR, product_categories JSON,
  product_images JSON, stockrecord_id BIGINT, stockrecord_price DECIMAL(18,3),
  stockrecord_price_currency VARCHAR, stockrecord_price_retail DECIMAL(18,3), stockrecord_num_in_stock BIGINT,
  stockrecord_num_allocated BIGINT, stockrecord_low_stock_threshold BIGINT, report_currency VARCHAR,
  report_price_excl_tax DECIMAL(18,3), report_price_incl_tax DECIMAL(18,3), report_total_cost DECIMAL(18,3),
  report_total_discount DECIMAL(18,3), report_unit_cost DECIMAL(18,3)
);
CREATE TABLE order_line_tax_lines (
  order_number VARCHAR, line_id BIGINT, "index" BIGINT, amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE,
  tax_title VARCHAR, source VARCHAR, tax_id BIGINT, report_amount DECIMAL(18,3), report_currency VARCHAR
);
CREATE TABLE order_tax_lines (
  order_number VARCHAR, id BIGINT, amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, tax_title VARCHAR,
  source VARCHAR, report_amount DECIMAL(18,3), report_currency VARCHAR
);
CREATE TABLE order_shipping_tax_lines (
  order_number VARCHAR, "index" BIGINT, amount DECIMAL(18,3), currency VARCHAR, rate DOUBLE, tax_title VARCHAR,
  source VARCHAR, tax_id BIGINT, report_amount DECIMAL(18,3), report_currency VARCHAR
);
CREATE TABLE order_transactions (
  order_number VARCHAR, id BIGINT, type VARCHAR, status VARCHAR, amount DECIMAL(18,3), currency VARCHAR,
  date_created TIMESTAMPTZ, payment_method VARCHAR, is_test BOOLEAN, gateway_id BIGINT, gateway_name VARCHAR,
  gateway_type VARCHAR, bankcard_first_six VARCHAR, bankcard_last_four VARCHAR, report_amount DECIMAL(18,3),
  report_currency VARCHAR
);
CREATE TABLE fulfillments (
  id BIGINT, order_number VARCHAR, api_version VARCHAR, status VARCHAR, delivery_status VARCHAR,
  created_at TIMESTAMPTZ, last_event_date TIMESTAMPTZ, location_id BIGINT, requires_shipping BOOLEAN,
  shipping_method VARCHAR, tracking_code VARCHAR, tracking_link VARCHAR, tracking_carrier VARCHAR,
  carrier VARCHAR, date_created TIMESTAMPTZ, lines VARCHAR, reference VARCHAR, origin_country VARCHAR,
  origin_line1 VARCHAR, origin_line4 VARCHAR
);
CREATE TABLE fulfillment_line_items (
  fulfillment_id BIGINT, id BIGINT, order_number VARCHAR, order_line_id BIGINT, sku VARCHAR, quantity BIGINT,
  fulfilled_quantity DECIMAL(18,3), currency VARCHAR, price_excl_tax DECIMAL(18,3), price_incl_tax DECIMAL(18,3)
);
CREATE TABLE fulfillment_line_item_tax_lines (
  fulfillment_id BIGINT, order_number VARCHAR, line_item_id BIGINT, "index" BIGINT, amount DECIMAL(18,3),
  currency VARCHAR, rate DOUBLE, tax_title VARCHAR, source VARCHAR, tax_id BIGINT, report_amount DECIMAL(18,3),
  report_currency VARCHAR
);
CREATE TABLE customers (
  id BIGINT, email VARCHAR, first_name VARCHAR, last_name VARCHAR, accepts_marketing BOOLEAN,
  seen_at TIMESTAMPTZ, seen_in_order VARCHAR
);
