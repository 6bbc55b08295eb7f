import { nested } from '../../fuzz/support/hostile.js';
import { page, product, type Responder, send, sendJson } from './hostile-server.js';

/**
 * The hostile responses of chaos scenario 4 (docs/reliability.md, "The scenarios"), each with what a
 * trustworthy client must make of it: a clear error (exit 1, a message naming the problem) or rejections
 * (exit 3, the bad records in `_rejected_records`, the good ones loaded), within a bounded number of
 * requests.
 */

export interface HostileCase {
  name: string;
  respond: Responder;
  /** Exit codes that count as a clear outcome. */
  codes: number[];
  /** What the error message or summary must say. */
  message?: RegExp;
  /** Most requests the server may see (the client's retries included): more is a loop. */
  maxHits: number;
  /** Live products and rejected records expected in the warehouse when the run completes. */
  loaded?: number;
  rejected?: number;
  /** Starts a second server on another origin whose `next` links point at it. */
  foreign?: boolean;
}

const HTML =
  '<!doctype html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>';
const cursorOf = (url: URL) => url.searchParams.get('cursor');

/** Retries are set to 2 for these runs: one logical request is at most 3 attempts; the bounds are upper ones. */
const ATTEMPTS = 3;

export function hostileCases(foreignOrigin: () => string): HostileCase[] {
  const jsonAs =
    (type: string | null): Responder =>
    (_req, res) =>
      send(res, 200, type, JSON.stringify(page([product(1)])));
  const mixed =
    (bad: Record<string, unknown>[]): Responder =>
    (_req, res) =>
      sendJson(res, page([product(1), ...bad, product(2)]));
  const variantPrice = (id: number, price: unknown) =>
    product(id, { variants: [{ id: id * 10, product_id: id, prices: [{ currency: 'EUR', price }] }] });
  return [
    {
      name: 'an HTML error page with status 200',
      respond: (_req, res) => send(res, 200, 'text/html; charset=utf-8', HTML),
      codes: [1],
      message: /content type "text\/html/,
      maxHits: 2 * ATTEMPTS,
    },
    {
      name: 'an HTML page labelled application/json',
      respond: (_req, res) => send(res, 200, 'application/json', HTML),
      codes: [1],
      message: /not complete JSON|malformed/,
      maxHits: 2 * ATTEMPTS,
    },
    {
      name: 'a JSON page sent as text/plain',
      respond: jsonAs('text/plain'),
      codes: [1],
      message: /content type "text\/plain"/,
      maxHits: 2 * ATTEMPTS,
    },
    {
      name: 'a JSON page sent as application/xml',
      respond: jsonAs('application/xml'),
      codes: [1],
      message: /content type "application\/xml"/,
      maxHits: 2 * ATTEMPTS,
    },
    {
      name: 'a JSON page with no content type',
      respond: jsonAs(null),
      codes: [1],
      message: /content type "none"/,
      maxHits: 2 * ATTEMPTS,
    },
    {
      name: 'a next link to a foreign origin',
      respond: (_req, res) =>
        sendJson(res, page([product(1)], `${foreignOrigin()}/api/products/?cursor=b2Zm`)),
      codes: [1, 3],
      message: /origin/i,
      maxHits: 2 * ATTEMPTS,
      foreign: true,
    },
    {
      name: 'a next that repeats the page just read',
      respond: (_req, res, url, origin) => {
        const self = `${origin}/api/products/?cursor=QQ`;
        sendJson(res, page([product(cursorOf(url) ? 2 : 1)], self));
      },
      codes: [1, 3],
      message: /already read|loop/i,
      maxHits: 4 * ATTEMPTS,
    },
    {
      name: 'a next that cycles back to an earlier page',
      respond: (_req, res, url, origin) => {
        const next = cursorOf(url) === 'Qg' ? 'QQ' : 'Qg';
        sendJson(
          res,
          page([product(cursorOf(url) === 'Qg' ? 3 : 2)], `${origin}/api/products/?cursor=${next}`),
        );
      },
      codes: [1, 3],
      message: /already read|loop/i,
      maxHits: 5 * ATTEMPTS,
    },
    {
      name: 'a page of 50,000 records',
      respond: (_req, res) => sendJson(res, page(Array.from({ length: 50_000 }, (_, i) => product(i + 1)))),
      codes: [0],
      maxHits: 2 * ATTEMPTS,
      loaded: 50_000,
      rejected: 0,
    },
    {
      name: 'deeply nested junk inside one record',
      respond: (_req, res) =>
        send(
          res,
          200,
          'application/json',
          // Written as text: 20,000 levels is more than JSON.stringify can write, not more than a server can
          // send.
          `{"next":null,"previous":null,"results":[${JSON.stringify(product(1))},{"id":2,"title":"deep","metadata":{"junk":${'['.repeat(20_000)}${']'.repeat(20_000)}}},${JSON.stringify(product(3))}]}`,
        ),
      codes: [3],
      maxHits: 2 * ATTEMPTS,
      loaded: 2,
      rejected: 1,
    },
    {
      name: 'deeply nested junk instead of records',
      respond: (_req, res) => sendJson(res, page([product(1), nested(500, false), nested(500, true)])),
      codes: [3],
      maxHits: 2 * ATTEMPTS,
      loaded: 1,
      rejected: 2,
    },
    {
      name: 'ids that are not numbers',
      respond: mixed([
        product(0, { id: 'abc' }),
        product(0, { id: '12' }),
        product(0, { id: 1.5 }),
        product(0, { id: null }),
        product(0, { id: { value: 7 } }),
        product(5, { variants: [{ id: 'v-1', prices: [] }] }),
      ]),
      codes: [3],
      message: /rejections/,
      maxHits: 2 * ATTEMPTS,
      loaded: 2,
      rejected: 6,
    },
    {
      name: 'money such as "1e5" and "NaN"',
      respond: mixed([
        variantPrice(3, '1e5'),
        variantPrice(4, 'NaN'),
        variantPrice(5, 'Infinity'),
        variantPrice(6, '1,000.00'),
        variantPrice(7, 12.5),
        variantPrice(8, '99999999999999999999.99'),
      ]),
      codes: [3],
      message: /rejections/,
      maxHits: 2 * ATTEMPTS,
      // A price that does not fit is refused alone (a field rejection): every product loads.
      loaded: 8,
      rejected: 6,
    },
    {
      name: 'timestamps that are not ISO 8601',
      respond: mixed([
        product(3, { date_created: '2024/01/01 10:00' }),
        product(4, { date_created: 'yesterday' }),
        product(5, { date_created: 1_700_000_000 }),
        product(6, { date_updated: '2024-13-45T25:61:61Z' }),
        product(7, { date_updated: '2024-05-01T10:00:00' }),
        product(8, { date_updated: '2024-02-30T00:00:00Z' }),
      ]),
      codes: [3],
      message: /rejections/,
      maxHits: 2 * ATTEMPTS,
      // A bad date_created is refused alone (the product loads); a bad date_updated, the version, whole.
      loaded: 5,
      rejected: 6,
    },
  ];
}
