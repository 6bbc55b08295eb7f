import * as z from 'zod';

/**
 * Building blocks shared by every resource schema.
 *
 * Responses are parsed leniently on *presence* (a field may be absent or null: the spec never
 * says which response fields are required) but strictly on *type*: when a value is there it must
 * be what the spec says, because the warehouse stores it in a typed column.
 */

/** Decimal text as the API carries money ("12.50", "-0.5", ".5"); no exponent, no NaN. */
export const DECIMAL_TEXT = /^-?(?:\d+(?:\.\d*)?|\.\d+)$/;
export const decimalText = z
  .string()
  .regex(DECIMAL_TEXT, { message: 'expected decimal text such as "12.50"' });

/** The request-side decimal pattern from parts 4 and 8 (shipping_price, unit_cost). */
export const REQUEST_DECIMAL = /^-?\d{0,10}(?:\.\d{0,2})?$/;
export const requestDecimal = z
  .string()
  .regex(REQUEST_DECIMAL, { message: 'expected at most 10 integer digits and 2 decimals, e.g. "12.50"' });

/** ISO 8601 date-time with a zone (the API speaks UTC). */
export const timestamp = z.iso.datetime({
  offset: true,
  message: 'expected an ISO 8601 date-time with a zone',
});

/** Query dates: YYYY-MM-DD that name a real calendar day. */
export const queryDate = z.iso.date({ message: 'expected a date as YYYY-MM-DD' });

/** Integer ids. JSON numbers beyond 2^53 cannot round-trip through JSON.parse, so they are refused. */
// The custom message only replaces the type error; range checks added later (.min) keep their own.
const typeMessage = (message: string) => (issue: { code?: string }) =>
  issue.code === 'invalid_type' || issue.code === 'invalid_format' ? message : undefined;
export const intId = z.int({ error: typeMessage('expected an integer id') });
export const integer = z.int({ error: typeMessage('expected an integer') });
export const url = z.string();

/** A response field that may be missing or null. */
export function opt<T extends z.ZodType>(schema: T) {
  return schema.nullish();
}

/** Free-form JSON object (metadata, payment_details). */
export const freeObject = z.record(z.string(), z.unknown());

/** Open enum: the spec does not list response values (2.11), so any string is kept. */
export const openEnum = z.string();
