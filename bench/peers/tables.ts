/** The ten tables the benchmark's documents fill, in store-sync's warehouse and in the peers' (tables.sql). */
export const TABLES = [
  'orders',
  'order_lines',
  'order_line_tax_lines',
  'order_tax_lines',
  'order_shipping_tax_lines',
  'order_transactions',
  'fulfillments',
  'fulfillment_line_items',
  'fulfillment_line_item_tax_lines',
  'customers',
] as const;
