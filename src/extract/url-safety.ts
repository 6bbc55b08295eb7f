import { ERROR_CODES, StoreSyncError } from '../errors.js';

/**
 * Where the bearer token may go (docs/streams.md, "Safety"): only under the configured base URL (its origin
 * and its path), and over plain http only when that origin is this machine, because anywhere else the token
 * would cross a network in clear text.
 */

/**
 * True for `localhost`, 127.0.0.0/8 and ::1, the only hosts plain http is allowed to reach. Names under
 * `.localhost` (`shop.localhost`) are not: the client resolves them through the system resolver like any
 * name, and nothing guarantees that answer is a loopback address, so they need https like a remote host.
 */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.replace(/^\[|\]$/g, '').toLowerCase();
  if (host === 'localhost') return true;
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
      `base URL ${url.origin} uses plain http to a non-loopback host; use https (plain http is allowed only for 127.0.0.0/8, ::1 and localhost itself, not for names under .localhost)`,
      { details: { field: 'baseUrl' } },
    );
  }
  url.search = '';
  url.hash = '';
  if (!url.pathname.endsWith('/')) url.pathname += '/';
  return url;
}

/** The longest link (in bytes) saved as a cursor in `_sync_state` and requested; a longer `next` fails its stream. */
export const MAX_CURSOR_BYTES = 4096;

/** At most `max` characters of a text for a message: a link or cursor is never printed whole. */
export function truncated(text: string, max = 120): string {
  return text.length > max ? `${text.slice(0, max)}… (${text.length} characters)` : text;
}

/** A bounded form of a URL's path and query for messages and logs (a long cursor is cut short). */
export function printableLink(url: URL, max = 120): string {
  return truncated(printablePath(url), max);
}

/** Percent-encoded `/` or `\`: a server may decode them into path separators after the prefix check. */
const ENCODED_SEPARATOR = /%2f|%5c/i;

/**
 * Resolves a `next` link and refuses it unless it stays under the base URL: the same origin and a path
 * inside the base URL's path (`/api/…` for a base URL `https://shop.example.com/api/`). No request is made to
 * a refused URL, so the token never leaves for a host, or a part of a host, the operator did not configure.
 * Dot segments are resolved by the URL parser before the check (`/api/../admin/` is `/admin/`); encoded
 * separators, which a server could decode afterwards, are refused.
 */
export function checkSameOrigin(link: string, base: URL): URL {
  let url: URL;
  try {
    url = new URL(link, base);
  } catch (cause) {
    throw new StoreSyncError(
      ERROR_CODES.BAD_RESPONSE,
      `pagination link "${truncated(link)}" is not a valid URL`,
      { cause },
    );
  }
  if (url.origin !== base.origin || url.username || url.password) {
    throw new StoreSyncError(
      ERROR_CODES.FOREIGN_ORIGIN,
      `pagination link points to ${truncated(url.origin)}, not the configured origin ${base.origin}; refusing to send the token there`,
      { details: { path: truncated(url.pathname) } },
    );
  }
  if (!url.pathname.startsWith(base.pathname) || ENCODED_SEPARATOR.test(url.pathname)) {
    throw new StoreSyncError(
      ERROR_CODES.FOREIGN_ORIGIN,
      `pagination link points to ${truncated(url.pathname)}, outside the configured base path ${base.pathname}; refusing to send the token there`,
      { details: { path: truncated(url.pathname) } },
    );
  }
  return url;
}

/** The part of a URL that is safe to print: path and query, never the origin's credentials. */
export function printablePath(url: URL): string {
  return url.pathname + url.search;
}

/**
 * A request path for log lines, its `cursor` value left out: a cursor is an opaque position the server may
 * stop accepting, and lines that repeat it for every page grow with it (a cursor can be megabytes long).
 */
export function pathWithoutCursor(path: string): string {
  return path.replace(/([?&]cursor=)[^&]*/g, '$1…');
}
