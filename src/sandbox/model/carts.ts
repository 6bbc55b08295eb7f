import type {
  Attribution,
  Cart,
  CartCreateRequest,
  CartUpdateRequest,
  User,
} from '../../../schemas/index.js';
import { EMPTY_ATTRIBUTION } from './attribution.js';
import type { Catalogue, LineSource } from './catalogue.js';
import type { Customer } from './customers.js';
import { readAttribution, readCode, readUser } from './inputs.js';
import { allocate, CURRENCIES, convertMinor, formatMinor, REPORT_CURRENCY, reportText } from './money.js';
import { VOUCHERS } from './order-build.js';
import { rngFor } from './random.js';
import { HISTORY_MS, iso, wholeSeconds } from './time.js';
import { SandboxRuleError } from './types.js';
import { STORE_ORIGIN } from './vocab.js';

interface CartLineState {
  id: number;
  source: LineSource;
  quantity: number;
}

interface CartState {
  id: number;
  createdMs: number;
  currency: string;
  user: User;
  attribution: Attribution;
  metadata: Record<string, unknown>;
  status: string;
  abandoned: boolean;
  lines: CartLineState[];
  vouchers: (typeof VOUCHERS)[number][];
}

export interface CartWorld {
  seed: number;
  anchorMs: number;
  catalogue: Catalogue;
  customers: readonly Customer[];
  purchasable: readonly number[];
  seededCarts: number;
}

const LINE_STRIDE = 16;

/**
 * Carts are only reachable through create and replace, so seeded carts (ids 1..seededCarts) are generated
 * on demand like orders, and kept once replaced. New carts and lines get ids above every seeded one.
 */
export class CartDesk {
  private readonly kept = new Map<number, CartState>();
  private created = 0;
  private nextLine: number;

  constructor(
    private readonly world: CartWorld,
    private readonly userIds: { next(): number },
    private readonly now: () => number,
  ) {
    this.nextLine = (world.seededCarts + 1) * LINE_STRIDE;
  }

  get count(): number {
    return this.world.seededCarts + this.created;
  }

  private seeded(id: number): CartState | undefined {
    if (!Number.isInteger(id) || id < 1 || id > this.world.seededCarts) return undefined;
    const rng = rngFor(this.world.seed, 'cart', id);
    const customer = rng.pick(this.world.customers);
    const createdMs = wholeSeconds(
      this.world.anchorMs - HISTORY_MS + ((id - 1 + rng.next()) / this.world.seededCarts) * HISTORY_MS,
    );
    const currency = customer.region.currency;
    const lines: CartLineState[] = [];
    for (let j = 0, n = rng.int(1, 3); j < n; j++) {
      const seeded = this.world.catalogue.seeded[rng.pick(this.world.purchasable) - 1]!;
      const variant = rng.pick(seeded.product.variants!);
      const source = this.world.catalogue.lineSource(
        seeded.product,
        variant,
        currency,
        seeded.hidden.isGiftCard,
      );
      lines.push({ id: id * LINE_STRIDE + j + 1, source, quantity: rng.int(1, 3) });
    }
    const status = rng.pick(['open', 'abandoned', 'abandoned', 'converted']);
    return {
      id,
      createdMs,
      currency,
      user: customer.user,
      attribution: EMPTY_ATTRIBUTION,
      metadata: {},
      status,
      abandoned: status === 'abandoned',
      lines,
      vouchers: rng.chance(0.1) ? [VOUCHERS[0]] : [],
    };
  }

  private linesFrom(lines: CartCreateRequest['lines'], currency: string): CartLineState[] {
    return lines.map((line, i) => {
      const product = this.world.catalogue.get(line.product_id);
      const variant = product?.variants?.[0];
      if (!product || !variant) {
        throw new SandboxRuleError(
          400,
          'unknown_product',
          `product ${line.product_id} does not exist`,
          `lines.${i}.product_id`,
        );
      }
      const isGiftCard = this.world.catalogue.hiddenOf(product).isGiftCard;
      return {
        id: ++this.nextLine,
        source: this.world.catalogue.lineSource(product, variant, currency, isGiftCard),
        quantity: line.quantity,
      };
    });
  }

  private vouchersFrom(items: unknown[] | null | undefined) {
    return (items ?? []).map((item, i) => {
      const code = readCode(item, 'code', `vouchers.${i}`).toUpperCase();
      const voucher = VOUCHERS.find((v) => v.code === code);
      if (!voucher)
        throw new SandboxRuleError(400, 'unknown_voucher', `voucher ${code} does not exist`, `vouchers.${i}`);
      return voucher;
    });
  }

  create(body: CartCreateRequest): Cart {
    const currency = body.currency ?? 'USD';
    if (!CURRENCIES[currency]) {
      throw new SandboxRuleError(
        400,
        'invalid',
        `currency must be one of ${Object.keys(CURRENCIES).join(', ')}`,
        'currency',
      );
    }
    const userInput = readUser(body.user, 'user');
    const cart: CartState = {
      id: this.world.seededCarts + this.created + 1,
      createdMs: this.now(),
      currency,
      user: { accepts_marketing: false, ...userInput, id: this.userIds.next() },
      attribution: readAttribution(body.attribution, 'attribution', EMPTY_ATTRIBUTION) ?? EMPTY_ATTRIBUTION,
      metadata: body.metadata ?? {},
      status: 'open',
      abandoned: false,
      lines: this.linesFrom(body.lines, currency),
      vouchers: this.vouchersFrom(body.vouchers),
    };
    this.created++;
    this.kept.set(cart.id, cart);
    return render(cart);
  }

  /** PUT replaces the lines; attribution, metadata and vouchers are replaced when given, kept otherwise. */
  update(id: number, body: CartUpdateRequest): Cart {
    const cart = this.kept.get(id) ?? this.seeded(id);
    if (!cart) throw new SandboxRuleError(404, 'not_found', `cart ${id} does not exist`);
    if (cart.status === 'converted') {
      throw new SandboxRuleError(
        409,
        'cart_converted',
        `cart ${id} was already checked out and can no longer change`,
      );
    }
    const lines = this.linesFrom(body.lines, cart.currency);
    const vouchers = body.vouchers !== undefined ? this.vouchersFrom(body.vouchers) : cart.vouchers;
    if (body.attribution !== undefined) {
      cart.attribution =
        readAttribution(body.attribution, 'attribution', EMPTY_ATTRIBUTION) ?? EMPTY_ATTRIBUTION;
    }
    if (body.metadata !== undefined) cart.metadata = body.metadata ?? {};
    cart.lines = lines;
    cart.vouchers = vouchers;
    cart.status = 'open';
    cart.abandoned = false;
    this.kept.set(id, cart);
    return render(cart);
  }
}

function render(cart: CartState): Cart {
  const c = cart.currency;
  const m = (minor: number) => formatMinor(minor, c);
  const r = (minor: number) => reportText(minor, c);
  const gross = cart.lines.map((l) => (l.source.isGiftCard ? 0 : l.source.price * l.quantity));
  const subtotal = gross.reduce((a, b) => a + b, 0);
  const amountOf = (v: (typeof VOUCHERS)[number]) =>
    v.percent ? Math.round((subtotal * v.percent) / 100) : convertMinor(v.usdCents, 'USD', c);
  const wanted = cart.vouchers.reduce((sum, v) => sum + amountOf(v), 0);
  const discounts = allocate(Math.min(subtotal, wanted), gross);
  const lines = cart.lines.map((l, i) => {
    const total = l.source.price * l.quantity - discounts[i]!;
    const product = l.source.product;
    return {
      currency: c,
      id: l.id,
      interval: product.enable_subscription ? (product.interval ?? null) : null,
      interval_count: product.enable_subscription ? (product.interval_counts?.[0] ?? null) : null,
      is_upsell: false,
      metadata: {},
      price_excl_tax: m(total),
      price_incl_tax: m(total),
      product_id: product.id,
      product_image: l.source.image,
      product_title: product.title,
      product_url: product.url,
      quantity: l.quantity,
      report_values: {
        currency: REPORT_CURRENCY,
        price_excl_tax: r(total),
        price_incl_tax: r(total),
        total_cost: r(l.source.unitCost * l.quantity),
        total_discount: r(discounts[i]!),
        unit_cost: r(l.source.unitCost),
      },
      sku: l.source.variant.sku ?? '',
      total_cost: m(l.source.unitCost * l.quantity),
      total_discount: m(discounts[i]!),
      unit_cost: m(l.source.unitCost),
      variant_id: l.source.variant.id,
      variant_title: l.source.variant.title,
    };
  });
  const total =
    cart.lines.reduce((sum, l) => sum + l.source.price * l.quantity, 0) -
    discounts.reduce((a, b) => a + b, 0);
  const cost = cart.lines.reduce((sum, l) => sum + l.source.unitCost * l.quantity, 0);
  const discount = discounts.reduce((a, b) => a + b, 0);
  return {
    abandoned: cart.abandoned,
    attribution: cart.attribution,
    checkout_url: `${STORE_ORIGIN}/checkout/${cart.id}/`,
    created_at: iso(cart.createdMs),
    currency: c,
    id: cart.id,
    lines,
    metadata: cart.metadata,
    // Carts carry no address yet, so no tax is known: totals including tax equal those excluding it.
    report_values: {
      currency: REPORT_CURRENCY,
      total_cost: r(cost),
      total_discount: r(discount),
      total_excl_tax: r(total),
      total_incl_tax: r(total),
    },
    status: cart.status,
    total_cost: m(cost),
    total_discount: m(discount),
    total_excl_tax: m(total),
    total_incl_tax: m(total),
    user: cart.user,
    voucher_discounts: cart.vouchers.map((v) => ({
      amount: m(Math.min(subtotal, amountOf(v))),
      description: v.percent ? `${v.percent}% off` : `${m(amountOf(v))} off`,
      name: v.name,
      voucher: {
        code: v.code,
        end_datetime: '2027-12-31T23:59:59.000Z',
        name: v.name,
        start_datetime: '2023-01-01T00:00:00.000Z',
      },
    })),
  };
}
