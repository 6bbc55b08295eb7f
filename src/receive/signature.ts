import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Webhook signatures: HMAC-SHA256, hex, made with the webhook's signing secret. The platform documents the
 * signature as computed over the payload re-serialised the way Python's `json.dumps` does by default, not
 * over the bytes sent; a signature over the raw body is accepted too (docs/receiver.md, "Signatures").
 */

const HEX_DIGEST = /^[0-9a-f]{64}$/;

/** The 32 bytes a signature header names, or null when it is not one hex SHA-256 digest. */
export function signatureBytes(header: string | string[] | undefined): Buffer | null {
  if (typeof header !== 'string') return null;
  // Some senders prefix the algorithm, as GitHub does; the digest is what is compared.
  const value = header
    .trim()
    .toLowerCase()
    .replace(/^sha256=/, '');
  return HEX_DIGEST.test(value) ? Buffer.from(value, 'hex') : null;
}

export function hmacSha256(secret: string, data: Buffer | string): Buffer {
  return createHmac('sha256', secret).update(data).digest();
}

/** Hex signature of `data`, as a sender puts it in the header. */
export function signHex(secret: string, data: Buffer | string): string {
  return hmacSha256(secret, data).toString('hex');
}

/** Constant-time: how long it takes says nothing about how much of the signature was right. */
export function matches(expected: Buffer, given: Buffer): boolean {
  return expected.length === given.length && timingSafeEqual(expected, given);
}

export type SignatureForm = 'raw' | 'python';

/**
 * Which secret and form `given` is a signature of, or null. The raw body is tried first (no parsing); the
 * re-serialised form only when the body is JSON, and computed once for all the secrets.
 */
export function verifySignature(
  secrets: readonly string[],
  body: Buffer,
  given: Buffer,
  text: () => string | null,
): SignatureForm | null {
  for (const secret of secrets) if (matches(hmacSha256(secret, body), given)) return 'raw';
  const json = text();
  if (json === null) return null;
  const dumped = pythonJsonDumps(json);
  if (dumped === null) return null;
  for (const secret of secrets) if (matches(hmacSha256(secret, dumped), given)) return 'python';
  return null;
}

const SHORT_ESCAPES: Record<number, string> = {
  34: '\\"',
  92: '\\\\',
  10: '\\n',
  13: '\\r',
  9: '\\t',
  8: '\\b',
  12: '\\f',
};

/**
 * A string as `json.dumps` writes it with `ensure_ascii=True`: printable ASCII as is, the usual short
 * escapes, and every other UTF-16 unit as `\uxxxx` in lower-case hex (so a character beyond U+FFFF becomes
 * its surrogate pair, and a lone surrogate stays one).
 */
export function pythonString(value: string): string {
  let out = '"';
  let run = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    if (unit >= 0x20 && unit <= 0x7e && unit !== 0x22 && unit !== 0x5c) continue;
    out += value.slice(run, i);
    out += SHORT_ESCAPES[unit] ?? `\\u${unit.toString(16).padStart(4, '0')}`;
    run = i + 1;
  }
  return `${out}${value.slice(run)}"`;
}

/**
 * A JSON number as Python's `json` module reads it and `json.dumps` writes it back. Without a fraction or
 * exponent it is an int, written with all its digits (`-0` becomes `0`); otherwise a float (a double, read
 * correctly rounded, as JavaScript reads it), written as `repr` does: the shortest digits that read back
 * to the same double (JavaScript's choice too), in positional notation from 1e-4 up to 1e16 with at least
 * one digit after the point, otherwise as `d.ddde±XX`; beyond the double range, `Infinity`.
 */
export function pythonNumber(token: string): string {
  if (!/[.eE]/.test(token)) return token === '-0' ? '0' : token;
  const value = Number(token);
  if (value === Number.POSITIVE_INFINITY) return 'Infinity';
  if (value === Number.NEGATIVE_INFINITY) return '-Infinity';
  const sign = value < 0 || Object.is(value, -0) ? '-' : '';
  // String(x) gives the shortest round-tripping digits: take them and the decimal point's place.
  const [mantissa, exponent] = String(Math.abs(value)).split('e') as [string, string | undefined];
  const point = mantissa.indexOf('.');
  let digits = mantissa.replace('.', '');
  let decpt = (point < 0 ? mantissa.length : point) + Number(exponent ?? 0);
  const leading = digits.length - digits.replace(/^0+/, '').length;
  if (leading === digits.length) return `${sign}0.0`;
  digits = digits.slice(leading).replace(/0+$/, '');
  decpt -= leading;
  if (decpt <= -4 || decpt > 16) {
    const exp = decpt - 1;
    const frac = digits.length > 1 ? `.${digits.slice(1)}` : '';
    return `${sign}${digits[0]}${frac}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  }
  if (decpt <= 0) return `${sign}0.${'0'.repeat(-decpt)}${digits}`;
  if (decpt >= digits.length) return `${sign}${digits}${'0'.repeat(decpt - digits.length)}.0`;
  return `${sign}${digits.slice(0, decpt)}.${digits.slice(decpt)}`;
}

/**
 * `json.dumps(json.loads(text))` with Python's defaults (separators `", "` and `": "`, `ensure_ascii`,
 * names in the order the text has them), made from the text's own tokens, so that names that look like
 * integers keep their place (a JavaScript object would move them first). Iterative: nesting depth costs
 * no stack. `text` must be valid JSON (checked by the caller with JSON.parse); null when it cannot be
 * reproduced: an object that repeats a name (Python keeps the first place and the last value, a case a
 * genuine `json.dumps` never produces), or anything unexpected.
 */
export function pythonJsonDumps(text: string): string | null {
  try {
    return dumpTokens(text);
  } catch {
    return null;
  }
}

const isSpace = (c: number) => c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
/** Characters of a number token, or of true, false and null. */
const isBare = (c: number) =>
  (c >= 0x30 && c <= 0x39) ||
  c === 0x2d ||
  c === 0x2b ||
  c === 0x2e ||
  (c >= 0x61 && c <= 0x7a) ||
  c === 0x45;

function dumpTokens(text: string): string | null {
  let out = '';
  // One entry per open container: the names seen so far for an object, null for an array.
  const open: (Set<string> | null)[] = [];
  let expectName = false;
  const n = text.length;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (isSpace(c)) {
      i++;
    } else if (c === 0x22) {
      // A string: copied as is when it is printable ASCII without escapes, which is how Python writes it.
      let j = i + 1;
      let plain = true;
      for (;;) {
        if (j >= n) return null;
        const d = text.charCodeAt(j);
        if (d === 0x22) break;
        if (d === 0x5c) {
          plain = false;
          j += 2;
          continue;
        }
        if (d < 0x20 || d > 0x7e) plain = false;
        j++;
      }
      const token = text.slice(i, j + 1);
      const value = plain ? null : (JSON.parse(token) as string);
      if (expectName) {
        const names = open[open.length - 1];
        const name = value ?? token.slice(1, -1);
        if (!names || names.has(name)) return null;
        names.add(name);
        expectName = false;
      }
      out += value === null ? token : pythonString(value);
      i = j + 1;
    } else if (c === 0x7b) {
      open.push(new Set());
      expectName = true;
      out += '{';
      i++;
    } else if (c === 0x5b) {
      open.push(null);
      out += '[';
      i++;
    } else if (c === 0x7d || c === 0x5d) {
      open.pop();
      expectName = false;
      out += text[i];
      i++;
    } else if (c === 0x2c) {
      expectName = open.length > 0 && open[open.length - 1] !== null;
      out += ', ';
      i++;
    } else if (c === 0x3a) {
      out += ': ';
      i++;
    } else if (isBare(c)) {
      let j = i + 1;
      while (j < n && isBare(text.charCodeAt(j))) j++;
      const token = text.slice(i, j);
      out += c === 0x74 || c === 0x66 || c === 0x6e ? token : pythonNumber(token);
      i = j;
    } else return null;
  }
  return out;
}
