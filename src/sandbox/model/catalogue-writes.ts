import type { Product, Variant, VariantUpdateRequest } from '../../../schemas/index.js';
import type { Catalogue } from './catalogue.js';
import { CURRENCIES, parseMinor } from './money.js';
import type { Rng } from './random.js';
import { slugify } from './seed-catalogue.js';
import { iso } from './time.js';
import { SandboxRuleError } from './types.js';

const invalid = (field: string, message: string) => new SandboxRuleError(400, 'invalid', message, field);

/** Reads the `prices` items of a variant update (shape not shown, 4.9: objects like the Variant's prices). */
function readPrices(items: unknown[]): NonNullable<Variant['prices']> {
  const seen = new Set<string>();
  return items.map((item, i) => {
    const field = `prices.${i}`;
    if (typeof item !== 'object' || item === null || Array.isArray(item)) {
      throw invalid(field, `${field} must be an object with currency and price`);
    }
    const source = item as Record<string, unknown>;
    const currency = source.currency;
    if (typeof currency !== 'string' || !CURRENCIES[currency]) {
      throw invalid(
        `${field}.currency`,
        `${field}.currency must be one of ${Object.keys(CURRENCIES).join(', ')}`,
      );
    }
    if (seen.has(currency))
      throw invalid(`${field}.currency`, `${field}.currency ${currency} is given twice`);
    seen.add(currency);
    const amount = (key: string, required: boolean): string | null => {
      const value = source[key];
      if (value === undefined || value === null) {
        if (required) throw invalid(`${field}.${key}`, `${field}.${key} is required`);
        return null;
      }
      const minor = typeof value === 'string' ? parseMinor(value, currency) : null;
      if (minor === null || minor < 0) {
        const digits = CURRENCIES[currency]!.digits;
        throw invalid(
          `${field}.${key}`,
          `${field}.${key} must be a non-negative amount with at most ${digits} decimals`,
        );
      }
      return value as string;
    };
    const price = amount('price', true)!;
    return {
      currency,
      price,
      retail: amount('retail', false) ?? price,
      subscription: amount('subscription', false) ?? price,
      subscription_suggested_downsell: amount('subscription_suggested_downsell', false) ?? price,
    };
  });
}

/** PUT /products/variants/{id}/: fields given replace the variant's; SKUs stay unique across the store. */
export function updateVariant(
  catalogue: Catalogue,
  id: number,
  body: VariantUpdateRequest,
  nowMs: number,
): Variant {
  const { product, variant } = catalogue.variant(id);
  if (body.sku) {
    const owner = catalogue.skuOwnerOf(body.sku);
    if (owner !== undefined && owner !== id) {
      throw new SandboxRuleError(
        409,
        'duplicate_sku',
        `sku ${body.sku} already belongs to variant ${owner}`,
        'sku',
      );
    }
  }
  if (body.image !== undefined && body.image !== null && typeof body.image !== 'string') {
    throw invalid('image', 'image must be an image URL string or null');
  }
  const known = product.variant_attributes ?? [];
  const next: Variant = {
    ...variant,
    variant_attribute_values: body.variant_attribute_values.map(({ name, value }) => ({
      code:
        known.find((a) => a.name?.toLowerCase() === name.toLowerCase())?.code ??
        slugify(name).replace(/-/g, '_'),
      name,
      value,
    })),
    date_updated: iso(nowMs),
  };
  if (body.allow_backorders !== undefined) next.allow_backorders = body.allow_backorders;
  if (body.requires_shipping !== undefined) next.requires_shipping = body.requires_shipping;
  if (body.track_stock !== undefined) next.track_stock = body.track_stock;
  if (body.image !== undefined) next.images = (body.image as string | null) ?? '';
  if (body.metadata !== undefined) next.metadata = body.metadata ?? {};
  if (body.prices !== undefined) next.prices = readPrices(body.prices);
  if (body.sku !== undefined) next.sku = body.sku;
  if (body.unit_cost !== undefined) next.unit_cost = body.unit_cost;
  if (body.upc !== undefined) next.upc = body.upc;
  if (next.variant_attribute_values!.length > 0) {
    next.title = next.variant_attribute_values!.map((a) => a.value).join(' / ');
  }
  const variants = product.variants!.map((v) => (v.id === id ? next : v));
  catalogue.replace({ ...product, variants, date_updated: iso(nowMs) });
  return next;
}

/** A product edited by a mutation: new ranking and rating, prices up a few percent, maybe unpublished. */
export function editedProduct(product: Product, rng: Rng, nowMs: number): Product {
  const bump = 1 + rng.int(2, 8) / 100;
  const variants = (product.variants ?? []).map((v) => ({
    ...v,
    date_updated: iso(nowMs),
    prices: (v.prices ?? []).map((p) => {
      const digits = CURRENCIES[p.currency ?? 'USD']?.digits ?? 2;
      const scaled = (text: string | null | undefined) =>
        text ? (Math.round(Number(text) * bump * 10 ** digits) / 10 ** digits).toFixed(digits) : text;
      return { ...p, price: scaled(p.price), subscription: scaled(p.subscription) };
    }),
  }));
  return {
    ...product,
    date_updated: iso(nowMs),
    ranking: rng.int(1, 1000),
    rating: Math.round((3 + rng.next() * 2) * 10) / 10,
    is_public: rng.chance(0.9) ? product.is_public : !product.is_public,
    variants,
  };
}
