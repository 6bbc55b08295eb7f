import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient, type ClientOptions } from '../../src/extract/client.js';
import { captureLogger, sendJson, startServer, type TestServer } from './helpers.js';

const TOKEN = 'client-test-token-5f0c9e';
const FAST_RETRY = { baseDelayMs: 1, maxDelayMs: 5 };
const servers: TestServer[] = [];
const clients: ApiClient[] = [];
const { logger, lines } = captureLogger();
const errorTexts: string[] = [];

async function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(handler);
  servers.push(server);
  return server;
}

function client(server: TestServer, options: Partial<ClientOptions> = {}): ApiClient {
  const c = new ApiClient({
    baseUrl: `${server.origin}/api/`,
    token: TOKEN,
    rateLimit: 0,
    retry: FAST_RETRY,
    logger,
    ...options,
  });
  clients.push(c);
  return c;
}

/** Runs `fn`, expects a StoreSyncError, and keeps its text for the no-token check. */
async function failure(fn: () => Promise<unknown>): Promise<StoreSyncError> {
  try {
    await fn();
  } catch (error) {
    assert.ok(error instanceof StoreSyncError, `expected a StoreSyncError, got ${String(error)}`);
    errorTexts.push(error.message, JSON.stringify(error.details), String((error.cause as Error)?.message));
    return error;
  }
  assert.fail('expected a failure');
}

const page = { next: null, previous: null, results: [{ id: 1, name: 'Main', address: { country: 'NL' } }] };

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
  // The token never appears in a log line or an error, whatever happened above.
  assert.ok(lines.length > 0);
  for (const text of [...lines, ...errorTexts]) assert.ok(!text.includes(TOKEN), `token leaked: ${text}`);
});

describe('ApiClient', () => {
  it('sends the bearer token and each operation its own API version, and parses with the schemas', async () => {
    const server = await serve((req, res) => {
      if (req.url?.startsWith('/api/orders/')) {
        sendJson(res, 201, { number: '1001', lines: [], currency: 'EUR', total_incl_tax: '12.50' });
      } else sendJson(res, 200, page);
    });
    const api = client(server);
    const locations = await api.call('listLocations', {});
    assert.equal(locations.results[0]?.name, 'Main');
    await api.listPage(
      'listSubscriptions',
      api.operationUrl('listSubscriptions', {}, { status: ['past_due', 'retrying'] }).href,
    );
    const order = await api.call('createOrder', { body: { lines: [{ product_id: 3, quantity: 1 }] } });
    assert.equal(order.number, '1001');
    const [first, second, third] = server.hits;
    assert.equal(first?.headers.authorization, `Bearer ${TOKEN}`);
    assert.equal(first?.headers['x-platform-api-version'], '2024-04-01');
    assert.equal(second?.url, '/api/subscriptions/?status=past_due%2Cretrying');
    assert.equal(second?.headers['x-platform-api-version'], '2023-02-10');
    assert.equal(third?.method, 'POST');
    assert.equal(third?.headers['content-type'], 'application/json');
    assert.equal(api.stats.requests, 3);
  });

  it('refuses plain http except to loopback, and credentials in the URL', () => {
    for (const bad of [
      'http://shop.example.com/api/',
      'http://10.0.0.1/',
      'ftp://127.0.0.1/',
      'https://u:p@shop.example.com/',
    ]) {
      assert.throws(
        () => new ApiClient({ baseUrl: bad, token: TOKEN }),
        (e: unknown) => e instanceof StoreSyncError && e.code === ERROR_CODES.UNSAFE_URL,
        bad,
      );
    }
    for (const good of [
      'https://shop.example.com/api',
      'http://127.0.0.1:9/',
      'http://127.9.8.7/',
      'http://[::1]:8080/',
      'http://localhost/',
    ]) {
      const api = new ApiClient({ baseUrl: good, token: TOKEN });
      clients.push(api);
      assert.ok(api.baseUrl.pathname.endsWith('/'), good);
    }
  });

  it('retries 5xx, resets, truncated bodies, HTML pages and stalls, then succeeds', async () => {
    const faults = ['500', 'reset', 'truncate', 'html', 'stall', '503'];
    const server = await serve((_req, res, hit) => {
      const fault = faults[hit - 1];
      if (fault === '500' || fault === '503') return sendJson(res, Number(fault), { error: 'boom' });
      if (fault === 'reset') return res.socket?.destroy();
      if (fault === 'truncate') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '500' });
        res.write('{"next": null, "resu');
        return setTimeout(() => res.socket?.destroy(), 5);
      }
      if (fault === 'html') {
        res.writeHead(200, { 'content-type': 'text/html' });
        return res.end('<html><body>Maintenance</body></html>');
      }
      if (fault === 'stall') return setTimeout(() => sendJson(res, 200, page), 2_000);
      sendJson(res, 200, page);
    });
    const api = client(server, { retry: { ...FAST_RETRY, maxRetries: 6 }, timeouts: { headersMs: 300 } });
    const result = await api.call('listLocations', {});
    assert.equal(result.results.length, 1);
    assert.equal(server.hits.length, 7);
    assert.equal(api.stats.retries, 6);
    assert.ok(lines.some((l) => l.includes('"http.retry"') && l.includes('"timeout"')));
  });

  it('gives up after the retry bound with code, method, path, status and a body excerpt', async () => {
    const server = await serve((_req, res) => sendJson(res, 500, { error: 'database on fire' }));
    const api = client(server, { retry: { ...FAST_RETRY, maxRetries: 3 } });
    const error = await failure(() => api.call('listProducts', { query: { title: 'mug' } }));
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.equal(error.details.method, 'GET');
    assert.equal(error.details.path, '/api/products/?title=mug');
    assert.equal(error.details.status, 500);
    assert.match(String(error.details.bodyExcerpt), /database on fire/);
    assert.match(error.message, /after 4 attempts/);
    assert.equal(server.hits.length, 4);
  });

  it('says that nothing listens, when a connection is refused, rather than that it was lost', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, page));
    await server.close();
    const api = client(server, { retry: { ...FAST_RETRY, maxRetries: 1 } });
    const error = await failure(() => api.call('listLocations', {}));
    assert.match(
      error.message,
      /GET \/api\/locations\/ could not connect to 127\.0\.0\.1:\d+: the connection was refused \(ECONNREFUSED\); is the server running, and are the host and port of baseUrl right\?/,
    );
    assert.doesNotMatch(error.message, /lost its connection/);
  });

  it('treats 400, 401, 403 and 404 as terminal, with messages that say what to fix', async () => {
    const statuses = [400, 401, 403, 404];
    const server = await serve((_req, res, hit) => sendJson(res, statuses[hit - 1]!, { detail: 'nope' }));
    const api = client(server);
    const bad = await failure(() => api.call('listMetadata', { query: { type: 'nonsense' } }));
    assert.equal(bad.code, ERROR_CODES.HTTP_BAD_REQUEST);
    assert.match(bad.message, /query parameters or body/);
    const unauthorized = await failure(() => api.call('listMetadata', {}));
    assert.equal(unauthorized.code, ERROR_CODES.HTTP_UNAUTHORIZED);
    assert.match(unauthorized.message, /token/);
    const forbidden = await failure(() => api.call('getFulfillmentOrder', { params: { id: 7 } }));
    assert.equal(forbidden.code, ERROR_CODES.HTTP_FORBIDDEN);
    assert.match(forbidden.message, /fulfillment_service:read or fulfillment_orders:read/);
    const missing = await failure(() => api.call('getFulfillmentOrder', { params: { id: 8 } }));
    assert.equal(missing.code, ERROR_CODES.HTTP_NOT_FOUND);
    assert.match(missing.message, /base URL/);
    assert.equal(server.hits.length, 4, 'no retries of terminal statuses');
  });

  it('does not resend a POST after a server error (it may have been applied), but does after a 429', async () => {
    const server = await serve((_req, res, hit) =>
      hit === 1
        ? sendJson(res, 429, {}, { 'retry-after': '0' })
        : sendJson(res, 502, { error: 'bad gateway' }),
    );
    const api = client(server);
    const error = await failure(() => api.call('createCart', { body: { lines: [] } }));
    assert.equal(error.code, ERROR_CODES.HTTP_SERVER);
    assert.equal(server.hits.length, 2);
  });

  it('honours Retry-After on a 429 and then slows the limiter', async () => {
    const server = await serve((_req, res, hit) =>
      hit === 1
        ? sendJson(res, 429, { detail: 'slow down' }, { 'retry-after': '1' })
        : sendJson(res, 200, page),
    );
    const api = client(server, { rateLimit: 50 });
    await api.call('listLocations', {});
    assert.equal(server.hits.length, 2);
    assert.equal(api.stats.rateLimited, 1);
    assert.ok(api.pacer.stats.pausedMs >= 990, `paused ${api.pacer.stats.pausedMs} ms`);
    assert.ok(api.pacer.currentRps() < 50, 'the rate is reduced after a 429');
  });

  it('rejects a response that does not match the operation schema, naming the field', async () => {
    const server = await serve((_req, res) => sendJson(res, 200, { id: 'not-a-number', name: 'X' }));
    const api = client(server);
    const error = await failure(() => api.call('createLocation', { body: { address: { country: 'NL' } } }));
    assert.equal(error.code, ERROR_CODES.BAD_RESPONSE);
    assert.match(error.message, /id: expected an integer id/);
  });
});
