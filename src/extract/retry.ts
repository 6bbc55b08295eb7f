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
  /**
   * Most time one request may spend waiting across its retries (backoff, Retry-After pauses, the pacer's
   * queue before a retry): a retry whose wait would go past it is not made, and the request fails instead
   * (the config's maxWaitMinutes).
   */
  maxWaitMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  maxRateLimitRetries: 20,
  baseDelayMs: 500,
  maxDelayMs: 30_000,
  defaultRetryAfterMs: 1_000,
  maxRetryAfterMs: 120_000,
  maxWaitMs: 10 * 60_000,
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

/** The time one request has spent waiting to be retried, shared by withRetries and the attempts it makes. */
export interface WaitMeter {
  ms: number;
}

export interface RetryOptions {
  policy: RetryPolicy;
  ctx: RequestContext;
  /** Whether sending the request twice is harmless (GET, PUT); others are resent only when not applied. */
  idempotent: boolean;
  signal?: AbortSignal | undefined;
  onRetry: (error: StoreSyncError, attempt: number, delayMs: number) => void;
  /**
   * The request's waiting so far; withRetries adds its backoff sleeps, the attempts add their time in the
   * pacer's queue before a retry. Given by the caller so both sides see the one total.
   */
  waited?: WaitMeter;
}

/**
 * Runs `attempt` until it succeeds, fails terminally, or uses up the policy. 429s have their own, larger
 * bound and no backoff here: the pacer already holds every caller until Retry-After has passed (the client
 * puts the pause it imposed in `details.retryAfterMs`). Every wait counts towards `policy.maxWaitMs`: a
 * retry that would take the request's waiting past it is not made.
 */
export async function withRetries<T>(attempt: () => Promise<T>, options: RetryOptions): Promise<T> {
  const { policy, ctx, signal } = options;
  const waited = options.waited ?? { ms: 0 };
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
      // The wait ahead: this backoff, or the pause the 429 imposed on the pacer.
      const ahead = rateLimited ? Number(error.details.retryAfterMs ?? 0) : delay;
      if (waited.ms + ahead > policy.maxWaitMs)
        throw waitedTooLong(error, ctx, failures + limited, waited.ms, ahead, policy);
      options.onRetry(error, failures + limited, delay);
      if (delay > 0) {
        const started = Date.now();
        await sleep(delay, undefined, signal ? { signal } : undefined);
        waited.ms += Date.now() - started;
      }
    }
  }
}

/** Minutes as a person reads them: 10, 0.5, 0.01. */
const minutes = (ms: number) => String(Number((ms / 60_000).toPrecision(3)));
const seconds = (ms: number) => String(Number((ms / 1000).toPrecision(3)));

/** What a request that gave up carries for its caller: where, and the last failure it met. */
function giveUpDetails(last: StoreSyncError, ctx: RequestContext, attempts: number) {
  return {
    method: ctx.method,
    path: ctx.path,
    status: last.details.status,
    bodyExcerpt: last.details.bodyExcerpt,
    lastCode: last.code,
    attempts,
  };
}

function waitedTooLong(
  last: StoreSyncError,
  ctx: RequestContext,
  attempts: number,
  waitedMs: number,
  aheadMs: number,
  policy: RetryPolicy,
): StoreSyncError {
  const why = last.code === ERROR_CODES.HTTP_RATE_LIMITED ? 'the server asks for' : 'the next retry needs';
  return new StoreSyncError(
    ERROR_CODES.RETRIES_EXHAUSTED,
    `${ctx.method} ${ctx.path} gave up waiting: after ${attempts} attempt${attempts === 1 ? '' : 's'} it has waited ${seconds(waitedMs)} s and ${why} ${seconds(aheadMs)} s more, past the ${minutes(policy.maxWaitMs)} min that maxWaitMinutes allows one request; last error (${last.code}): ${last.message}. The stream stops here and resumes from its last committed page next run`,
    {
      cause: last,
      details: {
        ...giveUpDetails(last, ctx, attempts),
        waitedMs: Math.round(waitedMs),
        setting: 'maxWaitMinutes',
      },
    },
  );
}

function exhausted(last: StoreSyncError, ctx: RequestContext, attempts: number): StoreSyncError {
  return new StoreSyncError(
    ERROR_CODES.RETRIES_EXHAUSTED,
    `${ctx.method} ${ctx.path} failed after ${attempts} attempts; last error (${last.code}): ${last.message}`,
    {
      cause: last,
      details: giveUpDetails(last, ctx, attempts),
    },
  );
}
