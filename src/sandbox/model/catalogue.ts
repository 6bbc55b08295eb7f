import type {
  EmbeddedProduct,
  EmbeddedStockrecord,
  Product,
  ProductsQuery,
  Variant,
} from '../../../schemas/index.js';
import { CURRENCIES, convertMinor, formatMinor, parseMinor, storePrice } from './money.js';
import type { ProductHidden, SeededProduct } from './seed-catalogue.js';
import { indexOfId } from './sorted.js';
import type { ListView } from './types.js';
import { SandboxRuleError } from './types.js';
import { RANGES } from './vocab.js';

/** Precomputed per product so the list filters cost a few lookups per record scanned. */
interface ProductFacts {
  hidden: ProductHidden;
  titleLower: string;
  categoryKeys: Set<string>;
  rangeKeys: Set<string>;
  skus: Set<string>;
}

/** A variant priced in one currency, with everything an order, cart or subscription line copies from it. */
export interface LineSource {
  product: Product;
  variant: Variant;
  currency: string;
  /** Minor units of `currency`. */
  price: number;
  retail: number;
  subscription: number;
  /** Cost of goods per unit, converted from the variant's unit_cost (US dollars) to `currency`. */
  unitCost: number;
  isGiftCard: boolean;
  requiresShipping: boolean;
  image: string;
  /** For the subscriptions `product` and `sku` filters. */
  productKey: string;
  skuLower: string;
  embedProduct: EmbeddedProduct;
  embedStockrecord: EmbeddedStockrecord;
}

const lower = (s: string) => s.toLowerCase();

/**
 * The live catalogue: the products list in id order, hidden facts beside each record, and lookups by
 * variant and SKU. Records are never changed in place: an update publishes a new object, so a snapshot
 * taken earlier stays as it was and the seeded originals stay available for lazily generated history.
 */
export class Catalogue {
  readonly items: Product[] = [];
  /** The seeded products by id − 1, as they were at seeding (orders and subscriptions refer to these). */
  readonly seeded: readonly SeededProduct[];
  private readonly facts = new WeakMap<Product, ProductFacts>();
  private readonly variantOwner = new Map<number, number>();
  private readonly skuOwner = new Map<string, number>();
  private readonly embeds = new WeakMap<Product, EmbeddedProduct>();
  private readonly sources = new WeakMap<Variant, Map<string, LineSource>>();

  constructor(seeded: SeededProduct[]) {
    this.seeded = seeded;
    for (const { product, hidden } of seeded) this.add(product, hidden);
  }

  add(product: Product, hidden: ProductHidden): void {
    this.index(product, hidden);
    this.items.push(product);
  }

  private index(product: Product, hidden: ProductHidden): void {
    const categoryKeys = new Set<string>();
    for (const c of product.categories ?? []) {
      categoryKeys.add(String(c.id));
      if (c.slug) categoryKeys.add(lower(c.slug));
    }
    const rangeKeys = new Set<string>();
    for (const id of hidden.ranges) {
      rangeKeys.add(String(id));
      rangeKeys.add(RANGES[id - 1]!.slug);
    }
    const skus = new Set<string>();
    for (const v of product.variants ?? []) {
      this.variantOwner.set(v.id, product.id);
      if (v.sku) {
        skus.add(lower(v.sku));
        this.skuOwner.set(v.sku, v.id);
      }
    }
    this.facts.set(product, {
      hidden,
      titleLower: lower(product.title ?? ''),
      categoryKeys,
      rangeKeys,
      skus,
    });
  }

  private position(id: number): number {
    return indexOfId(this.items, id);
  }

  get(id: number): Product | undefined {
    const at = this.position(id);
    return at < 0 ? undefined : this.items[at];
  }

  hiddenOf(product: Product): ProductHidden {
    return this.facts.get(product)!.hidden;
  }

  /** Replaces a product with a new version (same id), re-indexing its variants and SKUs. */
  replace(next: Product): void {
    const at = this.position(next.id);
    const previous = this.items[at]!;
    const hidden = this.hiddenOf(previous);
    for (const v of previous.variants ?? [])
      if (v.sku && this.skuOwner.get(v.sku) === v.id) this.skuOwner.delete(v.sku);
    this.index(next, hidden);
    this.items[at] = next;
  }

  remove(id: number): boolean {
    const at = this.position(id);
    if (at < 0) return false;
    const [product] = this.items.splice(at, 1);
    for (const v of product!.variants ?? []) {
      this.variantOwner.delete(v.id);
      if (v.sku && this.skuOwner.get(v.sku) === v.id) this.skuOwner.delete(v.sku);
    }
    return true;
  }

  /** The live product and variant for a variant id, or a 404. */
  variant(id: number): { product: Product; variant: Variant } {
    const productId = this.variantOwner.get(id);
    const product = productId === undefined ? undefined : this.get(productId);
    const variant = product?.variants?.find((v) => v.id === id);
    if (!product || !variant) throw new SandboxRuleError(404, 'not_found', `variant ${id} does not exist`);
    return { product, variant };
  }

  skuOwnerOf(sku: string): number | undefined {
    return this.skuOwner.get(sku);
  }

  list(query: ProductsQuery): ListView<Product> {
    const tests: ((p: Product, f: ProductFacts) => boolean)[] = [];
    if (query.title) {
      const title = lower(query.title);
      tests.push((_, f) => f.titleLower.includes(title));
    }
    const anyOf = (values: string[] | undefined, key: (f: ProductFacts) => Set<string>) => {
      if (!values?.length) return;
      const wanted = values.map(lower);
      tests.push((_, f) => wanted.some((w) => key(f).has(w)));
    };
    anyOf(query.category, (f) => f.categoryKeys);
    anyOf(query.range, (f) => f.rangeKeys);
    anyOf(query.sku, (f) => f.skus);
    if (query.is_public !== undefined) tests.push((p) => p.is_public === query.is_public);
    if (query.is_gift_card !== undefined) tests.push((_, f) => f.hidden.isGiftCard === query.is_gift_card);
    return {
      items: this.items,
      matches: (product) => {
        const facts = this.facts.get(product);
        return facts !== undefined && tests.every((test) => test(product, facts));
      },
    };
  }

  embedProduct(product: Product): EmbeddedProduct {
    let embed = this.embeds.get(product);
    if (!embed) {
      embed = {
        categories: product.categories,
        id: product.id,
        images: product.images,
        title: product.title,
        upc: product.variants?.[0]?.upc ?? '',
        url: product.url,
      };
      this.embeds.set(product, embed);
    }
    return embed;
  }

  /**
   * Prices a variant in a currency. A variant without a price in that currency is offered at its
   * US-dollar price converted at the store's fixed rate (as multi-currency storefronts do).
   */
  lineSource(product: Product, variant: Variant, currency: string, isGiftCard: boolean): LineSource {
    let byCurrency = this.sources.get(variant);
    if (!byCurrency) {
      byCurrency = new Map();
      this.sources.set(variant, byCurrency);
    }
    const cached = byCurrency.get(currency);
    if (cached) return cached;
    const source = this.buildSource(product, variant, currency, isGiftCard);
    byCurrency.set(currency, source);
    return source;
  }

  private buildSource(product: Product, variant: Variant, currency: string, isGiftCard: boolean): LineSource {
    const prices = variant.prices ?? [];
    const own = prices.find((p) => p.currency === currency);
    const read = (text: string | null | undefined, cur: string) => (text ? (parseMinor(text, cur) ?? 0) : 0);
    let price: number;
    let retail: number;
    let subscription: number;
    if (own) {
      price = read(own.price, currency);
      retail = read(own.retail, currency) || price;
      subscription = read(own.subscription, currency) || price;
    } else {
      const base = prices.find((p) => p.currency === 'USD') ?? prices[0];
      const baseCurrency = base?.currency && CURRENCIES[base.currency] ? base.currency : 'USD';
      const usd = convertMinor(read(base?.price, baseCurrency), baseCurrency, 'USD');
      price = storePrice(usd, currency);
      retail = price;
      subscription = isGiftCard ? price : Math.round(price * 0.9);
    }
    const stock = variant.stockrecords?.[0];
    return {
      product,
      variant,
      currency,
      price,
      retail,
      subscription,
      unitCost: convertMinor(read(variant.unit_cost, 'USD'), 'USD', currency),
      isGiftCard,
      productKey: String(product.id),
      skuLower: (variant.sku ?? '').toLowerCase(),
      requiresShipping: variant.requires_shipping ?? true,
      image: product.images?.[0]?.src ?? '',
      embedProduct: this.embedProduct(product),
      embedStockrecord: {
        id: stock?.id ?? variant.id,
        low_stock_threshold: stock?.low_stock_threshold ?? 0,
        num_allocated: stock?.num_allocated ?? 0,
        num_in_stock: stock?.num_in_stock ?? 0,
        partner_sku: variant.sku ?? '',
        price: own?.price ?? formatMinor(price, currency),
        price_currency: currency,
        price_retail: own?.retail ?? formatMinor(retail, currency),
      },
    };
  }
}
