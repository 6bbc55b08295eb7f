import type { z } from 'zod';
import type { OperationSpec } from '../../../schemas/index.js';
import type { SliceState } from '../../contracts.js';
import { isStoreSyncError } from '../../errors.js';
import { cursorBytes, followCursor } from '../pagination.js';
import { checkSameOrigin, MAX_CURSOR_BYTES } from '../url-safety.js';
import { validateRecords } from '../validate.js';
import type { ExtractedPage, SlicePlan, StreamContext } from './types.js';

/**
 * Statuses that, answered to the first request of a resumed slice (its saved `next` link), mean the API no
 * longer accepts that cursor: cursors expire. The slice then starts again from its first page. The same
 * status on a slice's first page (a fresh URL) stays an error: the query itself was refused.
 */
const EXPIRED_CURSOR_STATUSES = new Set([400, 404, 410]);

/** Why a saved cursor cannot be requested at all, or null when it can. Never quotes the cursor. */
function unusableCursor(ctx: StreamContext, saved: string): string | null {
  const bytes = cursorBytes(saved);
  if (bytes > MAX_CURSOR_BYTES) return `it is ${bytes} bytes long, over the ${MAX_CURSOR_BYTES}-byte limit`;
  try {
    checkSameOrigin(saved, ctx.client.baseUrl);
    return null;
  } catch {
    return 'it is not under the configured base URL (was the base URL changed?)';
  }
}

/**
 * Reads one slice of a list operation as pages of validated records, from its saved `next` if any. A saved
 * cursor the API refuses on its first request (see EXPIRED_CURSOR_STATUSES), or one that cannot be requested,
 * is dropped with a warning and the slice is read again from its first page in the same run: a full scan from
 * the start of the list, a window from the first page of its window (the pass was planned from the watermark,
 * which has not moved). Pages already committed by the pass stay; re-reading them is harmless.
 */
export async function* readListSlice(
  ctx: StreamContext,
  stream: { name: string; operation: OperationSpec; schema: z.ZodType },
  slice: SliceState & { params: SlicePlan['params'] },
  sliceId = '-',
): AsyncGenerator<ExtractedPage> {
  const firstPage = () => ctx.client.operationUrl(stream.operation, {}, slice.params).toString();
  const drop = (event: string, fields: Record<string, unknown>) => {
    ctx.logger.warn(event, { slice: sliceId, ...fields });
    ctx.cursorDropped?.(sliceId);
  };
  let saved = slice.nextUrl;
  if (saved !== null) {
    const why = unusableCursor(ctx, saved);
    if (why !== null) {
      drop('cursor.dropped', {
        message: `the saved cursor of slice ${sliceId} cannot be used: ${why}; restarting the slice from its first page`,
      });
      saved = null;
    }
  }
  let started = false;
  try {
    for await (const page of readChain(ctx, stream, saved ?? firstPage())) {
      started = true;
      yield page;
    }
  } catch (error) {
    const status = isStoreSyncError(error) ? error.details.status : undefined;
    const expired =
      saved !== null &&
      !started &&
      !ctx.signal.aborted &&
      typeof status === 'number' &&
      EXPIRED_CURSOR_STATUSES.has(status);
    if (!expired) throw error;
    // The path without its query: the cursor itself is never logged.
    drop('cursor.expired', {
      status,
      path: new URL(saved!, ctx.client.baseUrl).pathname,
      message: `the API refused the saved cursor of slice ${sliceId} (${status}), as it does once a cursor expires; restarting the slice from its first page`,
    });
    for await (const page of readChain(ctx, stream, firstPage())) yield page;
  }
}

async function* readChain(
  ctx: StreamContext,
  stream: { name: string; operation: OperationSpec; schema: z.ZodType },
  startUrl: string,
): AsyncGenerator<ExtractedPage> {
  for await (const page of followCursor({
    client: ctx.client,
    operation: stream.operation,
    startUrl,
    meter: ctx.meter,
    signal: ctx.signal,
  })) {
    const url = new URL(page.url);
    const source = url.pathname + url.search;
    const validated = validateRecords(stream.schema, page.results, stream.name, source, ctx.versionFields);
    yield { ...validated, next: page.next };
  }
}

/** The plan of a stream that has no server-side filter worth using: one chain over everything. */
export const FULL_SCAN_SLICE: SlicePlan = { id: 'all', params: {} };
