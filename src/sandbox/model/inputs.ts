import type { Attribution, BillingAddress, ShippingAddress, User } from '../../../schemas/index.js';
import { ATTRIBUTION_TEXT_FIELDS } from './attribution.js';
import { SandboxRuleError } from './types.js';

/**
 * Readers for the nested request objects whose shape the spec does not show (4.9): addresses, user and
 * attribution. Known fields must have the right type (a 400 names the field otherwise); unknown fields
 * are ignored, as the platform ignores them.
 */

type Loose = Record<string, unknown>;

const invalid = (field: string, expected: string) =>
  new SandboxRuleError(400, 'invalid', `${field} must be ${expected}`, field);

function text(source: Loose, key: string, field: string): string | undefined {
  const value = source[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'string') throw invalid(`${field}.${key}`, 'a string');
  return value;
}

function object(value: unknown, field: string): Loose | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid(field, 'an object');
  return value as Loose;
}

const ADDRESS_TEXT = [
  'country',
  'first_name',
  'last_name',
  'line1',
  'line2',
  'line3',
  'line4',
  'phone_number',
  'postcode',
  'state',
] as const;

/** An address from a request body; `id` keeps the address id it replaces (or a new one). */
export function readAddress(value: unknown, field: string, id: number): ShippingAddress | null {
  const source = object(value, field);
  if (!source) return null;
  const address: ShippingAddress = { id };
  for (const key of ADDRESS_TEXT) address[key] = text(source, key, field) ?? '';
  if (address.country && !/^[A-Z]{2}$/.test(address.country)) {
    throw invalid(`${field}.country`, 'a two-letter ISO country code such as "US"');
  }
  const notes = text(source, 'notes', field);
  if (notes !== undefined) address.notes = notes;
  return address;
}

export const asBilling = (address: ShippingAddress | null): BillingAddress | null => {
  if (!address) return null;
  const { notes: _notes, ...billing } = address;
  return billing;
};

export function readUser(value: unknown, field: string): Partial<User> | null {
  const source = object(value, field);
  if (!source) return null;
  const user: Partial<User> = {};
  for (const key of [
    'email',
    'first_name',
    'last_name',
    'phone_number',
    'language',
    'ip',
    'user_agent',
  ] as const) {
    const v = text(source, key, field);
    if (v !== undefined) user[key] = v;
  }
  if (typeof user.email === 'string' && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(user.email)) {
    throw invalid(`${field}.email`, 'an email address');
  }
  if (source.accepts_marketing !== undefined) {
    if (typeof source.accepts_marketing !== 'boolean')
      throw invalid(`${field}.accepts_marketing`, 'true or false');
    user.accepts_marketing = source.accepts_marketing;
  }
  return user;
}

/** Attribution fields given in a body, merged over `base` (a PATCH changes only what it names). */
export function readAttribution(value: unknown, field: string, base: Attribution): Attribution | null {
  const source = object(value, field);
  if (!source) return null;
  const next: Attribution = { ...base };
  for (const key of ATTRIBUTION_TEXT_FIELDS) {
    if (key in source) next[key] = source[key] === null ? null : (text(source, key, field) ?? null);
  }
  if ('agent' in source) {
    const agent = object(source.agent, `${field}.agent`);
    if (agent && agent.id !== undefined && !Number.isInteger(agent.id))
      throw invalid(`${field}.agent.id`, 'an integer');
    next.agent = agent
      ? {
          email: text(agent, 'email', `${field}.agent`) ?? null,
          first_name: text(agent, 'first_name', `${field}.agent`) ?? null,
          id: (agent.id as number | undefined) ?? null,
          last_name: text(agent, 'last_name', `${field}.agent`) ?? null,
        }
      : null;
  }
  if ('metadata' in source) next.metadata = object(source.metadata, `${field}.metadata`);
  return next;
}

/** A voucher code or offer name given as a string or as an object with `code`/`name`. */
export function readCode(value: unknown, key: 'code' | 'name', field: string): string {
  if (typeof value === 'string' && value !== '') return value;
  const source = object(value, field);
  const code = source ? text(source, key, field) : undefined;
  if (!code) throw invalid(field, `a ${key} string or an object with "${key}"`);
  return code;
}
