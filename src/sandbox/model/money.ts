/**
 * Money in the sandbox is kept as integer minor units (cents, fils) and formatted only when a record is
 * rendered, so totals always add up exactly in every currency, including three-decimal ones.
 */

export interface CurrencyInfo {
  code: string;
  /** Fraction digits: 2 for USD, 3 for KWD. */
  digits: number;
  /** US dollars per one unit of this currency: fixed, so report values are deterministic. */
  usdRate: number;
}

export const CURRENCIES: Record<string, CurrencyInfo> = {
  USD: { code: 'USD', digits: 2, usdRate: 1 },
  EUR: { code: 'EUR', digits: 2, usdRate: 1.08 },
  GBP: { code: 'GBP', digits: 2, usdRate: 1.27 },
  KWD: { code: 'KWD', digits: 3, usdRate: 3.25 },
};
export const CURRENCY_CODES = Object.keys(CURRENCIES) as readonly string[];
/** The currency every report_values object is expressed in (the store's reporting currency). */
export const REPORT_CURRENCY = 'USD';

export function currencyInfo(code: string): CurrencyInfo {
  const info = CURRENCIES[code];
  if (!info) throw new Error(`unknown currency ${code}`);
  return info;
}

/** Formats minor units as decimal text with exactly the currency's fraction digits. */
export function formatMinor(minor: number, currency: string): string {
  const { digits } = currencyInfo(currency);
  const sign = minor < 0 ? '-' : '';
  const abs = Math.abs(Math.round(minor));
  const scale = 10 ** digits;
  const whole = Math.floor(abs / scale);
  const fraction = String(abs % scale).padStart(digits, '0');
  return `${sign}${whole}.${fraction}`;
}

/** Parses decimal text to minor units of a currency; returns null when it has more digits than allowed. */
export function parseMinor(text: string, currency: string): number | null {
  const { digits } = currencyInfo(currency);
  const match = /^(-?)(\d*)(?:\.(\d*))?$/.exec(text);
  if (!match || (match[2] === '' && (match[3] ?? '') === '')) return null;
  const fraction = match[3] ?? '';
  if (fraction.length > digits) return null;
  const minor = Number(match[2] || '0') * 10 ** digits + Number(fraction.padEnd(digits, '0') || '0');
  return match[1] === '-' ? -minor : minor;
}

/** Converts an amount between currencies at the fixed rates, rounding half away from zero. */
export function convertMinor(minor: number, from: string, to: string): number {
  if (from === to) return minor;
  const source = currencyInfo(from);
  const target = currencyInfo(to);
  const major = (minor / 10 ** source.digits) * (source.usdRate / target.usdRate);
  return Math.round(major * 10 ** target.digits);
}

/** The reporting-currency text for an amount (every report_values field). */
export function reportText(minor: number, currency: string): string {
  return formatMinor(convertMinor(minor, currency, REPORT_CURRENCY), REPORT_CURRENCY);
}

/**
 * A shop-like price in a currency from a US-dollar price: x.99 endings for two-decimal currencies and
 * eighths for KWD (so its third decimal is visibly used: 3.125, 4.875).
 */
export function storePrice(usdCents: number, currency: string): number {
  const converted = convertMinor(usdCents, 'USD', currency);
  const { digits } = currencyInfo(currency);
  if (digits === 3) return Math.max(125, Math.round(converted / 125) * 125);
  return Math.max(99, Math.ceil(converted / 100) * 100 - 1);
}

/** Tax on an amount at a rate, rounded half away from zero to the minor unit. */
export function taxOn(minor: number, rate: number): number {
  return Math.sign(minor) * Math.round(Math.abs(minor) * rate);
}

/** Splits `total` across `weights` in proportion, the rounding remainder going to the largest share. */
export function allocate(total: number, weights: readonly number[]): number[] {
  const sum = weights.reduce((a, b) => a + b, 0);
  if (sum === 0) return weights.map(() => 0);
  const shares = weights.map((w) => Math.floor((total * w) / sum));
  const remainder = total - shares.reduce((a, b) => a + b, 0);
  let largest = 0;
  for (let i = 1; i < weights.length; i++) if (weights[i]! > weights[largest]!) largest = i;
  shares[largest]! += remainder;
  return shares;
}
