import type { BillingAddress, ShippingAddress, User } from '../../../schemas/index.js';
import { type Rng, rngFor, weighted } from './random.js';
import { FIRST_NAMES, LAST_NAMES, REGIONS, type Region, STREETS, USER_AGENTS } from './vocab.js';

/** A shopper: the `user` object plus the default addresses reused by their subscriptions and orders. */
export interface Customer {
  user: User;
  billing: BillingAddress;
  shipping: ShippingAddress;
  region: Region;
}

const pickRegion = weighted(REGIONS.map((region) => [region, region.weight] as const));
const LETTERS = 'ABCDEFGHJKLMNPRSTUVWXYZ';

export function postcodeFor(rng: Rng, pattern: string): string {
  let out = '';
  for (const ch of pattern) {
    if (ch === '9') out += String(rng.int(0, 9));
    else if (ch === 'A') out += LETTERS[rng.int(0, LETTERS.length - 1)];
    else out += ch;
  }
  return out;
}

const emailParts = new Map<string, string>();
/** "Müller" → "muller": names come from a short list, so each is folded once. */
const emailPart = (name: string) => {
  let part = emailParts.get(name);
  if (part === undefined) {
    part = name
      .normalize('NFD')
      .toLowerCase()
      .replace(/[^a-z]/g, '');
    emailParts.set(name, part);
  }
  return part;
};

/**
 * Every customer is generated from its own random stream, so customer 7 is the same whatever the scale.
 * User ids are 1..count; billing and shipping address ids are 2·id−1 and 2·id.
 */
export function makeCustomer(seed: number, id: number): Customer {
  const rng = rngFor(seed, 'customer', id);
  const region = pickRegion(rng);
  const first = rng.pick(FIRST_NAMES);
  const last = rng.pick(LAST_NAMES);
  const phone = `${region.phonePrefix}${rng.int(2, 9)}${rng.digits(8)}`;
  const user: User = {
    accepts_marketing: rng.chance(0.6),
    email: `${emailPart(first)}.${emailPart(last)}.${id}@example.com`,
    first_name: first,
    id,
    ip: `${rng.int(11, 223)}.${rng.int(0, 255)}.${rng.int(0, 255)}.${rng.int(1, 254)}`,
    language: region.language,
    last_name: last,
    phone_number: phone,
    user_agent: rng.pick(USER_AGENTS),
  };
  const billing: BillingAddress = {
    country: region.country,
    first_name: first,
    id: id * 2 - 1,
    last_name: last,
    line1: `${rng.int(1, 240)} ${rng.pick(STREETS)}`,
    line2: rng.chance(0.3) ? `Apt ${rng.int(1, 90)}` : '',
    line3: '',
    line4: region.city,
    phone_number: phone,
    postcode: postcodeFor(rng, region.postcode),
    state: region.state,
  };
  // Most people ship to where they pay; some send to work or family.
  const shipsElsewhere = rng.chance(0.15);
  const shipping: ShippingAddress = {
    ...billing,
    id: id * 2,
    line1: shipsElsewhere ? `${rng.int(1, 240)} ${rng.pick(STREETS)}` : billing.line1,
    notes: rng.chance(0.2) ? rng.pick(['Leave at the door', 'Ring twice', 'Deliver to reception']) : '',
  };
  return { user, billing, shipping, region };
}

export function seedCustomers(seed: number, count: number): Customer[] {
  const customers: Customer[] = new Array(count);
  for (let i = 0; i < count; i++) customers[i] = makeCustomer(seed, i + 1);
  return customers;
}
