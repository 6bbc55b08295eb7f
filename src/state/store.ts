import type { DuckDBConnection } from '@duckdb/node-api';
import { emptyStreamState, type StreamState } from '../contracts.js';
import { literal, timestampLiteral } from '../model/index.js';

/**
 * Stream state in `_sync_state`: one row per store and stream holding the whole StreamState as JSON, plus
 * columns an operator can read at a glance (watermark, cursor in progress, last success). Written only
 * inside the transaction that commits the page it follows.
 */

export interface SavedState {
  store: string;
  stream: string;
  state: StreamState;
  lastSuccessAt: string | null;
  savedAt: string;
  /** The run that saved the row. */
  runId: string;
}

/** The next page of the first unfinished slice of the pass in progress. */
export function cursorInProgress(state: StreamState): string | null {
  if (!state.pass) return null;
  for (const slice of Object.values(state.pass.slices))
    if (!slice.done && slice.nextUrl) return slice.nextUrl;
  return null;
}

export async function readState(
  connection: DuckDBConnection,
  store: string,
  stream: string,
): Promise<StreamState> {
  const reader = await connection.runAndReadAll(
    `SELECT state::VARCHAR FROM _sync_state WHERE _store = ${literal(store)} AND stream = ${literal(stream)}`,
  );
  const text = reader.getRows()[0]?.[0];
  return typeof text === 'string'
    ? { ...emptyStreamState(), ...(JSON.parse(text) as StreamState) }
    : emptyStreamState();
}

/** Every saved stream state, or `store`'s alone. */
export async function listStates(connection: DuckDBConnection, store?: string): Promise<SavedState[]> {
  const where = store === undefined ? '' : ` WHERE _store = ${literal(store)}`;
  const reader = await connection.runAndReadAll(
    `SELECT _store, stream, state::VARCHAR, strftime(last_success_at, '%Y-%m-%dT%H:%M:%S.%gZ'),
            strftime(_synced_at, '%Y-%m-%dT%H:%M:%S.%gZ'), _run_id
     FROM _sync_state${where} ORDER BY _store, stream`,
  );
  return reader.getRows().map(([store, stream, state, lastSuccessAt, savedAt, runId]) => ({
    store: String(store),
    stream: String(stream),
    state: { ...emptyStreamState(), ...(JSON.parse(String(state)) as StreamState) },
    lastSuccessAt: lastSuccessAt === null ? null : String(lastSuccessAt),
    savedAt: String(savedAt),
    runId: String(runId),
  }));
}

/**
 * SQL replacing a stream's row. A state without a pass in progress means the pass just completed
 * (or there was none), which is what `last_success_at` records, unless the pass was a backfill
 * (`success: false`; see PageCommit.completedBackfill).
 */
export function writeStateSql(
  store: string,
  stream: string,
  state: StreamState,
  runId: string,
  atMs: number,
  options: { success?: boolean } = {},
): string {
  const at = timestampLiteral(atMs);
  const ts = (iso: string | null) => (iso === null ? 'NULL' : `TRY_CAST(${literal(iso)} AS TIMESTAMPTZ)`);
  const where = `_store = ${literal(store)} AND stream = ${literal(stream)}`;
  const lastSuccess =
    state.pass === null && options.success !== false
      ? at
      : `(SELECT max(last_success_at) FROM _sync_state WHERE ${where})`;
  return [
    `CREATE OR REPLACE TEMP TABLE _state_keep AS SELECT ${lastSuccess} AS last_success_at`,
    `DELETE FROM _sync_state WHERE ${where}`,
    `INSERT INTO _sync_state SELECT ${literal(store)}, ${literal(stream)}, ${literal(JSON.stringify(state))}::JSON, ` +
      `${literal(state.watermark)}, ${ts(state.lastFullScanAt)}, ${ts(state.pass?.startedAt ?? null)}, ` +
      `${literal(cursorInProgress(state))}, (SELECT last_success_at FROM _state_keep), ${at}, ${literal(runId)}`,
  ].join(';\n');
}
