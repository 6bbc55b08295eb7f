import type { z } from 'zod';
import type { SliceState } from '../../contracts.js';
import type { ListOperationId } from '../operations.js';
import { followCursor } from '../pagination.js';
import { validateRecords } from '../validate.js';
import type { ExtractedPage, SlicePlan, StreamContext } from './types.js';

/** Reads one slice of a list operation as pages of validated records, from its saved `next` if any. */
export async function* readListSlice(
  ctx: StreamContext,
  stream: { name: string; operation: ListOperationId; schema: z.ZodType },
  slice: SliceState & { params: SlicePlan['params'] },
): AsyncGenerator<ExtractedPage> {
  const startUrl = slice.nextUrl ?? ctx.client.operationUrl(stream.operation, {}, slice.params).toString();
  for await (const page of followCursor({
    client: ctx.client,
    operation: stream.operation,
    startUrl,
    meter: ctx.meter,
    signal: ctx.signal,
  })) {
    const url = new URL(page.url);
    const validated = validateRecords(stream.schema, page.results, stream.name, url.pathname + url.search);
    yield { ...validated, next: page.next };
  }
}

/** The plan of a stream that has no server-side filter worth using: one chain over everything. */
export const FULL_SCAN_SLICE: SlicePlan = { id: 'all', params: {} };
