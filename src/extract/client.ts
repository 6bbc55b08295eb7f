import pLimit, { type LimitFunction } from 'p-limit';
import { type Dispatcher, type FormData, Pool } from 'undici';
import type { z } from 'zod';
import {
  API_VERSION_HEADER,
  OPERATIONS,
  type OperationId,
  type OperationSpec,
  operationPath,
  Page,
} from '../../schemas/index.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { type Logger, redact, redactValue, registerSecret, silentLogger } from '../log.js';
import { bodyExcerpt, errorForStatus, type RequestContext } from './http-errors.js';
import type {
  CallInput,
  CallResult,
  ListOperationId,
  QueryParams,
  RequestMeter,
  RequestWait,
} from './operations.js';
import { RequestPacer } from './pacing.js';
import { keepResultTexts } from './received-text.js';
import {
  DEFAULT_RETRY_POLICY,
  parseRetryAfter,
  type RetryPolicy,
  type WaitMeter,
  withRetries,
} from './retry.js';
import { checkSameOrigin, parseBaseUrl, pathWithoutCursor, printablePath } from './url-safety.js';
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
  /**
   * Total time of one attempt, from sending the request to the end of its body, however steadily the server
   * trickles it (the others measure silences only); then it counts as a timeout (the config's
   * requestDeadlineSeconds).
   */
  requestMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  connectMs: 10_000,
  headersMs: 30_000,
  bodyMs: 30_000,
  requestMs: 120_000,
};

/** Default largest response body read (the config's maxResponseBytes). */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024;

/** Of an error response only this much is read: its excerpt is all that is kept. */
const ERROR_BODY_BYTES = 64 * 1024;

/** Requests in flight at once when the options say nothing (the sync's, which bench/extract-unlimited.ts matches). */
export const DEFAULT_MAX_IN_FLIGHT = 8;

export interface ClientOptions {
  baseUrl: string;
  token: string;
  /** Requests per second for the whole store; default 4, the platform's published limit; 0 disables pacing. */
  rateLimit?: number;
  /** Requests in flight at once (connections in the pool); default DEFAULT_MAX_IN_FLIGHT. */
  maxInFlight?: number;
  retry?: Partial<RetryPolicy>;
  timeouts?: Partial<Timeouts>;
  /** Largest response body read; a larger one fails its request (not retried). */
  maxResponseBytes?: number;
  /** The request header the API version is sent in (a store's apiVersionHeader); default X-Platform-API-Version. */
  apiVersionHeader?: string;
  logger?: Logger;
}

/** An operation of the catalogue by its id, or one given whole (a stream declared outside src/streams.ts). */
const specOf = (operation: OperationId | OperationSpec): OperationSpec =>
  typeof operation === 'string' ? OPERATIONS[operation] : operation;

/** One page of a list operation with its items still unvalidated (streams validate them one by one). */
export interface RawPage {
  /** The absolute URL that was fetched. */
  url: string;
  next: string | null;
  results: unknown[];
  /**
   * Keeps each record's text as received, for the raw landing (received-text.ts). A chain calls it once its
   * next request is out (pagination.ts): the scan of the body costs a third of its parse, and done here it
   * would delay that request. Records whose texts are not kept are serialized again for the landing.
   */
  keepTexts?: () => void;
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

/** The abort reason of an attempt that ran past its deadline (told apart from the caller's own abort). */
class DeadlineReached extends Error {}

/** One logical request's retry state, shared by its attempts: how many were made, and the time spent waiting. */
interface SendState {
  attempts: number;
  waited: WaitMeter;
  /** Where the request is, for the stream's meter (RequestMeter.waiting). */
  wait: RequestWait;
}

const utf8 = new TextDecoder('utf-8');

export class ApiClient {
  readonly baseUrl: URL;
  readonly pacer: RequestPacer;
  readonly retryPolicy: RetryPolicy;
  readonly timeouts: Timeouts;
  readonly maxResponseBytes: number;
  /** Lower-case like the other names of a request's headers, so that one name cannot go out in two spellings. */
  readonly apiVersionHeader: string;
  readonly stats: ClientStats = { requests: 0, retries: 0, rateLimited: 0 };
  readonly #token: string;
  readonly #pool: Pool;
  readonly #inFlight: LimitFunction;
  readonly #logger: Logger;
  /** A page's body as received, by its parsed value, for its records' texts (RawPage.keepTexts). */
  readonly #pageTexts = new WeakMap<object, string>();

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
    this.maxResponseBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.apiVersionHeader = (options.apiVersionHeader ?? API_VERSION_HEADER).toLowerCase();
    const connections = options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT;
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

  /**
   * The absolute URL of an operation (of the catalogue, or the spec of one outside it): base URL + its path,
   * with query values (arrays comma-separated).
   */
  operationUrl(
    operation: OperationId | OperationSpec,
    params: Record<string, string | number> = {},
    query: QueryParams = {},
  ): URL {
    const url = new URL(operationPath(specOf(operation), params).replace(/^\//, ''), this.baseUrl);
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
  async listPage(
    operation: ListOperationId | OperationSpec,
    link: string,
    options: SendOptions = {},
  ): Promise<RawPage> {
    const spec = specOf(operation);
    const url = checkSameOrigin(link, this.baseUrl);
    const json = await this.#send(spec, url, undefined, options, true);
    const page = this.#parsePage(json, spec, url);
    const text = this.#pageTexts.get(json as object);
    return {
      url: url.toString(),
      next: page.next,
      results: page.results,
      ...(text === undefined ? {} : { keepTexts: () => keepResultTexts(text, json) }),
    };
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
      origin: this.baseUrl.origin,
      hasId: spec.path.includes('{'),
    };
    const payload = body === undefined ? undefined : isFormData(body) ? body : JSON.stringify(body);
    const wait: RequestWait = { method: ctx.method, path: ctx.path, phase: 'queued' };
    const state: SendState = { attempts: 0, waited: { ms: 0 }, wait };
    options.meter?.waiting?.add(wait);
    return withRetries(() => this.#attempt(spec, payload, ctx, options, pageExpected, state), {
      policy: this.retryPolicy,
      ctx,
      idempotent: IDEMPOTENT.has(spec.method),
      signal: options.signal,
      waited: state.waited,
      onRetry: (error, attempt, delayMs) => {
        wait.phase = 'backoff';
        this.stats.retries++;
        if (options.meter) options.meter.retries++;
        this.#logger.warn('http.retry', {
          method: ctx.method,
          path: pathWithoutCursor(ctx.path),
          code: error.code,
          status: error.details.status,
          attempt,
          delayMs: Math.round(delayMs),
        });
      },
    }).finally(() => options.meter?.waiting?.delete(wait));
  }

  #attempt(
    spec: OperationSpec,
    payload: string | FormData | undefined,
    ctx: RequestContext,
    options: SendOptions,
    pageExpected: boolean,
    state: SendState,
  ): Promise<unknown> {
    const retry = state.attempts++ > 0;
    state.wait.phase = 'queued';
    const queued = Date.now();
    return this.#inFlight(async () => {
      // Pacing inside the in-flight slot: the send happens exactly at the paced instant.
      await this.pacer.acquire(options.signal);
      state.wait.phase = 'sent';
      // A retry's time in the queue (behind a Retry-After pause, at the reduced rate) is waiting on it.
      if (retry) state.waited.ms += Date.now() - queued;
      this.stats.requests++;
      if (options.meter) options.meter.requests++;
      // The version first: the headers the client owns come after it, so no name given for the version (the
      // config refuses those) can replace the token.
      const headers: Record<string, string> = {
        [this.apiVersionHeader]: spec.version,
        authorization: `Bearer ${this.#token}`,
        accept: 'application/json',
      };
      if (typeof payload === 'string') headers['content-type'] = 'application/json';
      const started = Date.now();
      // The attempt's own signal: the caller's abort, or the deadline, whichever comes first. (Not
      // AbortSignal.any: on Node 20 the signals it combines with a long-lived one are kept until that one goes.)
      const attempt = new AbortController();
      const deadline = setTimeout(() => attempt.abort(new DeadlineReached()), this.timeouts.requestMs);
      deadline.unref();
      const forward = () => attempt.abort(options.signal?.reason);
      if (options.signal?.aborted) forward();
      else options.signal?.addEventListener('abort', forward, { once: true });
      let status: number;
      let raw: string;
      let text: string;
      let contentType: string;
      try {
        const response = await this.#pool.request({
          method: spec.method,
          path: ctx.path,
          headers,
          body: payload ?? null,
          signal: attempt.signal,
        });
        status = response.statusCode;
        if (options.meter) options.meter.responses = (options.meter.responses ?? 0) + 1;
        contentType = String(response.headers['content-type'] ?? '');
        const ok = status >= 200 && status < 300;
        // Of an error only the excerpt is kept, so only its start is read. A server that echoes the token
        // back (a debug field, a name set to it) must not get it into an error or a log: it is masked in every
        // spelling before anything reads the text (and a 2xx body is masked again once parsed, below).
        raw = await this.#readBody(
          response,
          ctx,
          ok ? this.maxResponseBytes : Math.min(ERROR_BODY_BYTES, this.maxResponseBytes),
          ok,
        );
        text = redact(raw);
        this.#logger.debug('http.request', {
          method: ctx.method,
          path: pathWithoutCursor(ctx.path),
          status,
          ms: Date.now() - started,
        });
        if (status === 429) {
          this.stats.rateLimited++;
          if (options.meter) options.meter.rateLimited = (options.meter.rateLimited ?? 0) + 1;
          // Retry-After 0 (or a missing one) still pauses everyone for the policy's first backoff delay. The
          // request gives up at once when what the server asks is more than it may still wait (withRetries), and
          // the pause of the others is no longer than one request may wait in all.
          const asked =
            parseRetryAfter(response.headers['retry-after']) ?? this.retryPolicy.defaultRetryAfterMs;
          const wait = Math.min(
            Math.max(asked, this.retryPolicy.baseDelayMs),
            this.retryPolicy.maxRetryAfterMs,
          );
          this.pacer.onRateLimited(Math.min(wait, this.retryPolicy.maxWaitMs));
          const error = errorForStatus(status, text, ctx);
          error.details.retryAfterMs = wait;
          throw error;
        }
        if (!ok) {
          const error = errorForStatus(status, text, ctx);
          // A 503 may say when to come back; the backoff then waits at least that long.
          const retryAfter = status >= 500 ? parseRetryAfter(response.headers['retry-after']) : null;
          if (retryAfter !== null)
            error.details.retryAfterMs = Math.min(retryAfter, this.retryPolicy.maxRetryAfterMs);
          throw error;
        }
      } catch (error) {
        if (attempt.signal.reason instanceof DeadlineReached && !options.signal?.aborted)
          throw this.#deadlineError(ctx, error);
        throw error;
      } finally {
        clearTimeout(deadline);
        options.signal?.removeEventListener('abort', forward);
      }
      return this.#json(raw, text, contentType, ctx, pageExpected);
    });
  }

  /**
   * The body as text, read as it streams in: past `limit` bytes the request is aborted. A success body over
   * the limit fails the request for good (the same page would be as large again); of an error body the
   * first `limit` bytes are enough.
   */
  async #readBody(
    response: Dispatcher.ResponseData,
    ctx: RequestContext,
    limit: number,
    enforce: boolean,
  ): Promise<string> {
    const declared = Number(response.headers['content-length']);
    if (enforce && Number.isFinite(declared) && declared > limit) {
      response.body.destroy();
      throw this.#tooLarge(ctx, response.statusCode, `announces ${declared} bytes`);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of response.body as AsyncIterable<Buffer>) {
      if (size + chunk.length > limit) {
        response.body.destroy();
        if (enforce) throw this.#tooLarge(ctx, response.statusCode, `went past it`);
        chunks.push(chunk.subarray(0, limit - size));
        size = limit;
        break;
      }
      chunks.push(chunk);
      size += chunk.length;
    }
    return utf8.decode(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
  }

  #tooLarge(ctx: RequestContext, status: number, how: string): StoreSyncError {
    return new StoreSyncError(
      ERROR_CODES.BAD_RESPONSE,
      `${ctx.method} ${ctx.path} answered a body larger than maxResponseBytes allows (${this.maxResponseBytes} bytes): it ${how}, and it was not read further; nothing of it is written. Raise maxResponseBytes in the config if the store's pages are really this large`,
      {
        details: {
          method: ctx.method,
          path: ctx.path,
          status,
          limit: this.maxResponseBytes,
          setting: 'maxResponseBytes',
        },
      },
    );
  }

  #deadlineError(ctx: RequestContext, cause: unknown): StoreSyncError {
    const seconds = Number((this.timeouts.requestMs / 1000).toPrecision(3));
    return new StoreSyncError(
      ERROR_CODES.TIMEOUT,
      `${ctx.method} ${ctx.path} timed out: it took longer than requestDeadlineSeconds allows (${seconds} s from sending it to the end of its body; the server sends too slowly)`,
      {
        cause,
        transient: true,
        details: {
          method: ctx.method,
          path: ctx.path,
          operation: ctx.operation,
          cause: 'REQUEST_DEADLINE',
          setting: 'requestDeadlineSeconds',
        },
      },
    );
  }

  /** The parsed body, with every secret masked: `text` is `raw` masked (see redact). */
  #json(raw: string, text: string, contentType: string, ctx: RequestContext, pageExpected: boolean): unknown {
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
    const malformed = 'a body that is not complete JSON (truncated or malformed)';
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      // A mask that cut through an escape (a secret that begins where a `\n` ends) can leave the masked text
      // unparseable: then the body as received is parsed, and masked once parsed.
      if (text === raw) throw bad(malformed);
      try {
        value = JSON.parse(raw);
      } catch {
        throw bad(malformed);
      }
    }
    // The text's mask finds a secret in every spelling; when it found one, every parsed string (keys too) is
    // masked as well, which is what gets stored. When it found none, no parsed string can hold one, and a
    // page's records keep their text as received for the raw landing (received-text.ts).
    if (text !== raw) return redactValue(value);
    if (pageExpected && typeof value === 'object' && value !== null) this.#pageTexts.set(value, text);
    return value;
  }
}
