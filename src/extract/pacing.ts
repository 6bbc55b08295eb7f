import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Client-side pacing, one instance per store shared by all its streams (docs/streams.md, "Pacing").
 *
 * A token bucket of `burstOf(rps)` requests refilled at rps, kept as the generic cell rate algorithm (one
 * "next slot" time instead of a token count): a caller may send when the schedule is at most burst − 1
 * intervals ahead of now. When the bucket is empty requests are spread evenly, one every 1/rps seconds, so a
 * token-bucket server at the same rate (the platform's holds rps requests, refilled at rps) never answers 429:
 * the burst is half of what it allows, the other half left for arrivals that the network brings closer
 * together than they were sent. Any window of one second then holds at most rps + burst requests. The burst is
 * what the start of a run spends: its streams' first requests go at once instead of one interval apart.
 * A 429 pauses every caller until its Retry-After has passed (and at least one interval at the halved
 * rate), halves the rate, and the rate climbs back to the target linearly over `recoveryMs`, so a server
 * that is busier than it advertises is not hammered again straight away; no burst is sent until it is back.
 */

/** Requests a full bucket lets go at once at `rps`: half a second's worth, at least one. */
export function burstOf(rps: number): number {
  return rps > 0 && Number.isFinite(rps) ? Math.max(1, Math.ceil(rps / 2)) : 1;
}

export interface PacerOptions {
  /** Requests per second; 0 or less disables pacing (429s are still honoured). */
  rps: number;
  /** How long the rate takes to climb back to `rps` after a 429. */
  recoveryMs?: number;
  /** The rate never drops below this after repeated 429s. */
  minRps?: number;
  now?: () => number;
}

export interface PacerStats {
  rateLimited: number;
  pausedMs: number;
}

export class RequestPacer {
  readonly targetRps: number;
  /** Requests sent at once from a full bucket at the target rate (burstOf). */
  readonly burst: number;
  private readonly recoveryMs: number;
  private readonly minRps: number;
  private readonly now: () => number;
  private nextSlot = 0;
  private pausedUntil = 0;
  private penaltyRps = 0;
  private penaltyAt: number | null = null;
  /** Bumped by every 429 so callers holding a slot planned before it plan again. */
  private generation = 0;
  readonly stats: PacerStats = { rateLimited: 0, pausedMs: 0 };

  constructor(options: PacerOptions) {
    this.targetRps = Math.max(options.rps, 0);
    this.burst = burstOf(this.targetRps);
    this.recoveryMs = options.recoveryMs ?? 30_000;
    this.minRps = Math.min(options.minRps ?? 0.25, this.targetRps || Number.POSITIVE_INFINITY);
    this.now = options.now ?? Date.now;
  }

  /** The rate in force at `at`: the target, or a reduced rate recovering from the last 429. */
  currentRps(at = this.now()): number {
    const target = this.targetRps > 0 ? this.targetRps : Number.POSITIVE_INFINITY;
    if (this.penaltyAt === null || this.targetRps <= 0) return target;
    const since = Math.max(0, at - Math.max(this.penaltyAt, this.pausedUntil));
    return Math.min(target, this.penaltyRps + (since / this.recoveryMs) * target);
  }

  /** Takes the next place in the schedule for a request asked for at `now`: the time it may be sent. */
  reserve(now = this.now()): number {
    const rps = this.currentRps(Math.max(now, this.pausedUntil));
    const interval = 1000 / rps;
    // The bucket's depth, as time the schedule may run ahead of now: none while recovering from a 429.
    const tolerance = rps >= this.targetRps ? (this.burst - 1) * interval : 0;
    const start = Math.max(now, this.nextSlot - tolerance, this.pausedUntil);
    if (Number.isFinite(rps)) this.nextSlot = Math.max(start, this.nextSlot) + interval;
    return start;
  }

  /** Resolves when the caller may send its request. */
  async acquire(signal?: AbortSignal): Promise<void> {
    for (;;) {
      const generation = this.generation;
      const now = this.now();
      const start = this.reserve(now);
      if (start > now) await sleep(start - now, undefined, signal ? { signal } : undefined);
      // A 429 that arrived while we waited moved the schedule: plan again behind the pause.
      if (generation === this.generation) return;
    }
  }

  /** Records a 429: nobody sends before `retryAfterMs` has passed, and the rate is halved. */
  onRateLimited(retryAfterMs: number): void {
    const now = this.now();
    const rateBefore = this.currentRps(now);
    this.stats.rateLimited++;
    const until = now + Math.max(0, retryAfterMs);
    if (until > this.pausedUntil) {
      this.stats.pausedMs += until - Math.max(now, this.pausedUntil);
      this.pausedUntil = until;
    }
    if (this.targetRps > 0) {
      this.penaltyRps = Math.max(this.minRps, rateBefore / 2);
      this.penaltyAt = now;
    }
    // The schedule starts again behind the pause, and never sooner than one interval at the reduced rate: a
    // 429 with Retry-After 0 let every waiting caller send at once, over and over (21 requests in 40 ms).
    const interval = this.targetRps > 0 ? 1000 / this.penaltyRps : 0;
    this.nextSlot = Math.max(this.pausedUntil, now + interval);
    this.generation++;
  }
}
