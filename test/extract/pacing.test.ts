import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiClient } from '../../src/extract/client.js';
import { burstOf, RequestPacer } from '../../src/extract/pacing.js';
import { backoffDelay, DEFAULT_RETRY_POLICY, parseRetryAfter } from '../../src/extract/retry.js';
import { sendJson, startServer } from './helpers.js';
import { busiestSecond, busiestSecondBound, withSchedulingDelay } from './pacing-bounds.js';

/** Arrivals a token-bucket server (`rate` per second, `burst` at once) would have refused: 0 means all pass. */
function refusedByBucket(arrivals: readonly number[], rate: number, burst: number): number {
  let tokens = burst;
  let at = arrivals[0] ?? 0;
  let refused = 0;
  for (const t of arrivals) {
    tokens = Math.min(burst, tokens + ((t - at) / 1000) * rate);
    at = t;
    if (tokens < 1) refused++;
    else tokens -= 1;
  }
  return refused;
}

describe('RequestPacer', () => {
  it('lets a burst of half a second go at once from a full bucket, then one request every 1/rate', () => {
    // A virtual clock: `reserve` answers when each request may go, as callers that always have one waiting would
    // send them (each asks the moment its previous one left).
    for (const rate of [1, 4, 10, 50]) {
      let clock = 0;
      const pacer = new RequestPacer({ rps: rate, now: () => clock });
      const burst = burstOf(rate);
      assert.equal(pacer.burst, burst);
      assert.equal(burst, Math.max(1, Math.ceil(rate / 2)));
      const sent: number[] = [];
      for (let i = 0; i < 5 * rate + burst; i++) {
        const at = pacer.reserve(clock);
        clock = Math.max(clock, at);
        sent.push(at);
      }
      const interval = 1000 / rate;
      assert.deepEqual(sent.slice(0, burst), Array(burst).fill(0), `${rate} rps: the burst goes at once`);
      sent.slice(burst).forEach((at, i) => {
        assert.ok(Math.abs(at - (i + 1) * interval) < 1e-6, `${rate} rps: request ${burst + i} at ${at}`);
      });
      // Politeness, as docs/streams.md ("Pacing") states it: a second never holds more than rate + burst, and a
      // token-bucket server at the same rate that holds `burst` (half the platform's) accepts every request.
      assert.ok(busiestSecond(sent) <= rate + burst, `${rate} rps: ${busiestSecond(sent)} in one second`);
      assert.equal(refusedByBucket(sent, rate, burst), 0, `${rate} rps`);
      assert.ok(refusedByBucket(sent, rate * 1.01, burst - 1) > 0 || burst === 1, 'and no more than that');
      // An idle second refills the bucket: the next burst goes at once again, never a bigger one.
      clock = sent.at(-1)! + 1000 + burst * interval;
      const again = Array.from({ length: burst + 1 }, () => pacer.reserve(clock));
      assert.deepEqual(again.slice(0, burst), Array(burst).fill(clock), `${rate} rps: refilled`);
      assert.ok(again[burst]! >= clock + interval - 1e-6, `${rate} rps: only ${burst} at once`);
    }
  });

  it('sends no burst after a 429 until the rate has recovered', () => {
    let clock = 0;
    const pacer = new RequestPacer({ rps: 10, recoveryMs: 10_000, now: () => clock });
    pacer.onRateLimited(1_000);
    clock = 5_000; // well after the pause, still recovering (at 5 + 4 × 10 / 10 = 9 rps)
    const first = pacer.reserve(clock);
    const second = pacer.reserve(clock);
    assert.equal(first, clock);
    assert.ok(second >= clock + 1000 / 10, `the second request waits an interval (${second - clock} ms)`);
    clock = 60_000; // recovered
    assert.equal(pacer.currentRps(), 10);
    const burst = Array.from({ length: burstOf(10) }, () => pacer.reserve(clock));
    assert.deepEqual(burst, Array(burstOf(10)).fill(clock));
  });

  it('spaces requests so a token-bucket server at the same rate never answers 429', async () => {
    // Three callers at once share one limiter at 10 rps, whose own burst is 5 (burstOf); a server allowing 10 rps
    // with a burst of 7 (stricter than the platform, whose burst equals its rate) must accept every arrival.
    // Three callers without a shared pacer would send 18 requests in about half a second.
    //
    // The bucket is applied to the arrival times afterwards, with its burst widened by the scheduling delay the
    // run actually met: a timer due during a stall of D ms fires at its end, together with the ones due after it,
    // so a stall delivers up to D × rate paced requests at once however exact the pacing. On an idle machine
    // (delays of a few ms, under one interval) the burst stays 7, the check at its strictest (a pacer 1.5× too
    // fast is refused from its eighth request on); under load (other work on the same cores) it does not blame
    // the pacer for the scheduler.
    const RATE = 10;
    const arrivals: number[] = [];
    const server = await startServer((_req, res) => {
      arrivals.push(performance.now());
      sendJson(res, 200, { next: null, results: [] });
    });
    const api = new ApiClient({ baseUrl: `${server.origin}/`, token: 'pacing-token', rateLimit: RATE });
    try {
      const { lateMs } = await withSchedulingDelay(() =>
        Promise.all(
          [0, 1, 2].map(async () => {
            for (let i = 0; i < 6; i++) await api.call('listLocations', {});
          }),
        ),
      );
      assert.equal(server.hits.length, 18);
      assert.equal(api.stats.rateLimited, 0);
      const late = Math.floor((lateMs * RATE) / 1000);
      const burst = burstOf(RATE) + 2 + late;
      const refused = refusedByBucket(arrivals, RATE, burst);
      const gaps = arrivals.slice(1).map((t, i) => Math.round(t - arrivals[i]!));
      const why = `scheduling delay up to ${lateMs.toFixed(1)} ms, burst ${burst}; gaps between arrivals (ms): ${gaps.join(' ')}`;
      assert.equal(refused, 0, `a ${RATE} rps server would have refused ${refused} requests (${why})`);
      // The documented bound, widened by the scheduling delay (busiestSecondBound).
      const busiest = busiestSecond(arrivals);
      const bound = busiestSecondBound(RATE, lateMs);
      assert.ok(busiest <= bound, `${busiest} requests in one second, more than ${bound} (${why})`);
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
