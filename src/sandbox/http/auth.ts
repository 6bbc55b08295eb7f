import { SCOPES, type Scope } from '../../../schemas/index.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import { HttpError } from './errors.js';

/** Bearer tokens and scopes (spec part 5). */

export interface TokenSpec {
  token: string;
  scopes: readonly Scope[];
}

export const DEFAULT_TOKEN = 'sandbox-token';

const KNOWN_SCOPES = new Set<string>(SCOPES);
const TOKEN_TEXT = /^[A-Za-z0-9._~+/=-]+$/;

/**
 * Parses `VALUE[:scope,scope…]`. Only the FIRST colon separates the token from its scopes, because scope
 * names contain colons themselves (`T2:catalogue:read,orders:read`). A token without scopes holds all of them.
 */
export function parseTokenSpec(text: string): TokenSpec {
  const colon = text.indexOf(':');
  const token = colon < 0 ? text : text.slice(0, colon);
  if (!TOKEN_TEXT.test(token)) {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `--token: the token value must be non-empty and use only letters, digits and . _ ~ + / = - (got "${text}")`,
    );
  }
  if (colon < 0) return { token, scopes: SCOPES };
  const names = text
    .slice(colon + 1)
    .split(',')
    .map((s) => s.trim());
  const unknown = names.filter((name) => !KNOWN_SCOPES.has(name));
  if (unknown.length) {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `--token ${token}: unknown scope ${unknown.map((s) => `"${s}"`).join(', ')}; known scopes: ${SCOPES.join(', ')}`,
    );
  }
  return { token, scopes: [...new Set(names)] as Scope[] };
}

/** Normalizes the tokens option: strings use the CLI grammar; none at all means the default all-scope token. */
export function resolveTokens(tokens: readonly (TokenSpec | string)[] | undefined): TokenSpec[] {
  const specs = (tokens ?? []).map((t) => (typeof t === 'string' ? parseTokenSpec(t) : t));
  if (specs.length === 0) return [{ token: DEFAULT_TOKEN, scopes: SCOPES }];
  const seen = new Set<string>();
  for (const spec of specs) {
    if (seen.has(spec.token)) {
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `--token ${spec.token} is given twice; give each token once`,
      );
    }
    seen.add(spec.token);
    for (const scope of spec.scopes) {
      if (!KNOWN_SCOPES.has(scope)) {
        throw new StoreSyncError(ERROR_CODES.USAGE, `token ${spec.token}: unknown scope "${scope}"`);
      }
    }
  }
  return specs;
}

const BEARER = /^Bearer +(\S+) *$/i;

/** Finds the token a request carries; every failure is a 401 that never echoes the presented value. */
export function authenticate(header: string | undefined, tokens: ReadonlyMap<string, TokenSpec>): TokenSpec {
  const challenge = { 'WWW-Authenticate': 'Bearer realm="sandbox"' };
  if (!header) {
    throw new HttpError(
      401,
      'unauthorized',
      'Missing Authorization header: send "Authorization: Bearer <token>".',
      undefined,
      challenge,
    );
  }
  const match = BEARER.exec(header);
  if (!match) {
    throw new HttpError(
      401,
      'unauthorized',
      'Malformed Authorization header: expected "Bearer <token>".',
      undefined,
      challenge,
    );
  }
  const spec = tokens.get(match[1]!);
  if (!spec) {
    throw new HttpError(401, 'unauthorized', 'Invalid bearer token.', undefined, {
      'WWW-Authenticate': 'Bearer realm="sandbox", error="invalid_token"',
    });
  }
  return spec;
}

/**
 * Where the spec lists two scopes for an operation it does not say whether one or both are needed (part 5);
 * the sandbox accepts a token holding EITHER one, the permissive reading (documented in docs/sandbox.md).
 */
export function authorize(spec: TokenSpec, required: readonly Scope[]): void {
  if (required.some((scope) => spec.scopes.includes(scope))) return;
  const wanted = required.join(' or ');
  throw new HttpError(403, 'forbidden', `This operation requires the scope ${wanted}; the token lacks it.`);
}
