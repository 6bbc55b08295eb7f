import { createWriteStream } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';

/**
 * Generated order documents for the warehouse benchmarks: both shapes (40% 2023-02-10), about three lines
 * each with tax lines, a transaction with payment details, a fulfillment, addresses, a customer from a
 * pool of 50,000 and attribution. Values vary (amounts, times, names, ids) so DuckDB and the raw landing
 * compress them about as much as real data, not as much as one document repeated.
 */

/** Small deterministic PRNG (mulberry32): the same seed makes the same files. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const FIRST = [
  'Ada',
  'Grace',
  'Alan',
  'Mary',
  'Linus',
  'Edsger',
  'Barbara',
  'Donald',
  'Katherine',
  'Ken',
  'Margaret',
  'Dennis',
];
const LAST = [
  'Lovelace',
  'Hopper',
  'Turing',
  'Somerville',
  'Torvalds',
  'Dijkstra',
  'Liskov',
  'Knuth',
  'Johnson',
  'Thompson',
  'Hamilton',
  'Ritchie',
];
const CITIES = [
  'London',
  'Berlin',
  'Paris',
  'Madrid',
  'Rome',
  'Vienna',
  'Lisbon',
  'Dublin',
  'Prague',
  'Oslo',
];
const STREETS = [
  'High St',
  'Main Rd',
  'Station Rd',
  'Church Ln',
  'Park Ave',
  'Mill Rd',
  'King St',
  'Queen St',
];
const PRODUCTS = [
  'Green Tea',
  'Black Tea',
  'Oolong',
  'Teapot',
  'Mug',
  'Infuser',
  'Kettle',
  'Honey',
  'Biscuits',
  'Gift Box',
];
const CURRENCIES = ['EUR', 'USD', 'GBP'];

/**
 * The benchmark's documents come in two variants: `standard`, whose every field the model maps, and
 * `unknown-fields`, the same documents each carrying three fields the model does not map (at the order's root,
 * on its first line, on that line's first tax line), which the object path keeps in `_extra` and the fast
 * path leaves to it. Their values come from the document's number, so both variants hold the same data.
 */
export type DocumentVariant = 'standard' | 'unknown-fields';
export const DOCUMENT_VARIANTS: readonly DocumentVariant[] = ['standard', 'unknown-fields'];

/** The unknown fields of the `unknown-fields` variant, by where they are: `_extra` of these tables holds them. */
export const UNKNOWN_FIELDS = {
  orders: 'zz_loyalty_tier',
  order_lines: 'zz_gift_message',
  order_line_tax_lines: 'zz_jurisdiction',
} as const;

const TIERS = ['bronze', 'silver', 'gold'];

export function orderDocuments(seed: number, variant: DocumentVariant = 'standard') {
  const unknown = variant === 'unknown-fields';
  const rnd = random(seed);
  const pick = <T>(items: readonly T[]) => items[Math.floor(rnd() * items.length)]!;
  const money = (max: number) => (rnd() * max).toFixed(2);
  const start = Date.UTC(2024, 0, 1);
  const time = (offsetMs = 0) =>
    new Date(start + Math.floor(rnd() * 365 * 86400_000) + offsetMs).toISOString();
  const address = (id: number) => ({
    id,
    first_name: pick(FIRST),
    last_name: pick(LAST),
    line1: `${1 + Math.floor(rnd() * 200)} ${pick(STREETS)}`,
    line2: '',
    line3: '',
    line4: pick(CITIES),
    postcode: `${10000 + Math.floor(rnd() * 89999)}`,
    state: '',
    country: pick(['GB', 'DE', 'FR', 'ES', 'IT']),
    phone_number: `+44 20 ${1000000 + Math.floor(rnd() * 8999999)}`,
  });
  const tax = (amount: string, currency: string) => ({
    amount,
    currency,
    rate: 0.19,
    report_values: { amount, currency: 'USD' },
    source: 'platform',
    tax_id: 7,
    tax_title: 'VAT',
  });

  return (n: number): Record<string, unknown> => {
    const v2023 = n % 5 < 2;
    const currency = pick(CURRENCIES);
    const placed = time();
    const count = 1 + Math.floor(rnd() * 5);
    const lines = Array.from({ length: count }, (_, k) => {
      const title = pick(PRODUCTS);
      const price = money(80);
      const common = {
        id: n * 10 + k,
        created_at: placed,
        updated_at: placed,
        quantity: 1 + Math.floor(rnd() * 3),
        is_gift_card: false,
        is_upsell: rnd() < 0.1,
        metadata: {},
        price_excl_tax: price,
        price_incl_tax: price,
        total_cost: money(200),
        unit_cost: money(30),
        tax_lines: [
          unknown && k === 0
            ? { ...tax(money(15), currency), [UNKNOWN_FIELDS.order_line_tax_lines]: `DE-${n % 16}` }
            : tax(money(15), currency),
        ],
      };
      const productId = 1 + Math.floor(rnd() * 500);
      return v2023
        ? {
            ...common,
            price_currency: currency,
            price_excl_tax_excl_discounts: price,
            price_incl_tax_excl_discounts: price,
            product: {
              id: productId,
              title,
              upc: `${400000000000 + productId}`,
              url: `https://shop.example/p/${productId}`,
              categories: [],
              images: [],
            },
            stockrecord: {
              id: productId * 3,
              partner_sku: `SKU-${productId}`,
              price,
              price_currency: currency,
              price_retail: price,
              num_in_stock: Math.floor(rnd() * 500),
              num_allocated: 0,
              low_stock_threshold: 5,
            },
          }
        : {
            ...common,
            currency,
            current_quantity: common.quantity,
            editable_quantity: common.quantity,
            fulfillable_quantity: 0,
            original_price_excl_tax: price,
            original_price_incl_tax: price,
            original_total_discount: '0.00',
            total_discount: '0.00',
            product_id: productId,
            product_image: `https://cdn.example/${productId}.jpg`,
            product_title: title,
            product_url: `https://shop.example/p/${productId}`,
            requires_shipping: true,
            sku: `SKU-${productId}`,
            variant_id: productId * 3,
            variant_title: 'Default',
            report_values: {
              currency: 'USD',
              price_excl_tax: price,
              price_incl_tax: price,
              total_cost: money(200),
              total_discount: '0.00',
              unit_cost: money(30),
            },
          };
    });
    if (unknown) (lines[0] as Record<string, unknown>)[UNKNOWN_FIELDS.order_lines] = `Happy birthday #${n}`;
    const shipped = time(86400_000);
    const fulfillment = v2023
      ? {
          id: n,
          carrier: 'dhl',
          date_created: shipped,
          last_event_date: shipped,
          lines: lines.map((l) => l.id).join(','),
          reference: `R-${n}`,
          requires_shipping: true,
          status: 'shipped',
          tracking_code: `TC${n}`,
          tracking_link: `https://t.example/${n}`,
        }
      : {
          id: n,
          order_number: String(n),
          created_at: shipped,
          last_event_date: shipped,
          status: 'success',
          delivery_status: null,
          location_id: 1 + Math.floor(rnd() * 5),
          requires_shipping: true,
          shipping_method: 'Standard',
          tracking_carrier: 'dhl',
          tracking_code: `TC${n}`,
          tracking_link: `https://t.example/${n}`,
          origin_address: { line1: 'Warehouse 1', line4: pick(CITIES), country: 'DE' },
          line_items: lines.map((l, k) => ({
            id: n * 10 + k,
            order_line_id: l.id,
            quantity: l.quantity,
            fulfilled_quantity: String(l.quantity),
            currency,
            price_excl_tax: l.price_excl_tax,
            price_incl_tax: l.price_incl_tax,
            sku: `SKU-${k}`,
            tax_lines: [tax(money(15), currency)],
          })),
        };
    const total = money(400);
    const userId = Math.floor(rnd() * 50_000);
    return {
      number: String(n),
      created_at: placed,
      date_placed: placed,
      updated_at: shipped,
      status: 'open',
      payment_status: 'paid',
      fulfillment_status: 'fulfilled',
      source: pick(['web', 'pos', 'api']),
      ...(unknown ? { [UNKNOWN_FIELDS.orders]: TIERS[n % TIERS.length] } : {}),
      is_test: false,
      currency,
      display_taxes: 'including',
      total_cost: money(150),
      total_excl_tax: total,
      total_incl_tax: total,
      total_tax: money(60),
      original_total_excl_tax: total,
      original_total_incl_tax: total,
      original_shipping_excl_tax: '4.99',
      original_shipping_incl_tax: '4.99',
      shipping_code: 'standard',
      shipping_method: 'Standard shipping',
      shipping_excl_tax: '4.99',
      shipping_incl_tax: '4.99',
      shipping_tax: '0.00',
      supports_post_purchase_upsells: false,
      order_status_url: `https://shop.example/orders/${n}/status/`,
      tags: rnd() < 0.2 ? ['gift'] : [],
      metadata: {},
      ...(v2023
        ? {}
        : { total_discount: '0.00', total_outstanding: '0.00', original_total_discount: '0.00' }),
      report_values: {
        currency: 'USD',
        total_cost: money(150),
        total_excl_tax: total,
        total_incl_tax: total,
      },
      billing_address: address(n * 2),
      shipping_address: { ...address(n * 2 + 1), notes: '' },
      user: {
        id: userId,
        email: `customer${userId}@example.com`,
        first_name: pick(FIRST),
        last_name: pick(LAST),
        accepts_marketing: rnd() < 0.5,
      },
      attribution: {
        utm_source: pick(['google', 'newsletter', 'direct']),
        utm_medium: 'cpc',
        utm_campaign: `c${Math.floor(rnd() * 40)}`,
      },
      lines,
      tax_lines: [{ ...tax(money(60), currency), id: n, tax_id: undefined }],
      shipping_tax_lines: [tax('0.00', currency)],
      transactions: [
        {
          id: n,
          type: 'sale',
          status: 'success',
          amount: total,
          currency,
          date_created: placed,
          payment_method: 'card_token',
          is_test: false,
          payment_details: {
            bankcard_first_six: '424242',
            bankcard_last_four: String(1000 + Math.floor(rnd() * 8999)),
            gateway: { id: 1, name: 'Stripe', type: 'stripe' },
          },
          report_values: { amount: total, currency: 'USD' },
        },
      ],
      fulfillments: [fulfillment],
      voucher_discounts: [],
      offer_discounts: [],
      refunds: [],
      subscriptions: [],
    };
  };
}

/** Writes `count` documents of a variant as NDJSON over `files` files; returns the paths and the bytes written. */
export async function writeOrderFiles(
  dir: string,
  count: number,
  files = 8,
  seed = 42,
  variant: DocumentVariant = 'standard',
): Promise<{ paths: string[]; bytes: number }> {
  await mkdir(dir, { recursive: true });
  const make = orderDocuments(seed, variant);
  const paths: string[] = [];
  let bytes = 0;
  const perFile = Math.ceil(count / files);
  for (let f = 0; f < files; f++) {
    const file = path.join(dir, `orders-${String(f).padStart(2, '0')}.ndjson`);
    paths.push(file);
    const out = createWriteStream(file);
    let buffer = '';
    for (let n = f * perFile + 1; n <= Math.min(count, (f + 1) * perFile); n++) {
      buffer += `${JSON.stringify(make(n))}\n`;
      if (buffer.length > 1 << 20) {
        bytes += buffer.length;
        if (!out.write(buffer)) await new Promise<void>((resolve) => out.once('drain', () => resolve()));
        buffer = '';
      }
    }
    bytes += buffer.length;
    await new Promise<void>((resolve, reject) => {
      out.once('error', reject);
      out.end(buffer, () => resolve());
    });
  }
  return { paths, bytes };
}
