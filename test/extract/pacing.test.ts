import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiClient } from '../../src/extract/client.js';
import { RequestPacer } from '../../src/extract/pacing.js';
import { backoffDelay, DEFAULT_RETRY_POLICY, parseRetryAfter } from '../../src/extract/retry.js';
import { sendJson, startServer } from './helpers.js';

describe('RequestPacer', () => {
  it('spaces requests so a token-bucket server at the same rate never answers 429', async () => {
    // The server allows 10 rps with a burst of 3, stricter than the platform (burst = rate). A burst of 2 failed
    // on a loaded machine: a stalled event loop (this server shares it with the client) delivered three paced
    // requests together. Three callers without pacing would still send 18 requests at once and meet 429s.
    let tokens = 3;
    let at = performance.now();
    let limited = 0;
    const server = await startServer((_req, res) => {
      const now = performance.now();
      tokens = Math.min(3, tokens + ((now - at) / 1000) * 10);
      at = now;
      if (tokens < 1) {
        limited++;
        return sendJson(res, 429, {}, { 'retry-after': '1' });
      }
      tokens -= 1;
      sendJson(res, 200, { next: null, results: [] });
    });
    const api = new ApiClient({ baseUrl: `${server.origin}/`, token: 'pacing-token', rateLimit: 10 });
    try {
      // Three callers at once, as three slices would: they share the one limiter.
      await Promise.all(
        [0, 1, 2].map(async () => {
          for (let i = 0; i < 6; i++) await api.call('listLocations', {});
        }),
      );
      assert.equal(server.hits.length, 18);
      assert.equal(limited, 0);
      assert.equal(api.stats.rateLimited, 0);
    } finally {
      await api.close();
      await server.close();
    }
  });

  it('halves the rate after a 429 and recovers linearly to the target', () => {
    let clock = 0;
    const pacer = new RequestPacer({ rps: 4, recoveryMs: 10_000, now: () => clock });
    pacer.onRateLimited(2_000);
    assert.equal(pacer.stats.rateLimited, 1);
    assert.equal(pacer.stats.pausedMs, 2_000);
    clock = 2_000; // the pause ends; recovery starts from half the rate
    assert.equal(pacer.currentRps(), 2);
    clock = 7_000;
    assert.equal(pacer.currentRps(), 4, 'recovered after recoveryMs worth of target rate');
    pacer.onRateLimited(0);
    pacer.onRateLimited(0);
    assert.equal(pacer.currentRps(), 1, 'repeated 429s keep halving');
  });

  it('never goes below its floor, and with no limit only pauses', () => {
    const clock = 0;
    const limited = new RequestPacer({ rps: 1, minRps: 0.5, now: () => clock });
    for (let i = 0; i < 5; i++) limited.onRateLimited(0);
    assert.equal(limited.currentRps(), 0.5);
    const unlimited = new RequestPacer({ rps: 0, now: () => clock });
    unlimited.onRateLimited(1_500);
    assert.equal(unlimited.currentRps(), Number.POSITIVE_INFINITY);
    assert.equal(unlimited.stats.pausedMs, 1_500);
  });
});

describe('retry timing', () => {
  it('reads Retry-After as seconds or as an HTTP date', () => {
    const now = Date.parse('2026-01-01T00:00:00Z');
    assert.equal(parseRetryAfter('3', now), 3_000);
    assert.equal(parseRetryAfter('0.5', now), 500);
    assert.equal(parseRetryAfter('Thu, 01 Jan 2026 00:00:07 GMT', now), 7_000);
    assert.equal(parseRetryAfter('Wed, 31 Dec 2025 23:00:00 GMT', now), 0, 'a past date means now');
    assert.equal(parseRetryAfter('soon', now), null);
    assert.equal(parseRetryAfter(undefined, now), null);
  });

  it('backs off exponentially with jitter, capped', () => {
    const policy = { ...DEFAULT_RETRY_POLICY, baseDelayMs: 100, maxDelayMs: 1_000 };
    assert.equal(
      backoffDelay(0, policy, () => 0),
      50,
    );
    assert.equal(
      backoffDelay(0, policy, () => 1),
      100,
    );
    assert.equal(
      backoffDelay(3, policy, () => 1),
      800,
    );
    assert.equal(
      backoffDelay(10, policy, () => 1),
      1_000,
    );
    assert.equal(
      backoffDelay(10, policy, () => 0),
      500,
    );
  });
});
