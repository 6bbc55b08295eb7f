import { meta } from '../columns.js';
import type { TableDef } from '../types.js';

/**
 * Bookkeeping tables (docs/warehouse.md, "Bookkeeping"): runs, saved state, rejections, the raw landing and
 * the file ledger.
 */

const store = () => meta('_store', 'VARCHAR', 'Configured name of the store.');
const syncedAt = (what = 'written') => meta('_synced_at', 'TIMESTAMPTZ', `When the row was ${what}.`);
const runId = () => meta('_run_id', 'VARCHAR', 'Run that wrote the row (see _sync_runs).');

const syncRuns: TableDef = {
  name: '_sync_runs',
  comment: 'One row per run of a command that writes the warehouse.',
  key: ['_run_id'],
  entity: 'bookkeeping',
  columns: [
    runId(),
    meta(
      '_store',
      'VARCHAR',
      'Configured name of the store (null for a rebuild, which re-derives the tables of every store).',
    ),
    meta('command', 'VARCHAR', 'Command: sync, backfill, ingest, rebuild, demo …'),
    meta('mode', 'VARCHAR', 'incremental, full_refresh or backfill (null for commands without a mode).'),
    meta('streams', 'VARCHAR[]', 'Streams the run covered.'),
    meta('started_at', 'TIMESTAMPTZ', 'When the run started.'),
    meta('finished_at', 'TIMESTAMPTZ', 'When it finished (null while running or after a crash).'),
    meta(
      'outcome',
      'VARCHAR',
      'succeeded, completed_with_rejections, partial, failed or interrupted (null while running; a run whose ' +
        'process ended without recording one is marked interrupted by the next writer).',
    ),
    meta('counts', 'JSON', 'Rows and rejections per stream or table.'),
    meta('requests', 'BIGINT', 'API requests sent.'),
    meta('retries', 'BIGINT', 'Requests retried.'),
    meta('error', 'VARCHAR', 'Why the run failed, when it did.'),
    meta(
      'rate_limited',
      'BIGINT',
      'Answers of 429 Too Many Requests the run received (null for runs recorded before this column, and for runs that send no requests).',
    ),
  ],
};

const syncState: TableDef = {
  name: '_sync_state',
  comment: 'Saved progress per store and stream: cursors of the pass in progress and watermarks.',
  key: ['_store', 'stream'],
  entity: 'bookkeeping',
  columns: [
    store(),
    meta('stream', 'VARCHAR', 'Stream name.'),
    meta('state', 'JSON', 'The whole stream state (slices with their next page, watermark, pass).'),
    meta('watermark', 'VARCHAR', 'Last day (YYYY-MM-DD) fully covered by incremental windows.'),
    meta('last_full_scan_at', 'TIMESTAMPTZ', 'When the last full scan completed.'),
    meta('pass_started_at', 'TIMESTAMPTZ', 'Start of the pass in progress (null when none).'),
    meta('cursor_in_progress', 'VARCHAR', 'Next page of the first unfinished slice of the pass in progress.'),
    meta(
      'last_success_at',
      'TIMESTAMPTZ',
      'When an incremental or full-refresh pass of this stream last completed (a backfill does not count).',
    ),
    syncedAt('saved'),
    runId(),
  ],
};

const rejectedRecords: TableDef = {
  name: '_rejected_records',
  comment: 'Records that failed validation or normalization, with the reason and the payload as received.',
  // A log: no natural key; these columns are never NULL and order it.
  key: ['_store', 'stream', '_synced_at', 'reason'],
  entity: 'bookkeeping',
  columns: [
    store(),
    meta('stream', 'VARCHAR', 'Stream, or `documents` for ingested files.'),
    meta(
      'stage',
      'VARCHAR',
      'extract (API validation), parse (malformed JSON) or normalize (value not representable).',
    ),
    meta('key', 'VARCHAR', 'Key of the record when one could be read.'),
    meta('reason', 'VARCHAR', 'What was wrong: field path, value, and what was expected.'),
    meta('source', 'VARCHAR', 'Where it came from: URL path, or file:line for ingested documents.'),
    meta(
      'payload',
      'VARCHAR',
      'The record or line as received: its first 64 KiB, the reason saying so when it was longer (the raw landing keeps it whole).',
    ),
    meta('raw_seq', 'BIGINT', 'Sequence number of the record in _raw_landing, when it was landed.'),
    syncedAt('rejected'),
    runId(),
    {
      ...meta(
        'level',
        'VARCHAR',
        "`record`: the record was not loaded; `field`: the record was loaded with this one field NULL, its original value in the row's `_extra`.",
      ),
      backfill: "'record'",
    },
    meta(
      'field_path',
      'VARCHAR',
      'The field refused, as a path in the record (`lines[0].price_incl_tax`), when one is to blame.',
    ),
  ],
};

/**
 * Every field path the model does not map that a store sent, per table: when it was first and last seen,
 * by which run, an example and how many rows carried it. `status` and the run summaries name the new ones.
 */
const schemaChanges: TableDef = {
  name: '_schema_changes',
  comment:
    "Field paths a store sent that no column maps, per table: their values are kept in the rows' `_extra`.",
  key: ['_store', 'table', 'field_path'],
  entity: 'bookkeeping',
  columns: [
    store(),
    meta('table', 'VARCHAR', 'The table whose rows carry the field in `_extra`.'),
    meta('field_path', 'VARCHAR', "Path of the field in the row's item (`zz_a`, `billing_address.zz_b`)."),
    meta('first_seen_at', 'TIMESTAMPTZ', 'When a run first loaded a row carrying it.'),
    meta('last_seen_at', 'TIMESTAMPTZ', 'When a run last loaded a row carrying it.'),
    meta('run_id', 'VARCHAR', 'The run that first saw it (see _sync_runs).'),
    meta('example', 'VARCHAR', 'The first value seen, as JSON, cut to 200 characters.'),
    meta('count', 'BIGINT', 'Rows that carried it, over all runs.'),
  ],
};

/**
 * What the API's date filters say of records that carry no time of their own events: a subscription an API
 * list returned for a one-day `cancel_date` window was cancelled that day (src/extract/streams/subscriptions.ts).
 */
const windowEvents: TableDef = {
  name: '_window_events',
  comment:
    "Events the API dated through a one-day window of a date filter (a subscription returned for `cancel_date_from` = `cancel_date_to` = the day was cancelled that day), where the record carries no time of them. Re-derived by rebuild from the raw landing, which keeps each such record's window. subscription_events dates cancellations and recoveries by it.",
  key: ['_store', 'stream', 'record_id', 'event', 'day'],
  entity: 'bookkeeping',
  columns: [
    store(),
    meta('stream', 'VARCHAR', 'The stream whose list returned the record.'),
    meta('record_id', 'VARCHAR', "The record's key (a subscription's id), as text."),
    meta(
      'event',
      'VARCHAR',
      '`cancelled` (a `cancel_date` window) or `recovered` (a `recoveries_date` window).',
    ),
    meta(
      'day',
      'DATE',
      "The window's day: the API's date of the event (the spec gives no time zone for these filters; the sandbox reads them as UTC days).",
    ),
    meta('first_seen_at', 'TIMESTAMPTZ', 'When a load first received the record from that window.'),
    meta('run_id', 'VARCHAR', 'The run of that load (see _sync_runs).'),
  ],
};

const rawLanding: TableDef = {
  name: '_raw_landing',
  comment:
    'Raw landing: every record and document as received, in arrival order, one compressed block per batch ' +
    '(format in docs/warehouse.md), its bytes in _raw_landing_parts, so `store-sync rebuild` re-derives every ' +
    'table without calling the API.',
  key: ['first_seq'],
  entity: 'bookkeeping',
  columns: [
    meta(
      'first_seq',
      'BIGINT',
      'Sequence number (arrival order across the warehouse) of the first record in the block.',
    ),
    meta('last_seq', 'BIGINT', 'Sequence number of the last record in the block.'),
    store(),
    meta('records', 'BIGINT', 'Records in the block.'),
    meta('streams', 'VARCHAR[]', 'Streams the records came from (`documents` for ingested files).'),
    meta('codec', 'VARCHAR', 'Compression and framing of the block (brotli-1: see docs/warehouse.md).'),
    syncedAt('received'),
    runId(),
  ],
};

const rawLandingParts: TableDef = {
  name: '_raw_landing_parts',
  comment:
    "The bytes of the raw landing's blocks: a block is its parts put together in order. A row per part " +
    'of at most 1 KB, so the landing fills row groups like any other table (docs/performance.md).',
  key: ['first_seq', 'part'],
  entity: 'bookkeeping',
  columns: [
    meta('first_seq', 'BIGINT', 'The block the part belongs to (_raw_landing.first_seq).'),
    meta('part', 'BIGINT', 'Place of the part in its block, from 0.'),
    {
      ...meta(
        'bytes',
        'BLOB',
        'The part: at most 1 KB of the compressed block (more in parts moved from older rows).',
      ),
      // Brotli's output: DuckDB's dictionary and FSST analysis of it finds nothing to gain (the file is the
      // same size to the byte) and takes about a tenth of an ingest's CPU (docs/performance.md, "Settings and
      // the measurements behind them").
      uncompressed: true,
    },
  ],
};

const ingestedFiles: TableDef = {
  name: '_ingested_files',
  comment: 'Ledger of ingested files: a file with the same path, size and content hash is not read again.',
  key: ['_store', 'path'],
  entity: 'bookkeeping',
  columns: [
    store(),
    meta('path', 'VARCHAR', 'Absolute path of the file.'),
    meta('size', 'BIGINT', 'Size in bytes.'),
    meta('mtime', 'TIMESTAMPTZ', 'Modification time when read.'),
    meta(
      'sha256',
      'VARCHAR',
      'SHA-256 of the content; for a partial entry left by a stopped run, of the bytes before byte_offset (null when not known).',
    ),
    meta('status', 'VARCHAR', 'partial (a run stopped inside it) or complete.'),
    meta('byte_offset', 'BIGINT', 'Bytes of (decompressed) content consumed so far.'),
    meta('line', 'BIGINT', 'Lines consumed so far.'),
    meta('documents', 'BIGINT', 'Documents read so far.'),
    meta(
      'rejected',
      'BIGINT',
      'Rejections made from the file so far (one per refused record: a move result or an array can make several).',
    ),
    syncedAt('saved'),
    runId(),
    meta(
      'skipped',
      'JSON',
      'Documents skipped so far, inside webhook or event envelopes, whose object has no table or that no rule recognises, by object or event type (`{"customer": 3, "dispute.created": 1}`); null when none. Not rejections: they stay in the raw landing.',
    ),
  ],
};

const schema: TableDef = {
  name: '_schema',
  comment:
    'Fingerprint of the table registry each schema migration applied (opening an up-to-date warehouse writes nothing).',
  key: ['fingerprint'],
  entity: 'bookkeeping',
  columns: [
    meta('fingerprint', 'VARCHAR', 'Hash of the DDL and comments generated from the registry.'),
    meta('applied_at', 'TIMESTAMPTZ', 'When the migration ran.'),
  ],
};

export const bookkeepingTables: TableDef[] = [
  syncRuns,
  syncState,
  rejectedRecords,
  schemaChanges,
  windowEvents,
  rawLanding,
  rawLandingParts,
  ingestedFiles,
  schema,
];
