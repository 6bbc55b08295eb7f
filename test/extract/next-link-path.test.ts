import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient, runStream, STREAMS } from '../../src/extract/index.js';
import { checkSameOrigin, parseBaseUrl } from '../../src/extract/url-safety.js';
import { defaultStreamOptions } from '../../src/streams.js';
import { captureLogger, MemoryWarehouse, sendJson, startServer, type TestServer } from './helpers.js';

/**
 * A `next` link to another path of the same origin (`/admin/secret/`) must not get the token
 * (docs/reliability.md, "Hardening"). Only links under the configured base path are followed; any other is
 * refused before a request is made to it.
 */

const TOKEN = 'next-link-path-token-5Kq';
const { logger, lines } = captureLogger();
const servers: TestServer[] = [];
const clients: ApiClient[] = [];

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
  for (const line of lines) assert.ok(!line.includes(TOKEN), `token leaked: ${line}`);
});

describe('next links stay under the base path', () => {
  for (const [what, link] of [
    [
      'an absolute link to another path of the same origin',
      (origin: string) => `${origin}/admin/secret/?cursor=2`,
    ],
    ['a root-relative link to another path', () => '/admin/secret/?cursor=2'],
    ['a link that climbs out of the base path with dot segments', () => '/api/../admin/secret/?cursor=2'],
    ['a link that climbs out with encoded dot segments', () => '/api/%2e%2e/admin/secret/?cursor=2'],
  ] as const) {
    it(`${what}: the stream fails and /admin/secret/ is never requested`, async () => {
      let origin = '';
      const server = await startServer((req, res) => {
        const url = new URL(req.url ?? '/', origin);
        if (url.pathname.startsWith('/admin/')) return sendJson(res, 200, { next: null, results: [] });
        sendJson(res, 200, { next: link(origin), previous: null, results: [{ id: 1, name: 'first' }] });
      });
      origin = server.origin;
      servers.push(server);
      const api = new ApiClient({ baseUrl: `${origin}/api/`, token: TOKEN, rateLimit: 0, logger });
      clients.push(api);
      const error = await runStream({
        stream: STREAMS.locations,
        client: api,
        state: emptyStreamState(),
        mode: 'incremental',
        options: defaultStreamOptions('locations'),
        now: new Date('2026-01-01T12:00:00Z'),
        commit: new MemoryWarehouse().commit,
        logger,
      }).catch((e: unknown) => e);
      assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.FOREIGN_ORIGIN, String(error));
      assert.match(error.message, /outside the configured base path \/api\//);
      const byPath = new Map<string, number>();
      for (const hit of server.hits) {
        const path = new URL(hit.url, origin).pathname;
        byPath.set(path, (byPath.get(path) ?? 0) + 1);
      }
      assert.deepEqual(
        Object.fromEntries(byPath),
        { '/api/locations/': 1 },
        'only the first page was requested',
      );
    });
  }

  it('the URL rule: under the base path only, dot segments resolved, encoded separators refused', () => {
    const base = parseBaseUrl('https://shop.example.com/api/v2');
    assert.equal(base.pathname, '/api/v2/');
    for (const good of [
      'https://shop.example.com/api/v2/products/?cursor=abc',
      '/api/v2/products/?cursor=abc',
      'products/?cursor=abc',
      '?cursor=abc',
      '/api/v2/products/../locations/?cursor=abc',
    ]) {
      assert.ok(checkSameOrigin(good, base).pathname.startsWith('/api/v2/'), good);
    }
    for (const bad of [
      'https://shop.example.com/admin/secret/',
      '/admin/secret/',
      '/api/v2x/products/',
      '/api/v1/products/',
      '/api/v2/../../admin/',
      '/api/v2/%2e%2e/%2E%2E/admin/',
      '/api/v2/..%2f..%2fadmin/',
      '/api/v2/..%5C..%5Cadmin/',
      '//shop.example.com.evil.test/api/v2/',
      'https://evil.test/api/v2/products/',
      'http://shop.example.com/api/v2/products/',
    ]) {
      assert.throws(
        () => checkSameOrigin(bad, base),
        (e: unknown) => e instanceof StoreSyncError && e.code === ERROR_CODES.FOREIGN_ORIGIN,
        bad,
      );
    }
    // A base URL at the root accepts every path of its origin, as before.
    assert.equal(
      checkSameOrigin('/admin/x/', parseBaseUrl('https://shop.example.com')).pathname,
      '/admin/x/',
    );
  });

  it('a refusal message names the path, cut short, never a whole long link', () => {
    const base = parseBaseUrl('https://shop.example.com/api/');
    const long = `/elsewhere/${'p'.repeat(100_000)}/?cursor=${'c'.repeat(100_000)}`;
    const error = (() => {
      try {
        checkSameOrigin(long, base);
      } catch (e) {
        return e as StoreSyncError;
      }
      assert.fail('accepted');
    })();
    assert.ok(error.message.length < 400, `${error.message.length} characters`);
    assert.ok(JSON.stringify(error.details).length < 400);
  });
});
