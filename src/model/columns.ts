import { type ColumnDef, type ColumnType, MONEY, type Source } from './types.js';

/** Small builders for the registry: each spec object's fields are written once and reused where it nests. */

export const col = (name: string, type: ColumnType, comment: string, source: Source = name): ColumnDef => ({
  name,
  type,
  comment,
  source,
});

export const text = (name: string, comment: string, source?: Source) => col(name, 'VARCHAR', comment, source);
export const id = (name: string, comment: string, source?: Source) => col(name, 'BIGINT', comment, source);
export const int = id;
export const money = (name: string, comment: string, source?: Source) => col(name, MONEY, comment, source);
export const ts = (name: string, comment: string, source?: Source) =>
  col(name, 'TIMESTAMPTZ', comment, source);
export const bool = (name: string, comment: string, source?: Source) => col(name, 'BOOLEAN', comment, source);
export const dbl = (name: string, comment: string, source?: Source) => col(name, 'DOUBLE', comment, source);
export const json = (name: string, comment: string, source?: Source) => col(name, 'JSON', comment, source);

/**
 * A column meaning the spec does not state (it names money fields without saying what they add up), read from
 * the sandbox's arithmetic (src/sandbox/model/order-state.ts, order-render.ts, carts.ts,
 * fulfillment-order-records.ts): the comment says so, so an analyst knows what to check on a real store.
 */
export const reading = (meaning: string): string =>
  `${meaning} The sandbox's reading of the spec: verify on your store.`;

/** `report_currency`: the currency of a `report_values` object, and why its amounts need not add up exactly. */
export const reportCurrency = (): ColumnDef =>
  text(
    'currency',
    'Reporting currency. Each report_ amount is converted on its own and rounded, so a sum of them can differ from the matching report_ total by rounding.',
  );

/** The row's position in its source array. */
export const index = (comment = 'Position of the item in its source array (0-based).') =>
  col('index', 'BIGINT', comment, '#');

/**
 * The unit price including tax, where the document gives only the line's total: the total divided by the
 * quantity, exactly (normalize/derive.ts), else NULL.
 */
export const unitPriceInclTax = (): ColumnDef => ({
  ...col(
    'unit_price_incl_tax',
    MONEY,
    'Unit price including tax, after discounts: price_incl_tax (the line total) divided by quantity, computed by store-sync (19.990 for a line of two at 39.98). NULL when either is NULL, the quantity is 0, or the division is not exact to 3 decimals (10.00 over 3 units): multiply by quantity only where it is not NULL, and sum price_incl_tax for revenue.',
    '@derived',
  ),
  derive: { divide: ['price_incl_tax', 'quantity'] },
});

/** Bookkeeping columns carry no source: the loader fills them. */
export const meta = (name: string, type: ColumnType, comment: string): ColumnDef => ({ name, type, comment });

function prefixSource(source: Source | undefined, field: string): Source | undefined {
  if (source === undefined) return undefined;
  const one = (s: string) =>
    s
      .split('|')
      .map((alt) => `${field}.${alt}`)
      .join('|');
  if (typeof source === 'string') return one(source);
  const out: Record<string, string> = {};
  for (const [shape, s] of Object.entries(source)) if (s !== undefined) out[shape] = one(s);
  return out;
}

/** Flattens a nested single object into prefixed columns (`billing_address.country` → `billing_country`). */
export function flatten(prefix: string, field: string, label: string, fields: ColumnDef[]): ColumnDef[] {
  return fields.map((f) => ({
    name: `${prefix}${f.name}`,
    type: f.type,
    comment: `${label}: ${f.comment.charAt(0).toLowerCase()}${f.comment.slice(1)}`,
    source: prefixSource(f.source, field),
  }));
}

/** Restricts columns to one order shape: the other shape leaves them NULL. */
export function onlyShape(shape: string, fields: ColumnDef[]): ColumnDef[] {
  return fields.map((f) => ({
    ...f,
    source: typeof f.source === 'string' ? { [shape]: f.source } : f.source,
  }));
}

// Spec 2.1 shared objects.

export const locationAddressFields = (): ColumnDef[] => [
  text('country', 'Country.'),
  text('line1', 'Address line 1.'),
  text('line2', 'Address line 2.'),
  text('line3', 'Address line 3.'),
  text('line4', 'Address line 4 (city).'),
  text('phone_number', 'Phone number.'),
  text('postcode', 'Postcode.'),
  text('state', 'State or region.'),
];

export const billingAddressFields = (): ColumnDef[] => [
  ...locationAddressFields(),
  text('first_name', 'First name.'),
  text('last_name', 'Last name.'),
  id('id', 'Address id.'),
];

export const shippingAddressFields = (): ColumnDef[] => [
  ...billingAddressFields(),
  text('notes', 'Delivery notes.'),
];

export const userFields = (): ColumnDef[] => [
  id('id', 'Customer id.'),
  text('email', 'Email address.'),
  text('first_name', 'First name.'),
  text('last_name', 'Last name.'),
  text('phone_number', 'Phone number.'),
  bool('accepts_marketing', 'Whether the customer accepts marketing.'),
  text('language', 'Preferred language.'),
  text('ip', 'IP address the customer used.'),
  text('user_agent', 'Browser user agent the customer used.'),
];

export const attributionFields = (): ColumnDef[] => [
  text('utm_source', 'UTM source.'),
  text('utm_medium', 'UTM medium.'),
  text('utm_campaign', 'UTM campaign.'),
  text('utm_content', 'UTM content.'),
  text('utm_term', 'UTM term.'),
  text('funnel', 'Funnel.'),
  text('affiliate', 'Affiliate.'),
  text('subaffiliate1', 'Sub-affiliate 1.'),
  text('subaffiliate2', 'Sub-affiliate 2.'),
  text('subaffiliate3', 'Sub-affiliate 3.'),
  text('subaffiliate4', 'Sub-affiliate 4.'),
  text('subaffiliate5', 'Sub-affiliate 5.'),
  text('gclid', 'Google click id.'),
  json('metadata', 'Free-form attribution metadata.'),
  ...flatten('agent_', 'agent', 'Agent', [
    id('id', 'Agent id.'),
    text('email', 'Agent email.'),
    text('first_name', 'Agent first name.'),
    text('last_name', 'Agent last name.'),
  ]),
];

/**
 * Tax line on lines, fulfillment line items and shipping (2.1); order-level ones add `id`, drop `tax_id`.
 * `amount` says what the tax was charged on, which differs by where the tax line sits.
 */
export const taxLineFields = (amount: string, withTaxId = true): ColumnDef[] => [
  money('amount', reading(amount)),
  text('currency', 'Currency of the amount.'),
  dbl('rate', 'Tax rate (0.19 = 19%).'),
  text('tax_title', 'Name of the tax.'),
  text('source', 'Where the tax was computed.'),
  ...(withTaxId ? [id('tax_id', 'Id of the tax.')] : []),
  ...flatten('report_', 'report_values', 'In the reporting currency', [
    money('amount', reading(amount)),
    reportCurrency(),
  ]),
];

/** A voucher or offer discount (2.1); `amount` says over what it is spread. */
export const voucherDiscountFields = (
  amount = "Discount for the whole order, excluding tax, spread over the discounted lines' total_discount (their sum is orders.total_discount).",
): ColumnDef[] => [
  money('amount', reading(amount)),
  text('name', 'Discount name.'),
  text('description', 'Discount description.'),
  ...flatten('voucher_', 'voucher', 'Voucher', [
    text('code', 'Voucher code.'),
    text('name', 'Voucher name.'),
    ts('start_datetime', 'Start of validity.'),
    ts('end_datetime', 'End of validity.'),
  ]),
];

export const transactionFields = (): ColumnDef[] => [
  id('id', 'Transaction id.'),
  id('parent_id', 'Id of the transaction this one follows (e.g. the sale a refund reverses).'),
  text('type', 'Transaction type (open enum).'),
  text('status', 'Transaction status (open enum).'),
  money(
    'amount',
    reading(
      "Amount moved, including tax, always positive: for a sale, authorization or capture what was charged (the order's total_incl_tax, or part of it), for a refund what was given back (the refund's total_refund_amount).",
    ),
  ),
  text('currency', 'Currency.'),
  ts('date_created', 'When the transaction was created.'),
  text('payment_method', 'Payment method.'),
  text('auth_code', 'Authorization code.'),
  text('external_id', 'Id at the payment provider.'),
  text('network_transaction_id', 'Card network transaction id.'),
  int('response_code', 'Gateway response code.'),
  text('statement_descriptor', 'Text on the customer statement.'),
  bool('is_disputed', 'Whether the transaction is disputed.'),
  bool('is_external', 'Whether it was processed outside the platform.'),
  bool('is_initial_retry', 'Whether it is the first retry of a failed payment.'),
  bool('is_test', 'Whether it is a test transaction.'),
  json('payment_details', 'Payment details as received (free-form object).'),
  ...flatten('gateway_', 'payment_details.gateway', 'Payment gateway', [
    id('id', 'Gateway id.'),
    text('name', 'Gateway name.'),
    text('type', 'Gateway type.'),
  ]),
  text('bankcard_first_six', 'First six digits of the card.', 'payment_details.bankcard_first_six'),
  text('bankcard_last_four', 'Last four digits of the card.', 'payment_details.bankcard_last_four'),
  ...flatten('report_', 'report_values', 'In the reporting currency', [
    money('amount', reading('Amount moved, including tax, always positive.')),
    reportCurrency(),
  ]),
];

/** The product object embedded in 2023-02-10 order and cart lines and in subscription lines. */
export const embeddedProductFields = (): ColumnDef[] =>
  flatten('product_', 'product', 'Embedded product', [
    id('id', 'Product id.'),
    text('title', 'Product title.'),
    text('upc', 'Universal product code.'),
    text('url', 'Product page URL.'),
    json('categories', 'Categories as received (the catalogue tables hold them normalized).'),
    json('images', 'Images as received (the catalogue tables hold them normalized).'),
  ]);

/**
 * The embedded product's fields a line has no column of its own for: order and cart lines hold product_id,
 * product_title and product_url in columns both shapes fill (a 2024-04-01 line carries them as fields).
 */
export const embeddedProductDetailFields = (): ColumnDef[] =>
  embeddedProductFields().filter((c) => !['product_id', 'product_title', 'product_url'].includes(c.name));

/** The stockrecord embedded in 2023-02-10 order and cart lines and subscription lines (`partner_sku` becomes `sku`). */
export const embeddedStockrecordFields = (): ColumnDef[] =>
  flatten('stockrecord_', 'stockrecord', 'Embedded stockrecord', [
    id('id', 'Stockrecord id.'),
    money(
      'price',
      reading(
        "The variant's list price of one unit in price_currency, excluding tax, before discounts: not necessarily what this line charged (a subscription is charged its subscription price).",
      ),
    ),
    text('price_currency', 'Currency of the price.'),
    money('price_retail', reading('Compare-at (retail) price of one unit, excluding tax.')),
    int('num_in_stock', "Units in stock at the stockrecord's location."),
    int('num_allocated', reading('Units set aside for orders not yet shipped.')),
    int('low_stock_threshold', 'Low-stock threshold, in units.'),
  ]);
