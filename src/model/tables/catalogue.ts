import { bool, col, dbl, id, index, int, json, money, reading, text, ts } from '../columns.js';
import { MONEY_2, type TableDef } from '../types.js';

/** Products and variants (spec 2.7), from full scans of GET /products/. */

const productOwner = { table: 'products', column: 'product_id' };
const productId = (source = '$.id') => id('product_id', 'Product id.', source);
const variantId = () => id('variant_id', 'Variant id.', '^.id');

const child = (
  name: string,
  comment: string,
  key: string[],
  parent: string,
  columns: TableDef['columns'],
): TableDef => ({
  name,
  comment,
  key: ['_store', ...key],
  entity: 'product',
  parent,
  owner: productOwner,
  fullScan: true,
  columns,
});

const products: TableDef = {
  name: 'products',
  comment: 'Products, from full scans of GET /products/; rows missing from a completed scan get _deleted_at.',
  key: ['_store', 'id'],
  entity: 'product',
  unit: { key: 'id', version: 'date_updated' },
  fullScan: true,
  columns: [
    id('id', 'Product id.'),
    text('title', 'Title.'),
    text('slug', 'URL slug.'),
    text('url', 'Product page URL.'),
    text('structure', 'Product structure (open enum).'),
    bool('is_public', 'Whether it is visible in the store.'),
    bool('is_discountable', 'Whether discounts apply.'),
    bool('enable_subscription', 'Whether it can be bought as a subscription.'),
    text('interval', 'Subscription interval (open enum).'),
    col('interval_counts', 'BIGINT[]', 'Subscription interval counts offered.'),
    text('external_tax_code', 'External tax code.'),
    int('ranking', 'Ranking.'),
    dbl('rating', 'Rating.'),
    col('recommended_products', 'BIGINT[]', 'Ids of recommended products.'),
    json('metadata', 'Free-form product metadata.'),
    ts('date_created', 'When the product was created.'),
    ts('date_updated', 'When the product last changed.'),
  ],
};

const productCategories = child(
  'product_categories',
  'Categories of products.',
  ['product_id', 'id'],
  'products',
  [productId(), id('id', 'Category id.'), text('name', 'Category name.'), text('slug', 'Category slug.')],
);

const productImages = child('product_images', 'Images of products.', ['product_id', 'id'], 'products', [
  productId(),
  id('id', 'Image id.'),
  text('src', 'Image URL.'),
  text('file_name', 'File name.'),
  text('caption', 'Caption.'),
  text('attachment', 'Attachment reference.'),
  int('display_order', 'Display order.'),
]);

const productVariantAttributes = child(
  'product_variant_attributes',
  'Variant attributes a product defines (e.g. size with its values).',
  ['product_id', 'index'],
  'products',
  [
    productId(),
    index(),
    text('code', 'Attribute code.'),
    text('name', 'Attribute name.'),
    col('values', 'VARCHAR[]', 'Allowed values.'),
  ],
);

const variants = child(
  'variants',
  "Variants of products, from a product's `variants` (2023-02-10: `children`).",
  ['product_id', 'id'],
  'products',
  [
    productId('^.id'),
    id('id', 'Variant id.'),
    text('title', 'Title.'),
    text('sku', 'Stock keeping unit.'),
    text('upc', 'Universal product code.'),
    col(
      'unit_cost',
      MONEY_2,
      reading(
        "Cost of goods of one unit (what it costs the store, not a selling price), in the store's own currency (the sandbox's is USD; order lines give it converted to the order currency); the spec pattern: up to 10 integer digits, 2 decimals.",
      ),
    ),
    bool('allow_backorders', 'Whether it sells when out of stock.'),
    bool('track_stock', 'Whether stock is tracked.'),
    bool('requires_shipping', 'Whether it ships.'),
    text('inventory_availability', 'Inventory availability (open enum).'),
    text('purchase_availability', 'Purchase availability (open enum).'),
    text('images', 'Images as the API gives them for a variant (text).'),
    json('metadata', 'Free-form variant metadata.'),
    ts('date_created', 'When the variant was created.'),
    ts('date_updated', 'When the variant last changed.'),
  ],
);

const variantPrices = child(
  'variant_prices',
  'Prices of variants per currency.',
  ['product_id', 'variant_id', 'index'],
  'variants',
  [
    productId(),
    variantId(),
    index(),
    text('currency', 'Currency of the prices.'),
    money(
      'price',
      reading(
        "Selling price of one unit in currency, excluding tax, before discounts: an order line's original_price_excl_tax is this × quantity.",
      ),
    ),
    money(
      'retail',
      reading(
        'Compare-at (retail) price of one unit, excluding tax: not what is charged (1.2 × price in the sandbox).',
      ),
    ),
    money(
      'subscription',
      reading("Price of one unit when bought as a subscription, excluding tax: a subscription line's price."),
    ),
    money(
      'subscription_suggested_downsell',
      reading(
        'A suggested lower subscription price of one unit, excluding tax (0.8 × price in the sandbox).',
      ),
    ),
  ],
);

const variantStockrecords = child(
  'variant_stockrecords',
  'Stock of variants per location.',
  ['product_id', 'variant_id', 'id'],
  'variants',
  [
    productId(),
    variantId(),
    id('id', 'Stockrecord id.'),
    id('location_id', 'Location id.'),
    int('num_in_stock', 'Units in stock at the location.'),
    int('num_allocated', reading('Units at the location set aside for orders not yet shipped.')),
    int('low_stock_threshold', 'Low-stock threshold, in units.'),
  ],
);

const variantAttributeValues = child(
  'variant_attribute_values',
  'Attribute values of variants.',
  ['product_id', 'variant_id', 'index'],
  'variants',
  [
    productId(),
    variantId(),
    index(),
    text('code', 'Attribute code.'),
    text('name', 'Attribute name.'),
    text('value', 'Value.'),
  ],
);

export const catalogueTables: TableDef[] = [
  products,
  productCategories,
  productImages,
  productVariantAttributes,
  variants,
  variantPrices,
  variantStockrecords,
  variantAttributeValues,
];
