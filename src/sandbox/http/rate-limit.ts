import { HttpError } from './errors.js';

/**
 * A token bucket per bearer token, as the platform publishes (4 requests a second): capacity = rate,
 * refilled continuously at rate per second. Over the limit the answer is 429 with `Retry-After`
 * (whole seconds, rounded up, so a client that waits that long is guaranteed a token).
 */
export class RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly rate: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  get enabled(): boolean {
    return this.rate > 0;
  }

  take(key: string): void {
    if (!this.enabled) return;
    const now = this.now();
    // A rate below 1/s still allows single requests, so the bucket holds at least one.
    const capacity = Math.max(1, this.rate);
    const bucket = this.buckets.get(key) ?? { tokens: capacity, at: now };
    bucket.tokens = Math.min(capacity, bucket.tokens + ((now - bucket.at) / 1000) * this.rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return;
    }
    const waitSeconds = Math.max(1, Math.ceil((1 - bucket.tokens) / this.rate));
    throw new HttpError(
      429,
      'rate_limited',
      `Rate limit of ${this.rate} requests per second exceeded; retry after ${waitSeconds} s.`,
      undefined,
      { 'Retry-After': String(waitSeconds) },
    );
  }
}
