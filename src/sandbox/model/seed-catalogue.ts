import type { Category, Image, Product, Variant } from '../../../schemas/index.js';
import { CURRENCY_CODES, formatMinor, storePrice } from './money.js';
import { type Rng, rngFor, sampleIndexes } from './random.js';
import { DAY_MS, HISTORY_MS, iso, wholeSeconds } from './time.js';
import {
  CATEGORY_NAMES,
  CDN_ORIGIN,
  GIFT_CARD_CATEGORY,
  PRODUCT_ADJECTIVES,
  PRODUCT_NOUNS,
  RANGES,
  STORE_ORIGIN,
  VARIANT_ATTRIBUTES,
} from './vocab.js';

/** What the products list filters on but a product does not show (see docs/sandbox-data.md). */
export interface ProductHidden {
  isGiftCard: boolean;
  /** Range ids; the `range` filter accepts a range's id or slug. */
  ranges: number[];
}

export interface SeededProduct {
  product: Product;
  hidden: ProductHidden;
}

export const slugify = (text: string) =>
  text
    .normalize('NFD')
    .replace(/[\u0300-\u036f]/g, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

export const CATEGORIES: readonly Category[] = CATEGORY_NAMES.map((name, i) => ({
  id: i + 1,
  name,
  slug: slugify(name),
}));
const GIFT_CARDS = CATEGORIES.find((c) => c.name === GIFT_CARD_CATEGORY)!;
const MERCHANDISE = CATEGORIES.filter((c) => c !== GIFT_CARDS);

/** Running id counters for the catalogue's nested records, shared with later API writes. */
export interface CatalogueIds {
  variant: { next(): number };
  stockrecord: { next(): number };
  image: { next(): number };
}

export interface VariantDraft {
  productId: number;
  productSlug: string;
  skuPrefix: string;
  index: number;
  usdCents: number;
  attributes: { code: string; name: string; value: string }[];
  giftCard: boolean;
  createdMs: number;
  updatedMs: number;
  locations: number;
}

/** One variant with prices in every store currency (KWD only on some), stock at 1–3 locations. */
export function makeVariant(rng: Rng, ids: CatalogueIds, draft: VariantDraft): Variant {
  const id = ids.variant.next();
  const currencies = rng.chance(0.7) ? CURRENCY_CODES : CURRENCY_CODES.filter((c) => c !== 'KWD');
  const prices = currencies.map((currency) => {
    const price = storePrice(draft.usdCents, currency);
    const fmt = (factor: number) => formatMinor(Math.round(price * factor), currency);
    return {
      currency,
      price: formatMinor(price, currency),
      retail: fmt(draft.giftCard ? 1 : 1.2),
      subscription: fmt(draft.giftCard ? 1 : 0.9),
      subscription_suggested_downsell: fmt(draft.giftCard ? 1 : 0.8),
    };
  });
  const stocked = draft.giftCard
    ? [0]
    : sampleIndexes(rng, draft.locations, rng.int(1, Math.min(3, draft.locations)));
  const stockrecords = stocked.map((location) => ({
    id: ids.stockrecord.next(),
    location_id: location + 1,
    low_stock_threshold: 10,
    num_allocated: draft.giftCard ? 0 : rng.int(0, 25),
    num_in_stock: draft.giftCard ? 0 : rng.chance(0.08) ? rng.int(0, 9) : rng.int(10, 600),
  }));
  const inStock = stockrecords.reduce((sum, s) => sum + s.num_in_stock, 0);
  const allowBackorders = !draft.giftCard && rng.chance(0.15);
  const title = draft.attributes.length > 0 ? draft.attributes.map((a) => a.value).join(' / ') : 'Default';
  return {
    allow_backorders: allowBackorders,
    date_created: iso(draft.createdMs),
    date_updated: iso(draft.updatedMs),
    id,
    images: draft.index === 0 ? `${CDN_ORIGIN}/products/${draft.productSlug}-1.jpg` : '',
    inventory_availability: draft.giftCard
      ? 'unlimited'
      : inStock === 0
        ? 'out_of_stock'
        : inStock < 20
          ? 'low_stock'
          : 'in_stock',
    metadata: rng.chance(0.2) ? { origin: rng.pick(['EU', 'US', 'Asia']), batch: rng.int(100, 999) } : {},
    prices,
    product_id: draft.productId,
    purchase_availability:
      inStock > 0 || draft.giftCard ? 'available' : allowBackorders ? 'backorder' : 'unavailable',
    requires_shipping: !draft.giftCard || rng.chance(0.3),
    sku: `${draft.skuPrefix}-${draft.productId}-${draft.index + 1}`,
    stockrecords,
    title,
    track_stock: !draft.giftCard,
    unit_cost: formatMinor(
      Math.round(draft.usdCents * (draft.giftCard ? 0 : 0.3 + rng.next() * 0.15)),
      'USD',
    ),
    upc: `0${rng.digits(11)}`,
    variant_attribute_values: draft.attributes,
  };
}

function makeImages(rng: Rng, ids: CatalogueIds, slug: string, title: string): Image[] {
  const count = rng.int(1, 4);
  const images: Image[] = [];
  for (let i = 0; i < count; i++) {
    const fileName = `${slug}-${i + 1}.jpg`;
    images.push({
      attachment: `products/${fileName}`,
      caption: i === 0 ? title : `${title}, view ${i + 1}`,
      display_order: i,
      file_name: fileName,
      id: ids.image.next(),
      src: `${CDN_ORIGIN}/products/${fileName}`,
    });
  }
  return images;
}

/** Variant attribute combinations: up to two families, at most four variants. */
function drawAttributes(rng: Rng) {
  const roll = rng.next();
  if (roll < 0.35) return { families: [], combos: [[]] as { code: string; name: string; value: string }[][] };
  const familyIndexes = sampleIndexes(rng, VARIANT_ATTRIBUTES.length, roll < 0.8 ? 1 : 2);
  const families = familyIndexes.map((i) => {
    const family = VARIANT_ATTRIBUTES[i]!;
    return {
      code: family.code,
      name: family.name,
      values: family.values.slice(0, rng.int(2, family.values.length)),
    };
  });
  let combos: { code: string; name: string; value: string }[][] = [[]];
  for (const family of families) {
    combos = combos.flatMap((combo) =>
      family.values.map((value) => [...combo, { code: family.code, name: family.name, value }]),
    );
  }
  return { families, combos: combos.slice(0, 4) };
}

export interface ProductDraftContext {
  seed: number;
  ids: CatalogueIds;
  productCount: number;
  locations: number;
  createdMs: number;
  updatedMs: number;
  usedSlugs: Set<string>;
}

/** One product; every fifteenth (and the fourth) is a gift card so small stores have some too. */
export function makeProduct(
  id: number,
  ctx: ProductDraftContext,
  rng = rngFor(ctx.seed, 'product', id),
): SeededProduct {
  const giftCard = id % 15 === 4;
  const category = giftCard ? GIFT_CARDS : rng.pick(MERCHANDISE);
  const nouns = PRODUCT_NOUNS[category.name!]!;
  const title = giftCard ? rng.pick(nouns) : `${rng.pick(PRODUCT_ADJECTIVES)} ${rng.pick(nouns)}`;
  let slug = slugify(title);
  if (ctx.usedSlugs.has(slug)) slug = `${slug}-${id}`;
  ctx.usedSlugs.add(slug);
  const categories = [category];
  if (!giftCard && rng.chance(0.25)) {
    const extra = rng.pick(MERCHANDISE);
    if (extra !== category) categories.push(extra);
  }
  const { families, combos } = giftCard
    ? { families: [{ code: 'amount', name: 'Amount', values: ['25', '50', '100'] }], combos: [] }
    : drawAttributes(rng);
  const attributeSets = giftCard
    ? ['25', '50', '100'].map((value) => [{ code: 'amount', name: 'Amount', value }])
    : combos;
  const baseCents = giftCard ? 0 : rng.int(6, 80) * 100 + 99;
  const skuPrefix = category.slug!.slice(0, 3).toUpperCase();
  const variants = attributeSets.map((attributes, index) =>
    makeVariant(rng, ctx.ids, {
      productId: id,
      productSlug: slug,
      skuPrefix,
      index,
      usdCents: giftCard ? Number(attributes[0]!.value) * 100 : baseCents + index * 300,
      attributes,
      giftCard,
      createdMs: ctx.createdMs,
      updatedMs: ctx.updatedMs,
      locations: ctx.locations,
    }),
  );
  const monthly = rng.chance(0.85);
  const subscribable = !giftCard && rng.chance(0.75);
  const recommended = sampleIndexes(rng, ctx.productCount, rng.int(0, 4))
    .map((i) => i + 1)
    .filter((other) => other !== id);
  const ranges = RANGES.filter(() => rng.chance(0.2)).map((r) => r.id);
  const product: Product = {
    categories,
    date_created: iso(ctx.createdMs),
    date_updated: iso(ctx.updatedMs),
    enable_subscription: subscribable,
    external_tax_code: giftCard ? 'PG050000' : rng.pick(['PC040100', 'PF050001', 'PH050101', 'P0000000']),
    id,
    images: makeImages(rng, ctx.ids, slug, title),
    interval: monthly ? 'month' : 'week',
    interval_counts: subscribable ? (monthly ? [1, 2, 3] : [2, 4]) : [],
    is_discountable: !giftCard && rng.chance(0.9),
    is_public: rng.chance(0.9),
    metadata: rng.chance(0.3) ? { badge: rng.pick(['vegan', 'bestseller', 'limited', 'new']) } : {},
    ranking: rng.int(1, 1000),
    rating: Math.round((3 + rng.next() * 2) * 10) / 10,
    recommended_products: recommended,
    slug,
    structure: variants.length > 1 ? 'parent' : 'standalone',
    title,
    url: `${STORE_ORIGIN}/products/${slug}/`,
    variant_attributes: families.map((f) => ({ code: f.code, name: f.name, values: [...f.values] })),
    variants,
  };
  return { product, hidden: { isGiftCard: giftCard, ranges } };
}

/** The seeded catalogue: product ids 1..count, created in id order over the first half of history. */
export function seedCatalogue(
  seed: number,
  count: number,
  locations: number,
  anchorMs: number,
  ids: CatalogueIds,
) {
  const usedSlugs = new Set<string>();
  const start = anchorMs - HISTORY_MS;
  const products: SeededProduct[] = [];
  for (let id = 1; id <= count; id++) {
    const rng = rngFor(seed, 'product', id);
    const createdMs = wholeSeconds(start + ((id - 1 + rng.next()) / count) * (HISTORY_MS / 2));
    const updatedMs = wholeSeconds(createdMs + rng.next() * (anchorMs - createdMs - DAY_MS));
    const ctx = { seed, ids, productCount: count, locations, createdMs, updatedMs, usedSlugs };
    products.push(makeProduct(id, ctx, rng));
  }
  return products;
}
