import { asStoreSyncError, ERROR_CODES, isStoreSyncError, StoreSyncError } from '../errors.js';
import type { ApiClient } from './client.js';
import type { RequestMeter } from './operations.js';
import type { StreamDefinition } from './streams/types.js';

/**
 * What a stream's first list request says about it. `sync` learns it from the stream's own first request (no
 * request is spent on checking alone); `doctor` asks it explicitly with `probeStreamAccess`, one cheap request
 * per stream (the first page of its list). A 403 means the scope is missing: the stream is skipped with a
 * warning and the run exits 3. Any other failure of that request (a 404 or 400 on that endpoint, a 5xx after
 * the retries) is that stream's: it fails, and the others go on (docs/streams.md, "Scopes"). What no stream can
 * get past ends the whole run: a 401 (the token is wrong or expired, so every request would fail the same
 * way), an interrupt, and a store where every stream's first request failed (unreachable, down, or a base URL
 * that is not its API root), with the first stream's error.
 */

export interface DeniedStream {
  stream: string;
  /** The token needs any one of these. */
  scopes: readonly string[];
  message: string;
}

export interface FailedStream {
  stream: string;
  error: StoreSyncError;
  /** What the stream's probe spent, its retries included. */
  requests: number;
  retries: number;
}

export interface StreamAccess {
  readable: StreamDefinition[];
  denied: DeniedStream[];
  failed: FailedStream[];
}

type Outcome =
  | { stream: StreamDefinition; kind: 'readable' }
  | { stream: StreamDefinition; kind: 'denied'; denied: DeniedStream }
  | { stream: StreamDefinition; kind: 'failed'; failed: FailedStream };

export async function probeStreamAccess(
  client: ApiClient,
  streams: readonly StreamDefinition[],
  options: { signal?: AbortSignal } = {},
): Promise<StreamAccess> {
  const outcomes = await Promise.all(
    streams.map(async (stream): Promise<Outcome> => {
      const meter: RequestMeter = { requests: 0, retries: 0 };
      try {
        await client.listPage(stream.operation, client.operationUrl(stream.operation).toString(), {
          ...options,
          meter,
        });
        return { stream, kind: 'readable' };
      } catch (error) {
        if (options.signal?.aborted || isStoreSyncError(error, ERROR_CODES.HTTP_UNAUTHORIZED)) throw error;
        const first = firstRequestFailure(error, client, stream);
        return first.kind === 'denied'
          ? { stream, kind: 'denied', denied: first.denied }
          : { stream, kind: 'failed', failed: { stream: stream.name, error: first.error, ...meter } };
      }
    }),
  );
  const failed = outcomes.flatMap((o) => (o.kind === 'failed' ? [o.failed] : []));
  if (failed.length > 0 && failed.length === outcomes.length) throw failed[0]!.error;
  return {
    readable: outcomes.filter((o) => o.kind === 'readable').map((o) => o.stream),
    denied: outcomes.flatMap((o) => (o.kind === 'denied' ? [o.denied] : [])),
    failed,
  };
}

/**
 * A failure of a stream's first list request (before it has any page), told as the probe tells it: a 403 to
 * that list is the stream's missing scope (which scopes to grant); a 404 to it is most often a base URL
 * without the API's path. Any other failure, or one of another operation the stream calls, is returned as it
 * was. A 401 and an interrupt are the caller's to handle first: they end the whole run.
 */
export function firstRequestFailure(
  error: unknown,
  client: ApiClient,
  stream: StreamDefinition,
): { kind: 'denied'; denied: DeniedStream } | { kind: 'failed'; error: StoreSyncError } {
  const failure = asStoreSyncError(error);
  const operation = failure.details.operation;
  if (operation !== undefined && operation !== stream.operation.id) return { kind: 'failed', error: failure };
  if (isStoreSyncError(failure, ERROR_CODES.HTTP_FORBIDDEN)) {
    const message = `stream ${stream.name} skipped: the token lacks its scope; grant ${stream.scopes.join(' or ')} in the store's API access settings`;
    return { kind: 'denied', denied: { stream: stream.name, scopes: stream.scopes, message } };
  }
  return { kind: 'failed', error: firstListError(failure, client, stream) };
}

/**
 * A 404 to a stream's first list request says the list is not where the base URL puts it: most often a base
 * URL without the API's own path (`https://shop.example.com/` for `https://shop.example.com/api/`). Said so,
 * with the URL that was asked and the setting to change, instead of a 404's general advice.
 */
function firstListError(error: unknown, client: ApiClient, stream: StreamDefinition): StoreSyncError {
  const failure = asStoreSyncError(error);
  if (!isStoreSyncError(failure, ERROR_CODES.HTTP_NOT_FOUND)) return failure;
  const base = client.baseUrl;
  const url = client.operationUrl(stream.operation);
  const setting = 'baseUrl in the config (--base-url for a one-off job)';
  // Store APIs are served under a path of their own (the sandbox's and the docs' examples under /api/).
  const advice = /\/api\//i.test(base.pathname)
    ? `check that ${base.href} is the store's administration API root, and set ${setting} to it`
    : `the base URL ${base.href} probably lacks the API's path (such as ${new URL('api/', base).href}): set ${setting} to the store's administration API root`;
  return new StoreSyncError(
    failure.code,
    `GET ${failure.details.path ?? url.pathname} was not found (404), the first list request of stream ${stream.name} (${url.href}): ${advice}`,
    { cause: failure, details: { ...failure.details, setting: 'baseUrl' } },
  );
}
