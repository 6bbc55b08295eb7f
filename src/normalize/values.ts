import type { ColumnType } from '../model/index.js';

/**
 * Value conversion with exactness: a value either becomes exactly what the column holds or is refused
 * with a reason; nothing is rounded, truncated or coerced. Numbers that DuckDB stores as 64-bit integers
 * (BIGINT, DECIMAL as a scaled integer, TIMESTAMPTZ as microseconds) come out as a JS number while they
 * are safe integers and as a bigint beyond that, so the loader can write them without allocating.
 */

export class ValueError extends Error {
  constructor(readonly expected: string) {
    super(expected);
  }
}

export type Int64 = number | bigint;

const TWO_53 = 2 ** 53;

export function toBigint(value: unknown): Int64 {
  if (typeof value === 'number' && Number.isInteger(value)) {
    if (Math.abs(value) < TWO_53) return value;
    throw new ValueError('an integer within ±2^53 (JSON numbers beyond it cannot be read exactly)');
  }
  throw new ValueError('an integer');
}

export function toDouble(value: unknown): number {
  if (typeof value === 'number' && Number.isFinite(value)) return value;
  throw new ValueError('a number');
}

export function toBoolean(value: unknown): boolean {
  if (typeof value === 'boolean') return value;
  throw new ValueError('true or false');
}

export function toText(value: unknown): string {
  if (typeof value === 'string') return value;
  throw new ValueError('a string');
}

/**
 * What a JSON value that holds an inexact number is refused for: JSON.parse reads a number beyond ±1.8e308 as
 * Infinity (which JSON.stringify writes as null) and rounds an integer beyond ±2^53, so the text it gives back
 * is not what the store sent.
 */
export const INEXACT_NUMBER =
  'numbers JSON.parse keeps exactly (integers within ±2^53, none beyond ±1.8e308)';

export function toJsonText(value: unknown): string {
  if (inexactNumbers(value).length > 0) throw new ValueError(`JSON whose ${INEXACT_NUMBER}`);
  return JSON.stringify(value);
}

/**
 * The numbers in `value` that JSON.parse may not have kept as sent (see INEXACT_NUMBER), each with its path
 * (`a.b`, `a[0]`, relative to `value`; '' for `value` itself).
 */
export function inexactNumbers(
  value: unknown,
  at = '',
  out: { path: string; value: number }[] = [],
): { path: string; value: number }[] {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || (Number.isInteger(value) && Math.abs(value) >= TWO_53))
      out.push({ path: at, value });
  } else if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) inexactNumbers(value[i], `${at}[${i}]`, out);
  } else if (typeof value === 'object' && value !== null) {
    for (const key in value)
      inexactNumbers((value as Record<string, unknown>)[key], at === '' ? key : `${at}.${key}`, out);
  }
  return out;
}

export function toTextList(value: unknown): string[] {
  if (Array.isArray(value) && value.every((v) => typeof v === 'string')) return value;
  throw new ValueError('an array of strings');
}

export function toBigintList(value: unknown): number[] {
  if (Array.isArray(value) && value.every((v) => typeof v === 'number' && Number.isSafeInteger(v)))
    return value;
  throw new ValueError('an array of integers within ±2^53');
}

const decimalMessages = new Map<string, string>();

function decimalError(precision: number, scale: number): ValueError {
  const key = `${precision},${scale}`;
  let message = decimalMessages.get(key);
  if (!message) {
    message = `decimal text that fits DECIMAL(${key}) exactly (at most ${precision - scale} integer digits and ${scale} decimals; never rounded)`;
    decimalMessages.set(key, message);
  }
  return new ValueError(message);
}

/**
 * ASCII text copied into bytes, so the readers below serve strings and the bytes of a document alike (one
 * implementation each); null when the text holds a character beyond ASCII, which no decimal or common
 * date-time spelling has.
 */
let scratch = new Uint8Array(64);
function asciiBytes(text: string): Uint8Array | null {
  const n = text.length;
  if (n > scratch.length) scratch = new Uint8Array(Math.max(n, scratch.length * 2));
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c > 127) return null;
    scratch[i] = c;
  }
  return scratch;
}

/**
 * Decimal text ("12.50", "-0.5", ".5", "1.") as the scaled integer of DECIMAL(precision, scale).
 * Trailing zeros beyond the scale are exact and accepted ("1.230" into 2 decimals); any other digit there,
 * or too many integer digits, is refused.
 */
export function toDecimal(value: unknown, precision: number, scale: number): Int64 {
  if (typeof value !== 'string')
    throw new ValueError(`decimal text (a string), fitting DECIMAL(${precision},${scale})`);
  const bytes = asciiBytes(value);
  if (bytes === null) throw decimalError(precision, scale);
  return decimalFromBytes(bytes, 0, value.length, precision, scale);
}

/** toDecimal of the text held as ASCII bytes in `bytes[start, end)` (a document's bytes, see scan.ts). */
export function decimalFromBytes(
  bytes: Uint8Array,
  start: number,
  end: number,
  precision: number,
  scale: number,
): Int64 {
  let i = start;
  let negative = false;
  if (end > start && bytes[start] === 45) {
    negative = true;
    i++;
  }
  const unsignedStart = i;
  let digits = 0;
  let intDigits = 0;
  let acc = 0;
  for (; i < end; i++) {
    const c = bytes[i]!;
    if (c === 46) break;
    if (c < 48 || c > 57) throw decimalError(precision, scale);
    digits++;
    if (intDigits === 0 && c === 48) continue;
    intDigits++;
    acc = acc * 10 + (c - 48);
  }
  const point = i;
  let fraction = 0;
  if (i < end) {
    for (i++; i < end; i++) {
      const c = bytes[i]!;
      if (c < 48 || c > 57) throw decimalError(precision, scale);
      digits++;
      if (fraction < scale) {
        acc = acc * 10 + (c - 48);
        fraction++;
      } else if (c !== 48) throw decimalError(precision, scale);
    }
  }
  if (digits === 0 || intDigits > precision - scale) throw decimalError(precision, scale);
  for (; fraction < scale; fraction++) acc *= 10;
  // Up to 15 significant digits the float accumulation is exact; beyond, redo it in bigint.
  if (intDigits + scale <= 15) return negative && acc !== 0 ? -acc : acc;
  let text = '0';
  for (let k = unsignedStart; k < point; k++) text += String.fromCharCode(bytes[k]!);
  let decimals = 0;
  for (let k = point + 1; k < end && decimals < scale; k++, decimals++)
    text += String.fromCharCode(bytes[k]!);
  for (; decimals < scale; decimals++) text += '0';
  const big = BigInt(text);
  return negative ? -big : big;
}

const TIMESTAMP =
  /^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?(?:(Z)|([+-])(\d{2}):?(\d{2}))$/i;
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
function daysFromCivil(y: number, m: number, d: number): number {
  // The timestamps of one document mostly share a day: the last one is remembered.
  if (y === lastDay[0] && m === lastDay[1] && d === lastDay[2]) return lastDay[3]!;
  const yy = m <= 2 ? y - 1 : y;
  const era = Math.floor(yy / 400);
  const yoe = yy - era * 400;
  const doy = Math.floor((153 * (m + (m > 2 ? -3 : 9)) + 2) / 5) + d - 1;
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy;
  const days = era * 146097 + doe - 719468;
  lastDay[0] = y;
  lastDay[1] = m;
  lastDay[2] = d;
  lastDay[3] = days;
  return days;
}

/** Year, month, day and days since the epoch of the last date converted. */
const lastDay = new Float64Array([Number.NaN, 0, 0, 0]);

/** The value of `length` ASCII digits at `at`, or -1 if any is not a digit. */
function digitsAt(bytes: Uint8Array, at: number, length: number): number {
  let n = 0;
  for (let i = at; i < at + length; i++) {
    const d = bytes[i]! - 48;
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/**
 * The common spelling, `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`, held as ASCII bytes in
 * `bytes[start, end)`, read without a regex (the regex and its match array cost more than the rest of a
 * row); null for any other spelling, which the regex reads (toTimestamp).
 */
export function commonTimestampFromBytes(bytes: Uint8Array, start: number, end: number): Int64 | null {
  const n = end - start;
  const b = start;
  if (n < 20 || bytes[b + 10] !== 84 /* T */) return null;
  if (bytes[b + 4] !== 45 || bytes[b + 7] !== 45) return null;
  if (bytes[b + 13] !== 58 || bytes[b + 16] !== 58) return null;
  const year = digitsAt(bytes, b, 4);
  const month = digitsAt(bytes, b + 5, 2);
  const day = digitsAt(bytes, b + 8, 2);
  const hour = digitsAt(bytes, b + 11, 2);
  const minute = digitsAt(bytes, b + 14, 2);
  const second = digitsAt(bytes, b + 17, 2);
  if ((year | month | day | hour | minute | second) < 0) return null;
  let at = 19;
  let micros = 0;
  let beyondMicros = false;
  if (bytes[b + at] === 46 /* . */) {
    let stop = at + 1;
    while (stop < n && bytes[b + stop]! >= 48 && bytes[b + stop]! <= 57) stop++;
    const digits = stop - at - 1;
    if (digits === 0 || digits > 9) return null;
    for (let k = 0; k < 6; k++) micros = micros * 10 + (k < digits ? bytes[b + at + 1 + k]! - 48 : 0);
    for (let k = 6; k < digits; k++) if (bytes[b + at + 1 + k] !== 48) beyondMicros = true;
    at = stop;
  }
  let offsetMinutes = 0;
  const zone = at < n ? bytes[b + at] : -1;
  if ((zone === 43 || zone === 45) && at + 6 === n && bytes[b + at + 3] === 58) {
    const oh = digitsAt(bytes, b + at + 1, 2);
    const om = digitsAt(bytes, b + at + 4, 2);
    if ((oh | om) < 0) return null;
    offsetMinutes = zoneOffset(zone === 45, oh, om);
  } else if (zone !== 90 /* Z */ || at + 1 !== n) return null;
  return timestampFrom(year, month, day, hour, minute, second, micros, beyondMicros, offsetMinutes);
}

/** Minutes east of UTC of a `±HH:MM` zone, whichever way it was read. */
function zoneOffset(negative: boolean, hours: number, minutes: number): number {
  if (hours > 23 || minutes > 59) throw new ValueError('a zone offset between -23:59 and +23:59');
  return (negative ? -1 : 1) * (hours * 60 + minutes);
}

/**
 * Microseconds since the epoch of a date-time read either way, its fields checked against the calendar.
 * `beyondMicros`: the fraction has a non-zero digit past the sixth, which TIMESTAMPTZ cannot hold.
 */
function timestampFrom(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
  micros: number,
  beyondMicros: boolean,
  offsetMinutes: number,
): Int64 {
  const leap = month === 2 && (year % 4 !== 0 || (year % 100 === 0 && year % 400 !== 0));
  if (
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > (leap ? 28 : DAYS_IN_MONTH[month - 1]!) ||
    hour > 23 ||
    minute > 59 ||
    second > 59
  )
    throw new ValueError('a real calendar date-time (month, day, hour, minute or second out of range)');
  if (beyondMicros)
    throw new ValueError('a date-time with at most microsecond precision (TIMESTAMPTZ would truncate it)');
  const seconds =
    daysFromCivil(year, month, day) * 86400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60;
  const total = seconds * 1e6 + micros;
  return Math.abs(total) < TWO_53 ? total : BigInt(seconds) * 1_000_000n + BigInt(micros);
}

/** ISO 8601 date-time with a zone → microseconds since the epoch (UTC). */
export function toTimestamp(value: unknown): Int64 {
  if (typeof value !== 'string') throw new ValueError('an ISO 8601 date-time string with a zone');
  const bytes = asciiBytes(value);
  const common = bytes === null ? null : commonTimestampFromBytes(bytes, 0, value.length);
  if (common !== null) return common;
  const m = TIMESTAMP.exec(value);
  if (!m) throw new ValueError('an ISO 8601 date-time with a zone, e.g. 2024-05-01T10:00:00Z');
  const offsetMinutes = !m[8] && m[9] ? zoneOffset(m[9] === '-', Number(m[10]), Number(m[11])) : 0;
  return timestampFrom(
    Number(m[1]),
    Number(m[2]),
    Number(m[3]),
    Number(m[4]),
    Number(m[5]),
    m[6] === undefined ? 0 : Number(m[6]),
    Number((m[7] ?? '').slice(0, 6).padEnd(6, '0')),
    /[1-9]/.test((m[7] ?? '').slice(6)),
    offsetMinutes,
  );
}

/** The converter for a column type. The result goes straight into the column's staging buffer. */
export type Converted = Int64 | string | boolean | number | string[] | number[];

export function converterFor(type: ColumnType): (value: unknown) => Converted {
  switch (type) {
    case 'BIGINT':
      return toBigint;
    case 'DOUBLE':
      return toDouble;
    case 'BOOLEAN':
      return toBoolean;
    case 'VARCHAR':
    case 'DATE':
      return toText;
    case 'TIMESTAMPTZ':
      return toTimestamp;
    case 'JSON':
      return toJsonText;
    case 'VARCHAR[]':
      return toTextList;
    case 'BIGINT[]':
      return toBigintList;
    default: {
      const m = /^DECIMAL\((\d+),(\d+)\)$/.exec(type);
      if (!m) throw new Error(`no converter for column type ${type}`);
      const precision = Number(m[1]);
      const scale = Number(m[2]);
      return (value) => toDecimal(value, precision, scale);
    }
  }
}
