import { ERROR_CODES, StoreSyncError } from '../errors.js';

/**
 * Where the bearer token may go (DESIGN.md §4.4): only to the configured base URL's origin, and over
 * plain http only when that origin is this machine, because anywhere else the token would cross a
 * network in clear text.
 */

/** True for localhost, 127.0.0.0/8 and ::1, the only hosts plain http is allowed to reach. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  if (host === '::1' || host === '0:0:0:0:0:0:0:1') return true;
  if (host.startsWith('::ffff:')) return isLoopbackHost(host.slice('::ffff:'.length));
  const octets = host.split('.');
  return (
    octets.length === 4 && octets[0] === '127' && octets.every((o) => /^\d{1,3}$/.test(o) && Number(o) <= 255)
  );
}

/** Parses and checks the configured base URL; the result always ends with `/` so paths join under it. */
export function parseBaseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch (cause) {
    throw new StoreSyncError(
      ERROR_CODES.UNSAFE_URL,
      `base URL "${raw}" is not an absolute URL; expected e.g. https://store.example.com/api/`,
      { cause, details: { field: 'baseUrl' } },
    );
  }
  if (url.username || url.password) {
    throw new StoreSyncError(
      ERROR_CODES.UNSAFE_URL,
      'base URL must not carry credentials; give the token through its environment variable instead',
      { details: { field: 'baseUrl' } },
    );
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new StoreSyncError(ERROR_CODES.UNSAFE_URL, `base URL must use https, not ${url.protocol}`, {
      details: { field: 'baseUrl' },
    });
  }
  if (url.protocol === 'http:' && !isLoopbackHost(url.hostname)) {
    throw new StoreSyncError(
      ERROR_CODES.UNSAFE_URL,
      `base URL ${url.origin} uses plain http to a non-loopback host; use https (plain http is allowed only for 127.0.0.1, ::1 and localhost)`,
      { details: { field: 'baseUrl' } },
    );
  }
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/**
 * Resolves a `next` link and refuses it unless it stays on the base URL's origin. No request is made
 * to a refused URL, so the token never leaves for a host the operator did not configure.
 */
export function checkSameOrigin(link: string, base: URL): URL {
  let url: URL;
  try {
    url = new URL(link, base);
  } catch (cause) {
    throw new StoreSyncError(ERROR_CODES.BAD_RESPONSE, `pagination link "${link}" is not a valid URL`, {
      cause,
    });
  }
  if (url.origin !== base.origin || url.username || url.password) {
    throw new StoreSyncError(
      ERROR_CODES.FOREIGN_ORIGIN,
      `pagination link points to ${url.origin}, not the configured origin ${base.origin}; refusing to send the token there`,
      { details: { path: url.pathname } },
    );
  }
  return url;
}

/** The part of a URL that is safe to print: path and query, never the origin's credentials. */
export function printablePath(url: URL): string {
  return url.pathname + url.search;
}
