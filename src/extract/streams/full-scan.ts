import { OPERATIONS } from '../../../schemas/index.js';
import type { EntityKind } from '../../contracts.js';
import type { ListOperationId } from '../operations.js';
import { FULL_SCAN_SLICE, readListSlice } from './list-slice.js';
import type { StreamDefinition, StreamName } from './types.js';

/**
 * A stream the API cannot filter by change date: every run reads the whole list in one cursor chain,
 * resumable mid-scan, and its completion lets the warehouse soft-delete what was not seen.
 */
export function fullScanStream(spec: {
  name: StreamName;
  entity: EntityKind;
  operation: ListOperationId;
}): StreamDefinition {
  const operation = OPERATIONS[spec.operation];
  const stream: StreamDefinition = {
    ...spec,
    primaryKey: ['id'],
    schema: operation.response,
    scopes: operation.scopes,
    cursor: 'none: full scan each run, resumable from the saved next-page URL',
    softDeletes: true,
    plan: () => ({ kind: 'full', slices: [FULL_SCAN_SLICE] }),
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
  };
  return stream;
}
