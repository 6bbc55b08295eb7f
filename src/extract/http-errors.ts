import { ERROR_CODES, type ErrorCode, StoreSyncError } from '../errors.js';
import { redact } from '../log.js';
import { isLoopbackHost } from './url-safety.js';

/**
 * Turns an unwanted HTTP outcome into the error vocabulary. Terminal statuses get messages that say what
 * to fix; transient ones are marked so the client retries them.
 */

export interface RequestContext {
  operation: string;
  method: string;
  /** Path and query only (never the origin's credentials, never a header). */
  path: string;
  scopes: readonly string[];
  /** The base URL's origin (`https://shop.example.com`): which host and port a connection failure names. */
  origin?: string;
  /** Whether the operation has an id in its path: a 404 then may be the id's, not the base URL's. */
  hasId?: boolean;
}

const EXCERPT_LENGTH = 200;

/** A short, single-line, secret-free piece of a response body for error messages. */
export function bodyExcerpt(body: string): string {
  // Masked before and after the whitespace is flattened: a secret with a line break in it is one either way.
  const flat = redact(redact(body).replace(/\s+/g, ' ').trim());
  return flat.length > EXCERPT_LENGTH ? `${flat.slice(0, EXCERPT_LENGTH)}…` : flat;
}

export function errorForStatus(status: number, body: string, ctx: RequestContext): StoreSyncError {
  const excerpt = bodyExcerpt(body);
  const where = `${ctx.method} ${ctx.path}`;
  const details = {
    method: ctx.method,
    path: ctx.path,
    status,
    bodyExcerpt: excerpt,
    operation: ctx.operation,
  };
  const make = (code: ErrorCode, message: string, transient = false) =>
    new StoreSyncError(code, message, { transient, details });
  switch (status) {
    case 400:
      return make(
        ERROR_CODES.HTTP_BAD_REQUEST,
        `${where} was rejected as a bad request (400): ${excerpt || 'no details'}; check the query parameters or body sent to ${ctx.operation} against the API spec`,
      );
    case 401:
      return make(
        ERROR_CODES.HTTP_UNAUTHORIZED,
        `${where} was refused (401): the token is missing, expired or revoked; generate a new one in the store's API access settings and put it in the token environment variable`,
      );
    case 403:
      return make(
        ERROR_CODES.HTTP_FORBIDDEN,
        `${where} was forbidden (403): the token lacks the scope for ${ctx.operation}; grant it ${ctx.scopes.join(' or ')} in the store's API access settings`,
      );
    case 404:
      return make(
        ERROR_CODES.HTTP_NOT_FOUND,
        `${where} was not found (404); check that the base URL (baseUrl in the config, --base-url for a one-off job) is the store's administration API root${ctx.hasId === false ? '' : ', and that the id exists'}`,
      );
    case 429:
      return make(ERROR_CODES.HTTP_RATE_LIMITED, `${where} was rate limited (429)`, true);
  }
  if (status >= 500) {
    return make(ERROR_CODES.HTTP_SERVER, `${where} failed with a server error (${status}): ${excerpt}`, true);
  }
  return make(ERROR_CODES.HTTP_STATUS, `${where} answered an unexpected status ${status}: ${excerpt}`);
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT']);
const NETWORK_CODES = new Set([
  'ECONNRESET',
  'ECONNREFUSED',
  'ECONNABORTED',
  'EPIPE',
  'ETIMEDOUT',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'UND_ERR_SOCKET',
  'UND_ERR_CLOSED',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_REQ_CONTENT_LENGTH_MISMATCH',
]);

/** `host:port` of a failed connection: from the error when it says (the address it tried), else the base URL. */
function hostAndPort(error: unknown, ctx: RequestContext): string {
  const { address, port } = error as { address?: unknown; port?: unknown };
  if (typeof address === 'string' && port !== undefined)
    return `${address.includes(':') ? `[${address}]` : address}:${String(port)}`;
  if (!ctx.origin) return 'the server';
  const url = new URL(ctx.origin);
  return `${url.hostname}:${url.port || (url.protocol === 'https:' ? '443' : '80')}`;
}

/**
 * A TLS handshake answered in plain HTTP: OpenSSL reads the server's "HTTP/1.1 400" as a TLS record of an
 * unknown version. Node names it ERR_SSL_WRONG_VERSION_NUMBER, or EPROTO with OpenSSL's text.
 */
function plainHttpAnswer(code: unknown, text: string): boolean {
  return code === 'ERR_SSL_WRONG_VERSION_NUMBER' || /wrong version number/i.test(text);
}

/**
 * Classifies an error thrown by undici while sending or reading; anything unknown is terminal. The failures a
 * first run meets (a wrong scheme, port or host name) are told in one sentence with the fix.
 */
export function errorForTransport(error: unknown, ctx: RequestContext): StoreSyncError {
  if (error instanceof StoreSyncError) return error;
  const code = (error as { code?: unknown })?.code;
  const text = redact(error instanceof Error ? error.message : String(error));
  const details = { method: ctx.method, path: ctx.path, operation: ctx.operation, cause: code };
  const where = `${ctx.method} ${ctx.path}`;
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) {
    return new StoreSyncError(ERROR_CODES.TIMEOUT, `${where} timed out (${code}): ${text}`, {
      cause: error,
      transient: true,
      details,
    });
  }
  const origin = ctx.origin ? new URL(ctx.origin) : null;
  if (plainHttpAnswer(code, text)) {
    const fix =
      origin && isLoopbackHost(origin.hostname)
        ? 'use http:// instead of https:// in baseUrl'
        : 'set baseUrl to the port that serves https (plain http is allowed only to this machine)';
    return new StoreSyncError(
      ERROR_CODES.NETWORK,
      `${where} failed: ${hostAndPort(error, ctx)} speaks plain HTTP, not TLS (${String(code)}): ${fix}`,
      { cause: error, details: { ...details, setting: 'baseUrl' } },
    );
  }
  if (code === 'ENOTFOUND') {
    const host = (error as { hostname?: unknown }).hostname ?? origin?.hostname ?? 'the host';
    return new StoreSyncError(
      ERROR_CODES.NETWORK,
      `${where} failed: the host name ${String(host)} does not resolve (ENOTFOUND: DNS knows no such name); check baseUrl for a typo`,
      { cause: error, details: { ...details, setting: 'baseUrl' } },
    );
  }
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    const message =
      code === 'ECONNREFUSED'
        ? `${where} could not connect to ${hostAndPort(error, ctx)}: the connection was refused (ECONNREFUSED); is the server running, and are the host and port of baseUrl right?`
        : code === 'EAI_AGAIN'
          ? `${where} could not look up the host name ${origin?.hostname ?? ''} (EAI_AGAIN: DNS did not answer); check this machine's network and DNS, and baseUrl`
          : `${where} lost its connection (${code}): ${text}`;
    // The messages of a refused connection and a failed lookup say their fix: which setting it is in.
    const setting = code === 'ECONNREFUSED' || code === 'EAI_AGAIN' ? { setting: 'baseUrl' } : {};
    return new StoreSyncError(ERROR_CODES.NETWORK, message, {
      cause: error,
      transient: true,
      details: { ...details, ...setting },
    });
  }
  return new StoreSyncError(ERROR_CODES.NETWORK, `${where} failed: ${text}`, {
    cause: error,
    details,
  });
}
