import { FULL_SCAN_SLICE, readListSlice } from './list-slice.js';
import type { DeclaredStream, StreamDefinition } from './types.js';

/**
 * A stream the API cannot filter by change date: every run reads the whole list in one cursor chain,
 * resumable mid-scan, and its completion lets the warehouse soft-delete what was not seen. Records are
 * validated with the list operation's item schema.
 */
export function fullScanStream(spec: DeclaredStream): StreamDefinition {
  const stream: StreamDefinition = {
    ...spec,
    primaryKey: ['id'],
    schema: spec.operation.response,
    scopes: spec.operation.scopes,
    cursor: 'none: full scan each run, resumable from the saved next-page URL',
    softDeletes: true,
    plan: () => ({ kind: 'full', slices: [FULL_SCAN_SLICE] }),
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
  };
  return stream;
}
