import { ERROR_CODES, isStoreSyncError } from '../errors.js';
import type { ApiClient } from './client.js';
import type { StreamDefinition, StreamName } from './streams/types.js';

/**
 * Which streams the token may read, found before a run with one cheap request per stream (the first page
 * of its list). A 403 means the scope is missing: the runner skips that stream with a warning and exits 3.
 * Any other failure (bad token, unreachable store) is the run's problem, not the stream's, and is thrown.
 */

export interface DeniedStream {
  stream: StreamName;
  /** The token needs any one of these. */
  scopes: readonly string[];
  message: string;
}

export interface StreamAccess {
  readable: StreamDefinition[];
  denied: DeniedStream[];
}

export async function probeStreamAccess(
  client: ApiClient,
  streams: readonly StreamDefinition[],
  options: { signal?: AbortSignal } = {},
): Promise<StreamAccess> {
  const outcomes = await Promise.all(
    streams.map(async (stream) => {
      try {
        await client.listPage(stream.operation, client.operationUrl(stream.operation).toString(), options);
        return { stream, denied: null };
      } catch (error) {
        if (!isStoreSyncError(error, ERROR_CODES.HTTP_FORBIDDEN)) throw error;
        const message = `stream ${stream.name} skipped: the token lacks its scope; grant ${stream.scopes.join(' or ')} in the store's API access settings`;
        return { stream, denied: { stream: stream.name, scopes: stream.scopes, message } };
      }
    }),
  );
  return {
    readable: outcomes.filter((o) => o.denied === null).map((o) => o.stream),
    denied: outcomes.flatMap((o) => (o.denied ? [o.denied] : [])),
  };
}
