import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient } from '../../src/extract/client.js';
import { isLoopbackHost, parseBaseUrl } from '../../src/extract/url-safety.js';

/**
 * Plain http to `*.localhost` (docs/reliability.md, "Hardening"): the client resolves such names through the
 * system resolver like any other name, so nothing makes the connection go to this machine. Plain http is
 * allowed to `localhost` itself and to loopback addresses only; a name under `.localhost` needs https.
 */

const unsafe = (e: unknown) => e instanceof StoreSyncError && e.code === ERROR_CODES.UNSAFE_URL;

describe('plain http and localhost names', () => {
  it('refuses plain http to names under .localhost', () => {
    for (const bad of [
      'http://shop.localhost/api/',
      'http://a.b.localhost:8080/api/',
      'http://SHOP.LOCALHOST/',
      'http://localhost.evil.test/',
      'http://localhost./',
    ]) {
      assert.throws(() => parseBaseUrl(bad), unsafe, bad);
      assert.throws(() => new ApiClient({ baseUrl: bad, token: 'localhost-test-token' }), unsafe, bad);
    }
    assert.throws(() => parseBaseUrl('http://shop.localhost/'), /not for names under \.localhost/);
  });

  it('allows plain http to localhost itself and to loopback addresses, and https to any of these names', async () => {
    for (const good of [
      'http://localhost/api/',
      'http://LOCALHOST:8080/',
      'http://127.0.0.1/',
      'http://127.1.2.3:9/',
      'http://[::1]/',
      'https://shop.localhost/api/',
    ]) {
      const api = new ApiClient({ baseUrl: good, token: 'localhost-test-token' });
      await api.close();
    }
  });

  it('isLoopbackHost: localhost and loopback addresses only', () => {
    for (const host of ['localhost', 'LocalHost', '127.0.0.1', '127.255.255.254', '::1', '[::1]'])
      assert.equal(isLoopbackHost(host), true, host);
    for (const host of [
      'shop.localhost',
      'x.y.localhost',
      'localhost.',
      'mylocalhost',
      '128.0.0.1',
      '10.0.0.1',
    ])
      assert.equal(isLoopbackHost(host), false, host);
  });
});
