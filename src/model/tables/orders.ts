import {
  attributionFields,
  billingAddressFields,
  bool,
  col,
  embeddedProductDetailFields,
  embeddedStockrecordFields,
  flatten,
  id,
  index,
  int,
  json,
  money,
  onlyShape,
  reading,
  reportCurrency,
  shippingAddressFields,
  taxLineFields,
  text,
  transactionFields,
  ts,
  unitPriceInclTax,
  userFields,
  voucherDiscountFields,
} from '../columns.js';
import { API_2023, API_2024, type TableDef } from '../types.js';

/** The orders family (spec 2.2): both shapes land here, told apart by `api_version`. */

const orderNumber = (source = '$.number') => text('order_number', 'Number of the order.', source);
const owner = { table: 'orders', column: 'order_number' };

/**
 * What each money column of an order holds, once: the order's own column and its `report_` twin share it. The
 * spec names these fields without saying what they add up; the sandbox's arithmetic (src/sandbox/model/
 * order-state.ts `totalsOf`, order-render.ts) is the reading given, proved by test/warehouse/money-meanings.test.ts.
 */
const ORDER_MONEY: Record<string, string> = {
  total_cost: reading(
    "Cost of goods of the order: the sum of its lines' total_cost (unit_cost × quantity). What the goods cost the store, not revenue.",
  ),
  total_discount: reading(
    "Discounts of the order, excluding tax: the sum of its lines' total_discount, equal to the sum of its order_discounts amounts (2024-04-01 only).",
  ),
  total_excl_tax: reading(
    "Order total excluding tax, after discounts: the sum of the lines' price_excl_tax (line totals) plus shipping_excl_tax.",
  ),
  total_incl_tax: reading(
    'Order total including tax, after discounts: total_excl_tax + total_tax, what the customer is charged.',
  ),
  total_tax: reading(
    'Tax of the order: the line tax lines plus the shipping tax lines (equal to the sum of order_tax_lines).',
  ),
  total_outstanding: reading(
    'Still to be paid, including tax: total_incl_tax minus the amount captured, never below 0 (2024-04-01 only).',
  ),
  original_total_discount: reading(
    'Discounts of the order as first placed, excluding tax; equal to total_discount in the sandbox (2024-04-01 only).',
  ),
  original_total_excl_tax: reading(
    "Order total excluding tax, before discounts: the lines' totals before discounts (original_price_excl_tax; 2023-02-10: price_excl_tax_excl_discounts) plus original_shipping_excl_tax.",
  ),
  original_total_incl_tax: reading(
    'Order total including tax, before discounts: original_total_excl_tax plus the tax the undiscounted lines would bear plus the shipping tax.',
  ),
  original_shipping_excl_tax: reading(
    'Shipping excluding tax, before shipping discounts; equal to shipping_excl_tax in the sandbox.',
  ),
  original_shipping_incl_tax: reading(
    'Shipping including tax, before shipping discounts; equal to shipping_incl_tax in the sandbox.',
  ),
  shipping_excl_tax: reading('Shipping charged, excluding tax.'),
  shipping_incl_tax: reading('Shipping charged, including tax: shipping_excl_tax + shipping_tax.'),
  shipping_tax: reading('Tax on shipping: the sum of order_shipping_tax_lines.'),
};

/** What each money column of an order line holds (both shapes; the `report_` twins share it). */
const LINE_MONEY: Record<string, string> = {
  price_excl_tax: reading(
    'Line total excluding tax, after discounts: unit price × quantity − total_discount. Not a unit price.',
  ),
  price_incl_tax: reading(
    "Line total including tax, after discounts: price_excl_tax plus the line's tax lines (39.98 for two units at 19.99). Not a unit price: see unit_price_incl_tax.",
  ),
  original_price_excl_tax: reading(
    'Line total excluding tax, before discounts: unit price × quantity. Not a unit price (2024-04-01 only).',
  ),
  original_price_incl_tax: reading(
    'Line total including tax, before discounts. Not a unit price (2024-04-01 only).',
  ),
  original_total_discount: reading(
    "The line's discount as first placed, excluding tax; equal to total_discount in the sandbox (2024-04-01 only).",
  ),
  total_discount: reading(
    "The line's share of the order's voucher and offer discounts, excluding tax: original_price_excl_tax − price_excl_tax (2024-04-01 only).",
  ),
  total_cost: reading(
    "Cost of goods of the line: unit_cost × quantity. What the goods cost the store, not revenue: the line's revenue is price_excl_tax / price_incl_tax.",
  ),
  unit_cost: reading('Cost of goods of one unit (what it costs the store), not a selling price.'),
  price_excl_tax_excl_discounts: reading(
    'Line total excluding tax, before discounts: unit price × quantity. Not a unit price (2023-02-10 only).',
  ),
  price_incl_tax_excl_discounts: reading(
    'Line total including tax, before discounts. Not a unit price (2023-02-10 only).',
  ),
};

const moneyOf = (meanings: Record<string, string>) => (names: string[]) =>
  names.map((n) => money(n, meanings[n]!));
const orderMoney = moneyOf(ORDER_MONEY);
const lineMoney = moneyOf(LINE_MONEY);
/** The `report_` twins: the same meaning, converted to the reporting currency. */
const reportMoney = orderMoney;
const reportLineMoney = lineMoney;

const orders: TableDef = {
  name: 'orders',
  comment: 'One row per order, from order documents of either API shape; the newest document wins.',
  key: ['_store', 'number'],
  entity: 'order',
  // Both shapes describe the same state at an equal updated_at: the 2024-04-01 one wins whichever arrived last.
  unit: { key: 'number', version: 'updated_at', ties: ['api_version'] },
  columns: [
    text('number', 'Order number (the key).'),
    text(
      'api_version',
      'Shape of the document this row came from: 2023-02-10 or 2024-04-01.',
      '@api_version',
    ),
    ts('created_at', 'When the order was created.'),
    ts('date_placed', 'When the order was placed.'),
    ts('updated_at', 'When the order last changed; decides which document is newest.'),
    text('status', 'Order status (open enum).'),
    text('payment_status', 'Payment status (open enum).'),
    text('fulfillment_status', 'Fulfillment status.'),
    text('subscription_lifecycle', 'Subscription lifecycle (open enum).'),
    text('source', 'Sales channel the order came from.'),
    bool('is_test', 'Whether it is a test order.'),
    text('currency', 'Order currency.'),
    text('display_taxes', 'How taxes are displayed.'),
    ...orderMoney(['total_cost']),
    ...onlyShape(API_2024, orderMoney(['total_discount'])),
    ...orderMoney(['total_excl_tax', 'total_incl_tax', 'total_tax']),
    ...onlyShape(API_2024, orderMoney(['total_outstanding', 'original_total_discount'])),
    ...orderMoney([
      'original_total_excl_tax',
      'original_total_incl_tax',
      'original_shipping_excl_tax',
      'original_shipping_incl_tax',
    ]),
    text('shipping_code', 'Shipping rate code.'),
    text('shipping_method', 'Shipping method name.'),
    ...orderMoney(['shipping_excl_tax', 'shipping_incl_tax', 'shipping_tax']),
    bool('supports_post_purchase_upsells', 'Whether post-purchase upsells are offered.'),
    text('order_status_url', 'Customer-facing order status page.'),
    col('tags', 'VARCHAR[]', 'Tags.'),
    json('metadata', 'Free-form order metadata.'),
    ...flatten('report_', 'report_values', 'In the reporting currency', [
      reportCurrency(),
      ...reportMoney([
        'total_cost',
        'total_excl_tax',
        'total_incl_tax',
        'original_total_excl_tax',
        'original_total_incl_tax',
        'shipping_excl_tax',
        'shipping_incl_tax',
        'original_shipping_excl_tax',
        'original_shipping_incl_tax',
      ]),
      ...onlyShape(API_2024, reportMoney(['total_discount', 'original_total_discount'])),
    ]),
    ...flatten('billing_', 'billing_address', 'Billing address', billingAddressFields()),
    ...flatten('shipping_', 'shipping_address', 'Shipping address', shippingAddressFields()),
    ...flatten('user_', 'user', 'Customer', userFields()),
    ...flatten('attribution_', 'attribution', 'Attribution', attributionFields()),
  ],
};

const orderLines: TableDef = {
  name: 'order_lines',
  comment:
    'Order lines of both shapes. A 2023-02-10 line fills product_id, product_title and product_url from its ' +
    'embedded product and sku from its stockrecord; columns a shape lacks are NULL.',
  key: ['_store', 'order_number', 'id'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    id('id', 'Line id.'),
    text('api_version', 'Shape of the order document.', '@api_version'),
    ts('created_at', 'When the line was created.'),
    ts('updated_at', 'When the line last changed.'),
    id('product_id', 'Product id (2023-02-10: product.id).', {
      [API_2023]: 'product.id',
      default: 'product_id',
    }),
    text('product_title', 'Product title (2023-02-10: product.title).', {
      [API_2023]: 'product.title',
      default: 'product_title',
    }),
    text('product_url', 'Product page URL (2023-02-10: product.url).', {
      [API_2023]: 'product.url',
      default: 'product_url',
    }),
    text('sku', 'Stock keeping unit (2023-02-10: stockrecord.partner_sku).', {
      [API_2023]: 'stockrecord.partner_sku',
      default: 'sku',
    }),
    ...onlyShape(API_2024, [
      id('variant_id', 'Variant id (2024-04-01 only).'),
      text('variant_title', 'Variant title (2024-04-01 only).'),
      text('product_image', 'Product image URL (2024-04-01 only).'),
      text('currency', 'Line currency (2024-04-01 only).'),
      int(
        'current_quantity',
        reading('Units still on the order: quantity minus the units refunded (2024-04-01 only).'),
      ),
      int(
        'editable_quantity',
        reading('Units that can still be edited: current_quantity minus units fulfilled (2024-04-01 only).'),
      ),
      int(
        'fulfillable_quantity',
        reading('Units still to fulfil: current_quantity minus units fulfilled (2024-04-01 only).'),
      ),
      bool('requires_shipping', 'Whether the line ships (2024-04-01 only).'),
      ...lineMoney([
        'original_price_excl_tax',
        'original_price_incl_tax',
        'original_total_discount',
        'total_discount',
      ]),
    ]),
    int(
      'quantity',
      reading('Units ordered: the line totals (price_*, total_cost) are for this many units, refunds aside.'),
    ),
    bool('is_gift_card', 'Whether the line is a gift card.'),
    bool('is_upsell', 'Whether the line was an upsell.'),
    ...lineMoney(['price_excl_tax', 'price_incl_tax']),
    unitPriceInclTax(),
    ...lineMoney(['total_cost', 'unit_cost']),
    json('metadata', 'Free-form line metadata.'),
    ...onlyShape(API_2023, [
      text('price_currency', 'Currency of the prices (2023-02-10 only).'),
      ...lineMoney(['price_excl_tax_excl_discounts', 'price_incl_tax_excl_discounts']),
      ...embeddedProductDetailFields(),
      ...embeddedStockrecordFields(),
    ]),
    ...onlyShape(
      API_2024,
      flatten('report_', 'report_values', 'In the reporting currency (2024-04-01 only)', [
        reportCurrency(),
        ...reportLineMoney([
          'price_excl_tax',
          'price_incl_tax',
          'original_price_excl_tax',
          'original_price_incl_tax',
          'original_total_discount',
          'total_cost',
          'total_discount',
          'unit_cost',
        ]),
      ]),
    ),
  ],
};

const orderLineTaxLines: TableDef = {
  name: 'order_line_tax_lines',
  comment: 'Tax lines of order lines.',
  key: ['_store', 'order_number', 'line_id', 'index'],
  entity: 'order',
  parent: 'order_lines',
  owner,
  columns: [
    orderNumber(),
    id('line_id', 'Order line id.', '^.id'),
    index(),
    ...taxLineFields(
      "This tax on the whole line: on its price_excl_tax (all units, after discounts); the line's tax lines sum to price_incl_tax − price_excl_tax.",
    ),
  ],
};

const orderTaxLines: TableDef = {
  name: 'order_tax_lines',
  comment: 'Order-level tax lines (field tax_lines of an order).',
  key: ['_store', 'order_number', 'id'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    id('id', 'Tax line id.'),
    ...taxLineFields(
      "This tax over the whole order: its line tax lines plus its shipping tax lines; an order's tax lines sum to total_tax.",
      false,
    ),
  ],
};

const orderShippingTaxLines: TableDef = {
  name: 'order_shipping_tax_lines',
  comment: 'Tax lines on shipping (field shipping_tax_lines of an order).',
  key: ['_store', 'order_number', 'index'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    index(),
    ...taxLineFields(
      "This tax on the order's shipping_excl_tax; the shipping tax lines sum to shipping_tax.",
    ),
  ],
};

const orderDiscounts: TableDef = {
  name: 'order_discounts',
  comment: 'Voucher and offer discounts of orders; `kind` says which list the row came from.',
  key: ['_store', 'order_number', 'kind', 'index'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    text('kind', 'voucher (from voucher_discounts) or offer (from offer_discounts).', '=voucher'),
    index('Position in its list (0-based).'),
    ...voucherDiscountFields(),
  ],
};

const orderTransactions: TableDef = {
  name: 'order_transactions',
  comment: 'Payment transactions of orders.',
  key: ['_store', 'order_number', 'id'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [orderNumber(), ...transactionFields()],
};

/** What a refund's amounts hold (the sandbox's order-build.ts `addRefund`; the `report_` twins share it). */
const REFUND_MONEY: Record<string, string> = {
  total_refund_amount: reading(
    "Amount given back, including tax: the refunded lines' amount_incl_tax plus the adjustments' amount_incl_tax (refunded shipping); the refund transaction's amount.",
  ),
  total_return_excl_tax: reading(
    "Value of the refunded line items excluding tax, after discounts: the sum of the refund lines' amount_excl_tax (adjustments not included).",
  ),
  total_return_incl_tax: reading(
    "Value of the refunded line items including tax, after discounts: the sum of the refund lines' amount_incl_tax (adjustments not included).",
  ),
};
const refundMoney = moneyOf(REFUND_MONEY);

const orderRefunds: TableDef = {
  name: 'order_refunds',
  comment: 'Refunds of orders.',
  key: ['_store', 'order_number', 'id'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    id('id', 'Refund id.'),
    ts('created_at', 'When the refund was created.'),
    text('note', 'Refund note.'),
    id('user_id', 'Id of the staff user who refunded.'),
    ...refundMoney(['total_refund_amount', 'total_return_excl_tax', 'total_return_incl_tax']),
    ...flatten('report_', 'report_values', 'In the reporting currency', [
      reportCurrency(),
      ...refundMoney(['total_refund_amount', 'total_return_excl_tax', 'total_return_incl_tax']),
    ]),
  ],
};

const refundChild = (name: string, comment: string, columns: TableDef['columns']): TableDef => ({
  name,
  comment,
  key: ['_store', 'order_number', 'refund_id', 'id'],
  entity: 'order',
  parent: 'order_refunds',
  owner,
  columns: [orderNumber(), id('refund_id', 'Refund id.', '^.id'), ...columns],
});

/** A refund line's or adjustment's two amounts, with their `report_` twins. */
const refundAmounts = (excl: string, incl: string) => {
  const amounts = () => [money('amount_excl_tax', reading(excl)), money('amount_incl_tax', reading(incl))];
  return [
    ...amounts(),
    ...flatten('report_', 'report_values', 'In the reporting currency', [...amounts(), reportCurrency()]),
  ];
};

const orderRefundLines = refundChild('order_refund_lines', 'Refunded line items.', [
  id('id', 'Refund line id.'),
  id('line_item_id', 'Order line id refunded.'),
  id('location_id', 'Location the items were restocked at.'),
  int('quantity', 'Units of the order line refunded.'),
  text('restock_type', 'Restock type (open enum).'),
  ...refundAmounts(
    "Refunded value of those units excluding tax, after discounts: their share of the order line's price_excl_tax (a total for the units, not a unit price).",
    'Refunded value of those units including tax, after discounts: amount_excl_tax plus its tax.',
  ),
]);

const orderRefundAdjustments = refundChild('order_refund_adjustments', 'Refund adjustments.', [
  id('id', 'Adjustment id.'),
  text('type', 'Adjustment type (open enum).'),
  ...refundAmounts(
    'Amount refunded beyond the line items, excluding tax (a shipping_refund gives back shipping_excl_tax).',
    'Amount refunded beyond the line items, including tax (a shipping_refund gives back shipping_incl_tax).',
  ),
]);

const orderRefundTransactions = refundChild(
  'order_refund_transactions',
  'Transactions of refunds (field transactions of a refund).',
  transactionFields(),
);

const orderSubscriptions: TableDef = {
  name: 'order_subscriptions',
  comment: 'Subscriptions an order belongs to, with its billing cycle.',
  key: ['_store', 'order_number', 'index'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [
    orderNumber(),
    index(),
    id('subscription_id', 'Subscription id.', 'id'),
    int('billing_cycle', 'Billing cycle of the subscription this order paid for.'),
  ],
};

export const orderTables: TableDef[] = [
  orders,
  orderLines,
  orderLineTaxLines,
  orderTaxLines,
  orderShippingTaxLines,
  orderDiscounts,
  orderTransactions,
  orderRefunds,
  orderRefundLines,
  orderRefundAdjustments,
  orderRefundTransactions,
  orderSubscriptions,
];
