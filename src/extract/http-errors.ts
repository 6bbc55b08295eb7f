import { ERROR_CODES, type ErrorCode, StoreSyncError } from '../errors.js';
import { redact } from '../log.js';

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
        `${where} was not found (404); check that the base URL is the store's administration API root, and that the id exists`,
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

/** Classifies an error thrown by undici while sending or reading; anything unknown is terminal. */
export function errorForTransport(error: unknown, ctx: RequestContext): StoreSyncError {
  if (error instanceof StoreSyncError) return error;
  const code = (error as { code?: unknown })?.code;
  const text = redact(error instanceof Error ? error.message : String(error));
  const details = { method: ctx.method, path: ctx.path, operation: ctx.operation, cause: code };
  if (typeof code === 'string' && TIMEOUT_CODES.has(code)) {
    return new StoreSyncError(ERROR_CODES.TIMEOUT, `${ctx.method} ${ctx.path} timed out (${code}): ${text}`, {
      cause: error,
      transient: true,
      details,
    });
  }
  if (typeof code === 'string' && NETWORK_CODES.has(code)) {
    return new StoreSyncError(
      ERROR_CODES.NETWORK,
      code === 'ECONNREFUSED'
        ? `${ctx.method} ${ctx.path} could not connect: nothing accepts connections at that address (${code}); check baseUrl and that the API is up: ${text}`
        : `${ctx.method} ${ctx.path} lost its connection (${code}): ${text}`,
      {
        cause: error,
        transient: true,
        details,
      },
    );
  }
  return new StoreSyncError(ERROR_CODES.NETWORK, `${ctx.method} ${ctx.path} failed: ${text}`, {
    cause: error,
    details,
  });
}
