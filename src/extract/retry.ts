import { setTimeout as sleep } from 'node:timers/promises';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { errorForTransport, type RequestContext } from './http-errors.js';

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

/** Failures that prove the request never reached the server, so even a POST may be sent again. */
const NOT_SENT = new Set(['ECONNREFUSED', 'UND_ERR_CONNECT_TIMEOUT']);

export interface RetryOptions {
  policy: RetryPolicy;
  ctx: RequestContext;
  /** Whether sending the request twice is harmless (GET, PUT); others are resent only when not applied. */
  idempotent: boolean;
  signal?: AbortSignal | undefined;
  onRetry: (error: StoreSyncError, attempt: number, delayMs: number) => void;
}

/**
 * Runs `attempt` until it succeeds, fails terminally, or uses up the policy. 429s have their own, larger
 * bound and no backoff here: the pacer already holds every caller until Retry-After has passed.
 */
export async function withRetries<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { policy, ctx, signal } = options;
  let failures = 0;
  let limited = 0;
  for (;;) {
    try {
      return await attempt();
    } catch (caught) {
      const error = errorForTransport(caught, ctx);
      if (signal?.aborted) throw error;
      const rateLimited = error.code === ERROR_CODES.HTTP_RATE_LIMITED;
      const notSent = rateLimited || NOT_SENT.has(String(error.details.cause));
      const retryable = error.transient && (options.idempotent || notSent);
      let delay = 0;
      if (rateLimited && limited < policy.maxRateLimitRetries) {
        limited++;
      } else if (retryable && !rateLimited && failures < policy.maxRetries) {
        delay = Math.max(backoffDelay(failures, policy), Number(error.details.retryAfterMs ?? 0));
        failures++;
      } else if (retryable) {
        throw exhausted(error, ctx, failures + limited + 1);
      } else {
        throw error;
      }
      options.onRetry(error, failures + limited, delay);
      if (delay > 0) await sleep(delay, undefined, signal ? { signal } : undefined);
    }
  }
}

function exhausted(last: StoreSyncError, ctx: RequestContext, attempts: number): StoreSyncError {
  return new StoreSyncError(
    ERROR_CODES.RETRIES_EXHAUSTED,
    `${ctx.method} ${ctx.path} failed after ${attempts} attempts; last error (${last.code}): ${last.message}`,
    {
      cause: last,
      details: {
        method: ctx.method,
        path: ctx.path,
        status: last.details.status,
        bodyExcerpt: last.details.bodyExcerpt,
        lastCode: last.code,
        attempts,
      },
    },
  );
}
