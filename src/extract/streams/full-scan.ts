import { FULL_SCAN_SLICE, readListSlice } from './list-slice.js';
import type { DeclaredStream, PassPlan, PlanInput, StreamDefinition } from './types.js';
import { fullScanDue } from './windows.js';

/**
 * A stream the API cannot filter by change date: a pass reads the whole list in one cursor chain, resumable
 * mid-scan, and its completion lets the warehouse soft-delete what was not seen. Records are validated with
 * the list operation's item schema.
 *
 * How often: with `fullRefreshDays` null (locations, metadata definitions) every run scans. With a number
 * (products), an incremental run scans only when the last completed scan is older than that, and reads
 * nothing in between: the list offers no change filter and names no order (spec 4.3: `GET /products/` takes
 * title, category, range, is_public, is_gift_card, sku and cursor), so stopping a scan at the first page of
 * unchanged records (by `date_updated`) would miss changes further down, and only a complete scan can see a
 * deletion. `--full-refresh` and a backfill always scan.
 */
function plan({ mode, state, options, now }: PlanInput): PassPlan {
  const periodic = options.fullRefreshDays !== null;
  if (mode === 'incremental' && periodic && !fullScanDue(state, options, now)) {
    return { kind: 'windows', slices: [] };
  }
  return { kind: 'full', slices: [FULL_SCAN_SLICE] };
}

export function fullScanStream(spec: DeclaredStream): StreamDefinition {
  const stream: StreamDefinition = {
    ...spec,
    primaryKey: ['id'],
    schema: spec.operation.response,
    scopes: spec.operation.scopes,
    cursor:
      spec.defaults.fullRefreshDays == null
        ? 'none: full scan each run, resumable from the saved next-page URL'
        : 'none: full scan when the last is older than fullRefreshDays, resumable from the saved next-page URL',
    softDeletes: true,
    plan,
    readSlice: (ctx, slice, sliceId) => readListSlice(ctx, stream, slice, sliceId),
  };
  return stream;
}
