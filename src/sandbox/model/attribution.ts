import type { Attribution } from '../../../schemas/index.js';
import { type Rng, rngFor } from './random.js';
import {
  AFFILIATES,
  FUNNELS,
  SUBAFFILIATES,
  UTM_CAMPAIGNS,
  UTM_CONTENTS,
  UTM_MEDIUMS,
  UTM_SOURCES,
  UTM_TERMS,
} from './vocab.js';

/** Support agents who take phone orders; they appear in attribution.agent and as ticket assignees. */
export const AGENTS = [
  { email: 'dana.support@demo-store.example', first_name: 'Dana', id: 9001, last_name: 'Reyes' },
  { email: 'kofi.sales@demo-store.example', first_name: 'Kofi', id: 9002, last_name: 'Mensah' },
  { email: 'ines.care@demo-store.example', first_name: 'Inès', id: 9003, last_name: 'Laurent' },
  { email: 'raj.sales@demo-store.example', first_name: 'Raj', id: 9004, last_name: 'Iyer' },
  { email: 'mia.care@demo-store.example', first_name: 'Mia', id: 9005, last_name: 'Kowalski' },
] as const;

const DIRECT: Attribution = {
  affiliate: null,
  agent: null,
  funnel: 'main',
  gclid: null,
  metadata: null,
  subaffiliate1: null,
  subaffiliate2: null,
  subaffiliate3: null,
  subaffiliate4: null,
  subaffiliate5: null,
  utm_campaign: null,
  utm_content: null,
  utm_medium: null,
  utm_source: null,
  utm_term: null,
};

function drawAttribution(rng: Rng): Attribution {
  if (rng.chance(0.25)) return { ...DIRECT, funnel: rng.chance(0.8) ? 'main' : rng.pick(FUNNELS) };
  const source = rng.pick(UTM_SOURCES);
  const affiliate = rng.chance(0.25) ? rng.pick(AFFILIATES) : null;
  const subs = affiliate ? rng.int(0, 5) : 0;
  const sub = (n: number) => (n <= subs ? `${rng.pick(SUBAFFILIATES)}${n}` : null);
  return {
    affiliate,
    agent: rng.chance(0.1) ? { ...rng.pick(AGENTS) } : null,
    funnel: rng.pick(FUNNELS),
    gclid: source === 'google' ? `Cj0K${rng.hex(20)}` : null,
    metadata: rng.chance(0.2) ? { landing_page: rng.pick(['/', '/quiz', '/offer', '/gift']) } : null,
    subaffiliate1: sub(1),
    subaffiliate2: sub(2),
    subaffiliate3: sub(3),
    subaffiliate4: sub(4),
    subaffiliate5: sub(5),
    utm_campaign: rng.pick(UTM_CAMPAIGNS),
    utm_content: rng.chance(0.7) ? rng.pick(UTM_CONTENTS) : null,
    utm_medium: rng.pick(UTM_MEDIUMS),
    utm_source: source,
    utm_term: rng.chance(0.5) ? rng.pick(UTM_TERMS) : null,
  };
}

/**
 * A pool of attribution objects shared by reference between subscriptions and orders: a store sees far
 * fewer distinct campaigns than customers, and sharing keeps a large store small in memory. Records that
 * hold one never modify it.
 */
export function seedAttributionPool(seed: number, size: number): Attribution[] {
  const rng = rngFor(seed, 'attribution-pool');
  const pool: Attribution[] = [];
  for (let i = 0; i < size; i++) pool.push(drawAttribution(rng));
  return pool;
}

/** Text, agent and metadata fields of an attribution given in a request body (shape not shown, 4.9). */
export const ATTRIBUTION_TEXT_FIELDS = [
  'affiliate',
  'funnel',
  'gclid',
  'subaffiliate1',
  'subaffiliate2',
  'subaffiliate3',
  'subaffiliate4',
  'subaffiliate5',
  'utm_campaign',
  'utm_content',
  'utm_medium',
  'utm_source',
  'utm_term',
] as const;

/** Attribution of an order created without one. */
export const EMPTY_ATTRIBUTION: Attribution = { ...DIRECT, funnel: null };
