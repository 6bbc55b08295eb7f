import { randomBytes } from 'node:crypto';
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

/**
 * Run when a writer opens the warehouse, before it starts a run of its own. It then holds the warehouse's only
 * lock, so a run still without an outcome belongs to a process that ended before it could record one (a kill,
 * a power cut, a second Ctrl-C): it is marked interrupted rather than left "running" for ever.
 */
export const CLOSE_ABANDONED_RUNS_SQL =
  "UPDATE _sync_runs SET outcome = 'interrupted', error = coalesce(error, " +
  "'the process ended before it recorded an outcome (killed, or stopped by a signal)') WHERE outcome IS NULL";
