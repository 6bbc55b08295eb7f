import { randomBytes } from 'node:crypto';
import type { DuckDBConnection } from '@duckdb/node-api';
import { literal } from '../model/index.js';

/** `_sync_runs`: one row a run, inserted when it starts and completed when it finishes. */

export interface RunStart {
  /** null for a run that is not one store's (a rebuild re-derives the tables of every store). */
  store: string | null;
  command: string;
  mode: string | null;
  streams: string[];
}

export interface RunFinish {
  outcome: 'succeeded' | 'completed_with_rejections' | 'partial' | 'failed' | 'interrupted' | string;
  counts: Record<string, unknown>;
  requests: number;
  retries: number;
  /** Answers of 429 the run received; runs that send no requests leave it out. */
  rateLimited?: number;
  error?: string | null;
}

/** Sortable and readable: 20240501T100000Z-a1b2c3. */
export function newRunId(now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${randomBytes(3).toString('hex')}`;
}

export function startRunSql(runId: string, run: RunStart): string {
  const streams = `[${run.streams.map(literal).join(', ')}]::VARCHAR[]`;
  return (
    'INSERT INTO _sync_runs (_run_id, _store, command, mode, streams, started_at) VALUES ' +
    `(${literal(runId)}, ${literal(run.store)}, ${literal(run.command)}, ${literal(run.mode)}, ${streams}, now())`
  );
}

export function finishRunSql(runId: string, finish: RunFinish): string {
  return (
    `UPDATE _sync_runs SET finished_at = now(), outcome = ${literal(finish.outcome)}, ` +
    `counts = ${literal(JSON.stringify(finish.counts))}::JSON, requests = ${Math.trunc(finish.requests)}, ` +
    `retries = ${Math.trunc(finish.retries)}, ` +
    `rate_limited = ${finish.rateLimited === undefined ? 'NULL' : Math.trunc(finish.rateLimited)}, error = ${literal(finish.error ?? null)} WHERE _run_id = ${literal(runId)}`
  );
}

/** Why a run has no outcome: its process ended first. */
export const ABANDONED_RUN_MESSAGE =
  'the process ended before it recorded an outcome (killed, or stopped by a signal)';

/**
 * Run when a writer opens the warehouse, before it starts a run of its own. It then holds the warehouse's only
 * lock, so a run still without an outcome belongs to a process that ended before it could record one (a kill,
 * a power cut, a second Ctrl-C): it is marked interrupted rather than left "running" for ever.
 */
export const CLOSE_ABANDONED_RUNS_SQL = `UPDATE _sync_runs SET outcome = 'interrupted', error = coalesce(error, ${literal(ABANDONED_RUN_MESSAGE)}) WHERE outcome IS NULL`;

/** A stream's part in one run, as `status` tells it. */
export type StreamRunOutcome = 'ok' | 'failed' | 'interrupted' | 'skipped';

export interface StreamRun {
  store: string;
  stream: string;
  runId: string;
  command: string;
  mode: string | null;
  outcome: StreamRunOutcome;
  /** When the run finished, or started when it never recorded an end. */
  at: string;
  /** Why the stream did not complete (null when it did). */
  error: string | null;
}

/**
 * One row per store, stream and run of the commands that read a stream (sync, backfill and schedule record
 * `sync`; ingest and the receiver's drains record `ingest` with the stream `documents`), with what became of
 * that stream. A sync records each stream's own status and message in `counts`; a stream the run never got to
 * (the run failed or was stopped first) takes the run's outcome and error. A run with no outcome was cut off:
 * status only reads when no writer holds the file, so none is still going.
 */
const STREAM_RUNS_SQL = `
  WITH runs AS (
    SELECT _run_id, _store, command, mode, started_at, finished_at, outcome, error, counts, unnest(streams) AS stream
    FROM _sync_runs WHERE _store IS NOT NULL AND command IN ('sync', 'ingest')
  ), judged AS (
    SELECT *, CASE
        WHEN counts -> stream ->> 'status' IN ('ok', 'failed', 'skipped', 'interrupted') THEN counts -> stream ->> 'status'
        WHEN outcome IS NULL OR outcome = 'interrupted' THEN 'interrupted'
        WHEN outcome = 'failed' THEN 'failed'
        ELSE 'ok'
      END AS result
    FROM runs
  )
  SELECT _store, stream, _run_id, command, mode, result,
    strftime(coalesce(finished_at, started_at), '%Y-%m-%dT%H:%M:%S.%gZ'),
    CASE WHEN result <> 'ok' THEN coalesce(counts -> stream ->> 'message', error, ${literal(ABANDONED_RUN_MESSAGE)}) END,
    started_at
  FROM judged`;

/**
 * Per store and stream (of `store` alone, when given), in one query, the newest run: `last` of the runs that
 * move a stream on (a backfill reads a past range and leaves the nightly state alone, so it neither hides
 * nor replaces a nightly failure), `lastFailure` of every run, backfills included, in which the stream did
 * not complete.
 */
export async function newestStreamRuns(
  connection: DuckDBConnection,
  store?: string,
): Promise<{ last: StreamRun[]; lastFailure: StreamRun[] }> {
  const newest = (which: string, where: string) =>
    `SELECT ${literal(which)} AS which, * EXCLUDE (started_at) FROM stream_runs WHERE ${where}
     QUALIFY row_number() OVER (PARTITION BY _store, stream ORDER BY started_at DESC, _run_id DESC) = 1`;
  const reader = await connection.runAndReadAll(
    `WITH stream_runs AS (${STREAM_RUNS_SQL}${store === undefined ? '' : ` WHERE _store = ${literal(store)}`})
     SELECT * FROM (${newest('last', "mode IS DISTINCT FROM 'backfill'")})
     UNION ALL SELECT * FROM (${newest('lastFailure', "result <> 'ok'")})
     ORDER BY _store, stream`,
  );
  const found = { last: [] as StreamRun[], lastFailure: [] as StreamRun[] };
  for (const [which, store, stream, runId, command, mode, outcome, at, error] of reader.getRows()) {
    found[which === 'last' ? 'last' : 'lastFailure'].push({
      store: String(store),
      stream: String(stream),
      runId: String(runId),
      command: String(command),
      mode: mode === null ? null : String(mode),
      outcome: String(outcome) as StreamRunOutcome,
      at: String(at),
      error: error === null ? null : String(error),
    });
  }
  return found;
}
