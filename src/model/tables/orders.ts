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
const reportMoney = (names: string[]) => names.map((n) => money(n, `${n.replaceAll('_', ' ')}.`));

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
    money('total_cost', 'Total cost.'),
    money('total_discount', 'Total discount (2024-04-01 only).', { [API_2024]: 'total_discount' }),
    money('total_excl_tax', 'Total excluding tax.'),
    money('total_incl_tax', 'Total including tax.'),
    money('total_tax', 'Total tax.'),
    money('total_outstanding', 'Amount still to be paid (2024-04-01 only).', {
      [API_2024]: 'total_outstanding',
    }),
    money('original_total_discount', 'Original total discount (2024-04-01 only).', {
      [API_2024]: 'original_total_discount',
    }),
    money('original_total_excl_tax', 'Original total excluding tax.'),
    money('original_total_incl_tax', 'Original total including tax.'),
    money('original_shipping_excl_tax', 'Original shipping excluding tax.'),
    money('original_shipping_incl_tax', 'Original shipping including tax.'),
    text('shipping_code', 'Shipping rate code.'),
    text('shipping_method', 'Shipping method name.'),
    money('shipping_excl_tax', 'Shipping excluding tax.'),
    money('shipping_incl_tax', 'Shipping including tax.'),
    money('shipping_tax', 'Tax on shipping.'),
    bool('supports_post_purchase_upsells', 'Whether post-purchase upsells are offered.'),
    text('order_status_url', 'Customer-facing order status page.'),
    col('tags', 'VARCHAR[]', 'Tags.'),
    json('metadata', 'Free-form order metadata.'),
    ...flatten('report_', 'report_values', 'In the reporting currency', [
      text('currency', 'Reporting currency.'),
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
      int('current_quantity', 'Quantity after edits and removals (2024-04-01 only).'),
      int('editable_quantity', 'Quantity that can still be edited (2024-04-01 only).'),
      int('fulfillable_quantity', 'Quantity that can still be fulfilled (2024-04-01 only).'),
      bool('requires_shipping', 'Whether the line ships (2024-04-01 only).'),
      money('original_price_excl_tax', 'Original unit price excluding tax (2024-04-01 only).'),
      money('original_price_incl_tax', 'Original unit price including tax (2024-04-01 only).'),
      money('original_total_discount', 'Original total discount (2024-04-01 only).'),
      money('total_discount', 'Total discount (2024-04-01 only).'),
    ]),
    int('quantity', 'Quantity ordered.'),
    bool('is_gift_card', 'Whether the line is a gift card.'),
    bool('is_upsell', 'Whether the line was an upsell.'),
    money('price_excl_tax', 'Unit price excluding tax.'),
    money('price_incl_tax', 'Unit price including tax.'),
    unitPriceInclTax(),
    money('total_cost', 'Line total.'),
    money('unit_cost', 'Unit cost.'),
    json('metadata', 'Free-form line metadata.'),
    ...onlyShape(API_2023, [
      text('price_currency', 'Currency of the prices (2023-02-10 only).'),
      money('price_excl_tax_excl_discounts', 'Unit price excluding tax and discounts (2023-02-10 only).'),
      money(
        'price_incl_tax_excl_discounts',
        'Unit price including tax, excluding discounts (2023-02-10 only).',
      ),
      ...embeddedProductDetailFields(),
      ...embeddedStockrecordFields(),
    ]),
    ...onlyShape(
      API_2024,
      flatten('report_', 'report_values', 'In the reporting currency (2024-04-01 only)', [
        text('currency', 'Reporting currency.'),
        ...reportMoney([
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
  columns: [orderNumber(), id('line_id', 'Order line id.', '^.id'), index(), ...taxLineFields()],
};

const orderTaxLines: TableDef = {
  name: 'order_tax_lines',
  comment: 'Order-level tax lines (field tax_lines of an order).',
  key: ['_store', 'order_number', 'id'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [orderNumber(), id('id', 'Tax line id.'), ...taxLineFields(false)],
};

const orderShippingTaxLines: TableDef = {
  name: 'order_shipping_tax_lines',
  comment: 'Tax lines on shipping (field shipping_tax_lines of an order).',
  key: ['_store', 'order_number', 'index'],
  entity: 'order',
  parent: 'orders',
  owner,
  columns: [orderNumber(), index(), ...taxLineFields()],
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
    money('total_refund_amount', 'Total refunded.'),
    money('total_return_excl_tax', 'Value of returned items excluding tax.'),
    money('total_return_incl_tax', 'Value of returned items including tax.'),
    ...flatten('report_', 'report_values', 'In the reporting currency', [
      text('currency', 'Reporting currency.'),
      ...reportMoney(['total_refund_amount', 'total_return_excl_tax', 'total_return_incl_tax']),
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

const refundAmounts = () => [
  money('amount_excl_tax', 'Amount excluding tax.'),
  money('amount_incl_tax', 'Amount including tax.'),
  ...flatten('report_', 'report_values', 'In the reporting currency', [
    ...reportMoney(['amount_excl_tax', 'amount_incl_tax']),
    text('currency', 'Reporting currency.'),
  ]),
];

const orderRefundLines = refundChild('order_refund_lines', 'Refunded line items.', [
  id('id', 'Refund line id.'),
  id('line_item_id', 'Order line id refunded.'),
  id('location_id', 'Location the items were restocked at.'),
  int('quantity', 'Quantity refunded.'),
  text('restock_type', 'Restock type (open enum).'),
  ...refundAmounts(),
]);

const orderRefundAdjustments = refundChild('order_refund_adjustments', 'Refund adjustments.', [
  id('id', 'Adjustment id.'),
  text('type', 'Adjustment type (open enum).'),
  ...refundAmounts(),
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
