/**
 * How long to wait before trying a failed request again. Backoff is exponential with jitter so that
 * several streams failing at the same moment do not retry in lockstep against a struggling server.
 */

export interface RetryPolicy {
  /** Retries after 5xx, timeouts, resets and truncated or unparseable bodies; then the stream fails. */
  maxRetries: number;
  /** Separate, larger bound for 429s, which say "later" rather than "broken". */
  maxRateLimitRetries: number;
  /** First backoff delay; each retry doubles it, up to `maxDelayMs`. */
  baseDelayMs: number;
  maxDelayMs: number;
  /** Wait after a 429 that carries no usable Retry-After. */
  defaultRetryAfterMs: number;
  /** A Retry-After longer than this is cut to it, so a bogus value cannot stall a nightly run for days. */
  maxRetryAfterMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  maxRateLimitRetries: 20,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  defaultRetryAfterMs: 1_000,
  maxRetryAfterMs: 120_000,
};

/** Delay before retry number `attempt` (0-based): half fixed, half random ("equal jitter"). */
export function backoffDelay(
  attempt: number,
  policy: RetryPolicy,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.baseDelayMs * 2 ** attempt);
  return ceiling / 2 + random() * (ceiling / 2);
}

/** Retry-After as milliseconds to wait: delta-seconds or an HTTP date (RFC 9110 §10.2.3); null if unusable. */
export function parseRetryAfter(
  value: string | string[] | undefined,
  nowMs: number = Date.now(),
): number | null {
  const text = (Array.isArray(value) ? value[0] : value)?.trim();
  if (!text) return null;
  if (/^\d+(?:\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const at = Date.parse(text);
  if (Number.isNaN(at)) return null;
  return Math.max(0, at - nowMs);
}
