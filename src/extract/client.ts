import pLimit, { type LimitFunction } from 'p-limit';
import { type FormData, Pool } from 'undici';
import type { z } from 'zod';
import {
  OPERATIONS,
  type OperationId,
  type OperationSpec,
  operationPath,
  Page,
} from '../../schemas/index.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { type Logger, redact, registerSecret, silentLogger } from '../log.js';
import { bodyExcerpt, errorForStatus, type RequestContext } from './http-errors.js';
import type { CallInput, CallResult, ListOperationId, QueryParams, RequestMeter } from './operations.js';
import { RequestPacer } from './pacing.js';
import { DEFAULT_RETRY_POLICY, parseRetryAfter, type RetryPolicy, withRetries } from './retry.js';
import { checkSameOrigin, parseBaseUrl, printablePath } from './url-safety.js';
import { issuesText } from './validate.js';

/**
 * The one way store-sync talks to a store: a keep-alive undici pool for the base URL's origin, paced by
 * the store's shared limiter, retried by policy, and parsed with the shared schemas. Nothing here ever
 * puts the token in a message: errors carry the method and the URL path only.
 */

export interface Timeouts {
  /** TCP + TLS handshake. */
  connectMs: number;
  /** From sending the request to the end of the response headers (catches a stalled server). */
  headersMs: number;
  /** Longest silence while the body streams in. */
  bodyMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = { connectMs: 10_000, headersMs: 30_000, bodyMs: 30_000 };

export interface ClientOptions {
  baseUrl: string;
  token: string;
  /** Requests per second for the whole store; default 4, the platform's published limit; 0 disables pacing. */
  rateLimit?: number;
  /** Requests in flight at once (connections in the pool). */
  maxInFlight?: number;
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<Timeouts>;
  logger?: Logger;
}

/** One page of a list operation with its items still unvalidated (streams validate them one by one). */
export interface RawPage {
  /** The absolute URL that was fetched. */
  url: string;
  next: string | null;
  results: unknown[];
}

export interface ClientStats {
  requests: number;
  retries: number;
  rateLimited: number;
}

interface SendOptions {
  signal?: AbortSignal | undefined;
  meter?: RequestMeter | undefined;
}

/** Multipart bodies (ticket attachments) go to undici as they are; it writes the boundary. */
function isFormData(value: unknown): value is FormData {
  return (
    typeof value === 'object' &&
    value !== null &&
    Object.prototype.toString.call(value) === '[object FormData]'
  );
}

/** Methods that may be sent twice with the same effect; others are resent only when provably not applied. */
const IDEMPOTENT = new Set(['GET', 'PUT']);

export class ApiClient {
  readonly baseUrl: URL;
  readonly pacer: RequestPacer;
  readonly retryPolicy: RetryPolicy;
  readonly timeouts: Timeouts;
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0 };
  readonly #token: string;
  readonly #pool: Pool;
  readonly #inFlight: LimitFunction;
  readonly #logger: Logger;

  constructor(options: ClientOptions) {
    if (!options.token) {
      throw new StoreSyncError(
        ERROR_CODES.TOKEN_MISSING,
        'no API token given; set the token environment variable',
      );
    }
    registerSecret(options.token);
    this.#token = options.token;
    this.baseUrl = parseBaseUrl(options.baseUrl);
    this.pacer = new RequestPacer({ rps: options.rateLimit ?? 4 });
    this.retryPolicy = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...options.timeouts };
    const connections = options.maxInFlight ?? 8;
    this.#inFlight = pLimit(connections);
    this.#logger = options.logger ?? silentLogger;
    this.#pool = new Pool(this.baseUrl.origin, {
      connections,
      connect: { timeout: this.timeouts.connectMs },
      headersTimeout: this.timeouts.headersMs,
      bodyTimeout: this.timeouts.bodyMs,
      keepAliveTimeout: 10_000,
    });
  }

  /** The absolute URL of an operation: base URL + its path, with query values (arrays comma-separated). */
  operationUrl(id: OperationId, params: Record<string, string | number> = {}, query: QueryParams = {}): URL {
    const url = new URL(operationPath(OPERATIONS[id], params).replace(/^\//, ''), this.baseUrl);
    for (const [key, value] of Object.entries(query)) {
      if (value === undefined || value === null) continue;
      url.searchParams.set(key, Array.isArray(value) ? value.join(',') : String(value));
    }
    return url;
  }

  /** Calls any operation of the table, typed by it; the response is parsed with the operation's schema. */
  async call<K extends OperationId>(id: K, input: CallInput<K>): Promise<CallResult<K>> {
    const spec: OperationSpec = OPERATIONS[id];
    const url = this.operationUrl(id, input.params ?? {}, input.query ?? {});
    const json = await this.#send(spec, url, input.body, input);
    return this.#checked(id, json, url);
  }

  /**
   * Like `call`, but hands back the JSON unvalidated, for callers that turn a record failing its schema
   * into a rejection instead of an error (stream refreshes).
   */
  async callRaw<K extends OperationId>(id: K, input: CallInput<K>): Promise<unknown> {
    const url = this.operationUrl(id, input.params ?? {}, input.query ?? {});
    return this.#send(OPERATIONS[id], url, input.body, input);
  }

  #checked<K extends OperationId>(id: K, json: unknown, url: URL): CallResult<K> {
    const spec: OperationSpec = OPERATIONS[id];
    if (spec.list) {
      const page = this.#parsePage(json, spec, url);
      const results = page.results.map((item) => this.#parse(spec.response, item, spec, url));
      return { ...page, results } as CallResult<K>;
    }
    return this.#parse(spec.response, json, spec, url) as CallResult<K>;
  }

  /**
   * Fetches one page of a list operation. `link` is a page URL: a first page built by `operationUrl`, or
   * a `next` link from the previous page, which must stay on the base URL's origin.
   */
  async listPage(id: ListOperationId, link: string, options: SendOptions = {}): Promise<RawPage> {
    const spec: OperationSpec = OPERATIONS[id];
    const url = checkSameOrigin(link, this.baseUrl);
    const json = await this.#send(spec, url, undefined, options, true);
    const page = this.#parsePage(json, spec, url);
    return { url: url.toString(), next: page.next, results: page.results };
  }

  async close(): Promise<void> {
    await this.#pool.close();
  }

  #parse(schema: z.ZodType, value: unknown, spec: OperationSpec, url: URL): unknown {
    const parsed = schema.safeParse(value);
    if (parsed.success) return value;
    throw new StoreSyncError(
      ERROR_CODES.BAD_RESPONSE,
      `${spec.method} ${printablePath(url)} answered a ${spec.id} response that does not match the schema: ${issuesText(parsed.error)}`,
      { details: { method: spec.method, path: printablePath(url) } },
    );
  }

  #parsePage(json: unknown, spec: OperationSpec, url: URL): Page {
    const parsed = Page.safeParse(json);
    if (parsed.success) return parsed.data;
    throw new StoreSyncError(
      ERROR_CODES.BAD_RESPONSE,
      `${spec.method} ${printablePath(url)} did not answer a page {next, results}: ${issuesText(parsed.error)}`,
      { transient: true, details: { method: spec.method, path: printablePath(url) } },
    );
  }

  /** One logical request: attempts until success, a terminal error, or the retry bounds. */
  async #send(
    spec: OperationSpec,
    url: URL,
    body: unknown,
    options: SendOptions,
    pageExpected = false,
  ): Promise<unknown> {
    const ctx: RequestContext = {
      operation: spec.id,
      method: spec.method,
      path: printablePath(url),
      scopes: spec.scopes,
    };
    const payload = body === undefined ? undefined : isFormData(body) ? body : JSON.stringify(body);
    return withRetries(() => this.#attempt(spec, payload, ctx, options, pageExpected), {
      policy: this.retryPolicy,
      ctx,
      idempotent: IDEMPOTENT.has(spec.method),
      signal: options.signal,
      onRetry: (error, attempt, delayMs) => {
        this.stats.retries++;
        if (options.meter) options.meter.retries++;
        this.#logger.warn('http.retry', {
          method: ctx.method,
          path: ctx.path,
          code: error.code,
          status: error.details.status,
          attempt,
          delayMs: Math.round(delayMs),
        });
      },
    });
  }

  #attempt(
    spec: OperationSpec,
    payload: string | FormData | undefined,
    ctx: RequestContext,
    options: SendOptions,
    pageExpected: boolean,
  ): Promise<unknown> {
    return this.#inFlight(async () => {
      // Pacing inside the in-flight slot: the send happens exactly at the paced instant.
      await this.pacer.acquire(options.signal);
      this.stats.requests++;
      if (options.meter) options.meter.requests++;
      const headers: Record<string, string> = {
        authorization: `Bearer ${this.#token}`,
        'x-platform-api-version': spec.version,
        accept: 'application/json',
      };
      if (typeof payload === 'string') headers['content-type'] = 'application/json';
      const started = Date.now();
      const response = await this.#pool.request({
        method: spec.method,
        path: ctx.path,
        headers,
        body: payload ?? null,
        signal: options.signal,
      });
      // A server that echoes the token back (a debug field, a name set to it) must not get it into the
      // warehouse, the raw landing or a log: it is masked before anything reads the body.
      const text = redact(await response.body.text());
      const status = response.statusCode;
      this.#logger.debug('http.request', {
        method: ctx.method,
        path: ctx.path,
        status,
        ms: Date.now() - started,
      });
      if (status === 429) {
        this.stats.rateLimited++;
        const wait = parseRetryAfter(response.headers['retry-after']) ?? this.retryPolicy.defaultRetryAfterMs;
        this.pacer.onRateLimited(Math.min(wait, this.retryPolicy.maxRetryAfterMs));
      }
      if (status < 200 || status >= 300) {
        const error = errorForStatus(status, text, ctx);
        // A 503 may say when to come back; the backoff then waits at least that long.
        const retryAfter = status >= 500 ? parseRetryAfter(response.headers['retry-after']) : null;
        if (retryAfter !== null)
          error.details.retryAfterMs = Math.min(retryAfter, this.retryPolicy.maxRetryAfterMs);
        throw error;
      }
      return this.#json(text, String(response.headers['content-type'] ?? ''), ctx, pageExpected);
    });
  }

  #json(text: string, contentType: string, ctx: RequestContext, pageExpected: boolean): unknown {
    const bad = (why: string) =>
      new StoreSyncError(ERROR_CODES.BAD_RESPONSE, `${ctx.method} ${ctx.path} answered ${why}`, {
        transient: true,
        details: { method: ctx.method, path: ctx.path, status: 200, bodyExcerpt: bodyExcerpt(text) },
      });
    if (!/[/+]json\b/i.test(contentType)) {
      throw bad(
        `content type "${contentType || 'none'}" instead of JSON${pageExpected ? ' for a page' : ''}`,
      );
    }
    try {
      return JSON.parse(text);
    } catch {
      throw bad('a body that is not complete JSON (truncated or malformed)');
    }
  }
}
