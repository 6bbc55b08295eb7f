import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { request } from 'undici';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { type ApiClient, probeStreamAccess, STREAMS } from '../../src/extract/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { captureLogger, startServer, type TestServer } from './helpers.js';
import { ALL_STREAMS, type SyncResult, sandboxClient, syncStreams, truth } from './sandbox-helpers.js';

const TOKEN = 'resilience-secret-token-4be1';
const NOW = new Date('2026-01-01T08:00:00Z');
const { logger, lines } = captureLogger();
const errorTexts: string[] = [];
const sandboxes: Sandbox[] = [];
const servers: TestServer[] = [];
const clients: ApiClient[] = [];

async function sandbox(options: Parameters<typeof startSandbox>[0]): Promise<Sandbox> {
  const s = await startSandbox({
    seed: 11,
    scale: 120,
    rateLimit: 0,
    tokens: [TOKEN],
    clock: () => NOW,
    ...options,
  });
  sandboxes.push(s);
  return s;
}

function client(
  s: Sandbox,
  options: Parameters<typeof sandboxClient>[2] = {},
  baseUrl = s.baseUrl,
): ApiClient {
  const c = sandboxClient(s, logger, { token: TOKEN, baseUrl, ...options });
  clients.push(c);
  return c;
}

function keepErrorTexts(result: SyncResult): void {
  for (const error of Object.values(result.errors)) {
    errorTexts.push(String(error), JSON.stringify((error as StoreSyncError).details ?? {}));
  }
}

function assertComplete(s: Sandbox, result: SyncResult, streams = ALL_STREAMS): void {
  for (const name of streams) {
    assert.equal(result.errors[name], undefined, `${name} failed: ${String(result.errors[name])}`);
    const expected = truth(s, name);
    assert.deepEqual([...result.warehouses[name].rows.keys()].sort(), [...expected.keys()].sort(), name);
  }
}

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(sandboxes.map((s) => s.close()));
  // Over everything this file logged and every error it saw: the token never appears.
  assert.ok(lines.length > 50, `expected a busy log, got ${lines.length} lines`);
  for (const text of [...lines, ...errorTexts]) assert.ok(!text.includes(TOKEN), `token leaked: ${text}`);
});

describe('resilience', () => {
  it('a mix of 429 storms, 5xx, resets, truncated bodies and stalls still ends complete', async () => {
    const faults =
      '500:0.04,502:0.02,503:0.02,429:0.02,reset:0.04,truncate:0.04,stall:0.02,stall-ms:5000,seed:5';
    const s = await sandbox({ pageSize: 2, faults });
    const api = client(s, {
      timeouts: { headersMs: 400 },
      retry: { baseDelayMs: 5, maxDelayMs: 50, maxRetries: 8 },
    });
    const result = await syncStreams({ client: api, now: NOW, logger });
    keepErrorTexts(result);
    assertComplete(s, result);
    const byStatus = s.stats().byStatus;
    const injected = ['500', '502', '503', '429', 'reset', 'aborted'].filter((k) => (byStatus[k] ?? 0) > 0);
    assert.ok(injected.length >= 4, `faults seen: ${JSON.stringify(byStatus)}`);
    assert.ok(api.stats.retries >= 5, `retries: ${api.stats.retries}`);
    assert.ok(lines.some((l) => l.includes('http.retry')));
  });

  it('a persistent 500 fails that stream only, with a clear error; the others complete', async () => {
    const s = await sandbox({ pageSize: 20 });
    // A loopback proxy that breaks one route and passes the rest through, links rewritten to itself.
    let proxyOrigin = '';
    const proxy = await startServer(async (req, res) => {
      if (req.url?.includes('/subscriptions/')) {
        res.writeHead(500, { 'content-type': 'application/json' });
        return res.end('{"error":"server_error","detail":"subscriptions index is rebuilding"}');
      }
      const upstream = await request(`${s.origin}${req.url}`, { headers: req.headers });
      const text = (await upstream.body.text()).split(s.origin).join(proxyOrigin);
      res.writeHead(upstream.statusCode, { 'content-type': String(upstream.headers['content-type']) });
      res.end(text);
    });
    servers.push(proxy);
    proxyOrigin = proxy.origin;
    const api = client(
      s,
      { retry: { baseDelayMs: 1, maxDelayMs: 5, maxRetries: 3 } },
      `${proxy.origin}/api/`,
    );
    const result = await syncStreams({ client: api, now: NOW, logger });
    keepErrorTexts(result);
    const error = result.errors.subscriptions;
    assert.ok(error instanceof StoreSyncError);
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.match(error.message, /^GET \/api\/subscriptions\/ failed after 4 attempts/);
    assert.equal(error.details.status, 500);
    assert.match(String(error.details.bodyExcerpt), /index is rebuilding/);
    assertComplete(
      s,
      result,
      ALL_STREAMS.filter((n) => n !== 'subscriptions'),
    );
    assert.equal(result.warehouses.subscriptions.commits.length, 0);
  });

  it('refuses the sandbox foreign-next link: the other origin receives no request', async () => {
    const s = await sandbox({ pageSize: 7, faults: 'foreign-next:1' });
    const port = new URL(s.origin).port;
    // The fault points next links at 127.0.0.2 on the same port: listen there and count.
    const hits: string[] = [];
    const { createServer } = await import('node:http');
    const trap = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.end('{}');
    });
    await new Promise<void>((resolve) => trap.listen(Number(port), '127.0.0.2', resolve));
    try {
      const result = await syncStreams({ client: client(s), now: NOW, logger, streams: ['subscriptions'] });
      keepErrorTexts(result);
      const error = result.errors.subscriptions;
      assert.ok(error instanceof StoreSyncError);
      assert.equal(error.code, ERROR_CODES.FOREIGN_ORIGIN);
      assert.match(error.message, /127\.0\.0\.2/);
      assert.deepEqual(hits, []);
    } finally {
      await new Promise<void>((resolve) => trap.close(() => resolve()));
    }
  });

  it('a full sync at the default 4 rps against a sandbox limited to 4 rps gets no 429', async () => {
    const s = await sandbox({ pageSize: 15, rateLimit: 4 });
    const api = client(s, { rateLimit: 4 });
    const result = await syncStreams({ client: api, now: NOW, logger });
    assertComplete(s, result);
    const stats = s.stats();
    assert.ok(stats.requests >= 12, `requests: ${stats.requests}`);
    assert.equal(stats.byStatus['429'] ?? 0, 0);
    assert.equal(api.stats.rateLimited, 0);
  });

  it('probes scopes with one request per stream and reports the streams the token cannot read', async () => {
    const limited = 'limited-token-9f3a';
    const s = await sandbox({ tokens: [`${limited}:catalogue:read,subscriptions:read`] });
    const api = client(s, { token: limited });
    const access = await probeStreamAccess(api, Object.values(STREAMS));
    assert.deepEqual(access.readable.map((st) => st.name).sort(), ['products', 'subscriptions']);
    const denied = Object.fromEntries(access.denied.map((d) => [d.stream, d.message]));
    assert.deepEqual(Object.keys(denied).sort(), ['fulfillment_orders', 'locations', 'metadata_definitions']);
    assert.match(denied['locations']!, /fulfillment_service:read or locations:read/);
    assert.match(denied['metadata_definitions']!, /metadata:read/);
    assert.equal(api.stats.requests, 5);
  });
});
