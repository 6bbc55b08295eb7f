import type { OperationSpec } from '../../schemas/index.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { ApiClient, RawPage } from './client.js';
import type { ListOperationId, RequestMeter } from './operations.js';
import { checkSameOrigin, MAX_CURSOR_BYTES, printableLink } from './url-safety.js';

/**
 * Follows one cursor chain. The next page is requested while the caller still validates and commits
 * the current one, so extraction overlaps network time with CPU and commit time; the page handed out
 * is always the one whose `next` the caller will save, so a resume never skips or repeats a page.
 */

export interface ChainOptions {
  client: ApiClient;
  operation: ListOperationId | OperationSpec;
  /** The page to start from: a first page URL or a saved `next`. */
  startUrl: string;
  meter?: RequestMeter;
  signal?: AbortSignal;
}

/** What identifies a page in a chain: its cursor when it has one, else the whole URL. */
function cursorKey(url: URL): string {
  return url.searchParams.get('cursor') ?? url.href;
}

/** The size of a link as saved in `_sync_state`. */
export function cursorBytes(link: string): number {
  return Buffer.byteLength(link, 'utf8');
}

/**
 * Refuses a `next` link too long to save as a cursor (one of megabytes would be saved, requested, and quoted
 * whole in every error line after it). The message gives its length and where it came from, never the link.
 */
export function checkCursorLength(link: string, from: string): void {
  const bytes = cursorBytes(link);
  if (bytes <= MAX_CURSOR_BYTES) return;
  throw new StoreSyncError(
    ERROR_CODES.BAD_RESPONSE,
    `${from} answered a next link of ${bytes} bytes, longer than the ${MAX_CURSOR_BYTES} bytes store-sync saves as a cursor; the link was neither requested nor saved, and the stream stops here`,
    { details: { path: from, cursorBytes: bytes } },
  );
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
        // Checked before the request is made and before the page is handed out (with the `next` its commit
        // would save): a link too long to save, or outside the base URL, is never requested.
        checkCursorLength(page.next, printableLink(new URL(page.url)));
        // A foreign link never receives the token.
        const next = checkSameOrigin(page.next, client.baseUrl);
        const key = cursorKey(next);
        if (seen.has(key)) {
          throw new StoreSyncError(
            ERROR_CODES.CURSOR_LOOP,
            `${printableLink(new URL(page.url))} links to a page already read in this chain (${printableLink(next)}); stopping instead of looping`,
            { details: { path: printableLink(next) } },
          );
        }
        seen.add(key);
        pending = fetchPage(page.next);
      }
      // With the next request out: the scan of the body for its records' texts is not on the chain's path.
      page.keepTexts?.();
      yield page;
    }
  } finally {
    // The caller stopped early (error or abort): nobody will await the prefetch, so its failure is moot.
    pending = null;
  }
}
