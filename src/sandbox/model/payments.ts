import type { PaymentDetails, Transaction } from '../../../schemas/index.js';
import { formatMinor, REPORT_CURRENCY, reportText } from './money.js';
import { type Rng, weighted } from './random.js';

/** Payment gateways of the seeded store. Two are retired (inactive) and only carry older subscriptions. */
export interface GatewayInfo {
  id: number;
  name: string;
  type: string;
  status: 'active' | 'inactive';
}

export const GATEWAYS: readonly GatewayInfo[] = [
  { id: 1, name: 'Stripe', type: 'stripe', status: 'active' },
  { id: 2, name: 'Stripe EU', type: 'stripe', status: 'active' },
  { id: 3, name: 'Braintree', type: 'braintree', status: 'active' },
  { id: 4, name: 'Adyen', type: 'adyen', status: 'active' },
  { id: 5, name: 'Authorize.net', type: 'authorize_net', status: 'inactive' },
  { id: 6, name: 'NMI Legacy', type: 'nmi', status: 'inactive' },
  { id: 7, name: 'PayPal', type: 'paypal', status: 'active' },
  { id: 8, name: 'Klarna', type: 'klarna', status: 'active' },
  { id: 9, name: 'TWINT', type: 'twint', status: 'active' },
];
const gateway = (id: number) => GATEWAYS[id - 1]!;

export type SubscriptionPaymentMethod =
  | 'apple_pay'
  | 'bankcard'
  | 'google_pay'
  | 'klarna'
  | 'paypal'
  | 'twint';
export type CardType =
  | 'visa'
  | 'mastercard'
  | 'american_express'
  | 'diners_club'
  | 'discover'
  | 'jcb'
  | 'maestro'
  | 'dankort';

/** Everything about how a subscription pays; only part of it is public (see subscriptionPaymentDetails). */
export interface PaymentProfile {
  method: SubscriptionPaymentMethod;
  cardType: CardType | null;
  gateway: GatewayInfo;
  firstSix: string | null;
  lastFour: string | null;
  token: string;
}

const drawMethod = weighted<SubscriptionPaymentMethod>([
  ['bankcard', 60],
  ['paypal', 14],
  ['apple_pay', 10],
  ['google_pay', 8],
  ['klarna', 5],
  ['twint', 3],
]);
const drawCardType = weighted<CardType>([
  ['visa', 44],
  ['mastercard', 30],
  ['american_express', 10],
  ['discover', 5],
  ['maestro', 4],
  ['jcb', 3],
  ['diners_club', 2],
  ['dankort', 2],
]);
const BIN_PREFIX: Record<CardType, string> = {
  visa: '4',
  mastercard: '5',
  american_express: '37',
  diners_club: '36',
  discover: '6011',
  jcb: '3528',
  maestro: '6759',
  dankort: '5019',
};

/**
 * Draws how a subscription pays. Card payments go through one of the card gateways; subscriptions started
 * in the first year of history may sit on a gateway that has since been retired.
 */
export function drawPaymentProfile(rng: Rng, startedInFirstYear: boolean): PaymentProfile {
  const method = drawMethod(rng);
  const token = `tok_${rng.hex(16)}`;
  if (method === 'paypal' || method === 'klarna' || method === 'twint') {
    const id = method === 'paypal' ? 7 : method === 'klarna' ? 8 : 9;
    return { method, cardType: null, gateway: gateway(id), firstSix: null, lastFour: null, token };
  }
  const cardType = drawCardType(rng);
  const prefix = BIN_PREFIX[cardType];
  const retired = startedInFirstYear && rng.chance(0.25);
  const gatewayId = retired ? rng.pick([5, 6]) : rng.pick([1, 1, 2, 3, 4]);
  return {
    method,
    cardType,
    gateway: gateway(gatewayId),
    firstSix: prefix + rng.digits(6 - prefix.length),
    lastFour: rng.digits(4),
    token,
  };
}

/**
 * The subscription's public payment_details (keys not shown by the spec, 2.11). Card type and gateway are
 * deliberately absent: the platform filters on them without returning them, so the sandbox keeps them in
 * hidden fields.
 */
export function subscriptionPaymentDetails(profile: PaymentProfile): Record<string, unknown> {
  if (profile.firstSix === null) {
    return profile.method === 'paypal' ? { paypal_vault_id: `vault_${profile.token.slice(4, 14)}` } : {};
  }
  return {
    bankcard_first_six: profile.firstSix,
    bankcard_last_four: profile.lastFour,
    card_token: profile.token,
  };
}

export function transactionPaymentDetails(profile: PaymentProfile, rng: Rng): PaymentDetails {
  const card = profile.firstSix !== null;
  return {
    bankcard_first_six: profile.firstSix,
    bankcard_last_four: profile.lastFour,
    card_token: card ? profile.token : null,
    gateway: { id: profile.gateway.id, name: profile.gateway.name, type: profile.gateway.type },
    is_3ds: card ? rng.chance(0.3) : false,
    optimized_3ds: card ? rng.chance(0.1) : false,
    paypal_vault_id: profile.method === 'paypal' ? `vault_${profile.token.slice(4, 14)}` : null,
    sca_flow: card ? rng.pick(['frictionless', 'challenge', 'exemption']) : null,
  };
}

export interface TransactionInput {
  id: number;
  amount: number;
  currency: string;
  atMs: number;
  type: 'sale' | 'authorization' | 'capture' | 'refund' | 'void';
  status: 'success' | 'failed' | 'pending';
  paymentMethod: string;
  details: PaymentDetails | null;
  isExternal?: boolean;
  isTest?: boolean;
  isDisputed?: boolean;
  isInitialRetry?: boolean;
  parentId?: number | null;
}

/** Renders a transaction; ids, codes and references derive from the id so the output is deterministic. */
export function makeTransaction(input: TransactionInput): Transaction {
  const failed = input.status === 'failed';
  const ref = (input.id * 2654435761) >>> 0;
  return {
    amount: formatMinor(input.amount, input.currency),
    auth_code: failed || input.isExternal ? '' : String(ref % 1_000_000).padStart(6, '0'),
    currency: input.currency,
    date_created: new Date(input.atMs).toISOString(),
    external_id: input.isExternal ? `ext-${input.id}` : `ch_${ref.toString(36)}${input.id.toString(36)}`,
    id: input.id,
    is_disputed: input.isDisputed ?? false,
    is_external: input.isExternal ?? false,
    is_initial_retry: input.isInitialRetry ?? false,
    is_test: input.isTest ?? false,
    network_transaction_id: input.isExternal ? '' : String(ref).padStart(15, '0'),
    parent_id: input.parentId ?? null,
    payment_details: input.details,
    payment_method: input.paymentMethod,
    report_values: { amount: reportText(input.amount, input.currency), currency: REPORT_CURRENCY },
    response_code: failed ? 402 : 100,
    statement_descriptor: 'DEMO STORE',
    status: input.status,
    type: input.type,
  };
}
