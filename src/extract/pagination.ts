import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { ApiClient, RawPage } from './client.js';
import type { ListOperationId, RequestMeter } from './operations.js';
import { checkSameOrigin, printablePath } from './url-safety.js';

/**
 * Follows one cursor chain. The next page is requested while the caller still validates and commits
 * the current one, so extraction overlaps network time with CPU and commit time; the page handed out
 * is always the one whose `next` the caller will save, so a resume never skips or repeats a page.
 */

export interface ChainOptions {
  client: ApiClient;
  operation: ListOperationId;
  /** The page to start from: a first page URL or a saved `next`. */
  startUrl: string;
  meter?: RequestMeter;
  signal?: AbortSignal;
}

/** What identifies a page in a chain: its cursor when it has one, else the whole URL. */
function cursorKey(url: URL): string {
  return url.searchParams.get('cursor') ?? url.href;
}

export async function* followCursor(options: ChainOptions): AsyncGenerator<RawPage> {
  const { client, operation, meter, signal } = options;
  const fetchPage = (link: string) => {
    const request = client.listPage(operation, link, { meter, signal });
    // A prefetch may fail while nobody awaits it yet (an abort during the caller's commit); marking it
    // handled here keeps that from being an unhandled rejection. Awaiting it later still throws.
    request.catch(() => {});
    return request;
  };
  const seen = new Set<string>([cursorKey(checkSameOrigin(options.startUrl, client.baseUrl))]);
  let pending: Promise<RawPage> | null = fetchPage(options.startUrl);
  try {
    while (pending) {
      const page: RawPage = await pending;
      pending = null;
      if (page.next !== null) {
        // Checked before the request is made: a foreign link never receives the token.
        const next = checkSameOrigin(page.next, client.baseUrl);
        const key = cursorKey(next);
        if (seen.has(key)) {
          throw new StoreSyncError(
            ERROR_CODES.CURSOR_LOOP,
            `${printablePath(new URL(page.url))} links to a page already read in this chain (${printablePath(next)}); stopping instead of looping`,
            { details: { path: printablePath(next) } },
          );
        }
        seen.add(key);
        pending = fetchPage(page.next);
      }
      yield page;
    }
  } finally {
    // The caller stopped early (error or abort): nobody will await the prefetch, so its failure is moot.
    pending = null;
  }
}
