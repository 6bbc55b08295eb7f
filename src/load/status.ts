import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, literal, tableDef, timestampLiteral } from '../model/index.js';
import { listStates, newestStreamRuns, type RunningFile, type StreamRun } from '../state/index.js';
import { streamDeclaration } from '../streams.js';
import { DOCUMENTS_STREAM } from './documents.js';
import { ageText as agoText } from './read-copy.js';
import type { NewFields } from './schema-changes.js';
import type { Warehouse } from './warehouse.js';

/** What `store-sync status` prints: per store and stream, how far the warehouse got. */

export interface StatusRow {
  store: string;
  stream: string;
  /** When a pass of the stream last completed (for documents: when an ingested file last completed). */
  lastSuccessAt: string | null;
  /** Rows in the stream's main table for the store (not soft-deleted); for documents, documents read. */
  rows: number | null;
  watermark: string | null;
  lastFullScanAt: string | null;
  /** Next page of the pass in progress, when a run stopped inside one. */
  cursorInProgress: string | null;
  /**
   * Rejections of the run that last succeeded and of everything after it: a run that completed with
   * rejections shows them until a later run succeeds without.
   */
  rejectionsSinceLastSuccess: number;
  /**
   * The stream's last run (a backfill does not count, as for the last success): whether the stream completed
   * in it (`ok`), failed, was stopped (`interrupted`) or skipped for a missing scope, when, and why. Null
   * when no recorded run read it.
   */
  lastRun: StreamRunSummary | null;
  /** The newest run, backfills included, in which the stream did not complete; null when none. */
  lastError: StreamRunSummary | null;
}

/** A stream's part in one run, as status tells it. */
export type StreamRunSummary = Omit<StreamRun, 'store' | 'stream'>;

const summaryOf = ({ store: _store, stream: _stream, ...run }: StreamRun): StreamRunSummary => run;

async function scalar(connection: DuckDBConnection, sql: string): Promise<unknown> {
  return (await connection.runAndReadAll(sql)).getRows()[0]?.[0] ?? null;
}

/** Rejections of `successRun` (when the last success is known to be that run) or later than `since`. */
async function rejectionsSince(
  connection: DuckDBConnection,
  store: string,
  stream: string,
  since: string | null,
  successRun: string | null,
) {
  const conditions: string[] = [];
  if (successRun !== null) conditions.push(`_run_id = ${literal(successRun)}`);
  if (since !== null) conditions.push(`_synced_at > TIMESTAMPTZ ${literal(since)}`);
  const window = conditions.length ? ` AND (${conditions.join(' OR ')})` : '';
  return Number(
    await scalar(
      connection,
      `SELECT count(*) FROM _rejected_records WHERE _store = ${literal(store)} AND stream = ${literal(stream)}${window}`,
    ),
  );
}

async function streamRows(
  connection: DuckDBConnection,
  store: string,
  stream: string,
): Promise<number | null> {
  const table = streamDeclaration(stream)?.table;
  if (!table) return null;
  // Tables that full scans soft-delete count their live rows only.
  const live = tableDef(table).fullScan ? ' AND _deleted_at IS NULL' : '';
  return Number(
    await scalar(connection, `SELECT count(*) FROM ${ident(table)} WHERE _store = ${literal(store)}${live}`),
  );
}

type RunsOf = (store: string, stream: string) => Pick<StatusRow, 'lastRun' | 'lastError'>;

async function documentRows(
  connection: DuckDBConnection,
  only: string | undefined,
  runs: RunsOf,
): Promise<StatusRow[]> {
  const where = only === undefined ? '' : ` WHERE _store = ${literal(only)}`;
  const reader = await connection.runAndReadAll(
    `SELECT _store, sum(documents), strftime(max(_synced_at) FILTER (status = 'complete'), '%Y-%m-%dT%H:%M:%S.%gZ'),
            arg_max(_run_id, _synced_at) FILTER (status = 'complete')
     FROM _ingested_files${where} GROUP BY _store ORDER BY _store`,
  );
  const rows: StatusRow[] = [];
  for (const [store, documents, last, run] of reader.getRows()) {
    const lastSuccessAt = last === null ? null : String(last);
    rows.push({
      store: String(store),
      stream: DOCUMENTS_STREAM,
      lastSuccessAt,
      rows: Number(documents ?? 0),
      watermark: null,
      lastFullScanAt: null,
      cursorInProgress: null,
      rejectionsSinceLastSuccess: await rejectionsSince(
        connection,
        String(store),
        DOCUMENTS_STREAM,
        lastSuccessAt,
        run === null ? null : String(run),
      ),
      ...runs(String(store), DOCUMENTS_STREAM),
    });
  }
  return rows;
}

/**
 * `expected`: the streams the config enables, per store. One that has never completed a pass (it failed
 * every time, was skipped for a missing scope, or was never run) has no saved state, and is listed with
 * no last success, so that a pipeline that has never worked does not look like one with nothing to do. So is
 * every stream a recorded run read, config or not: a warehouse whose every run failed shows those runs.
 * With `store`, that store's streams alone are read.
 */
export async function readStatus(
  warehouse: Warehouse,
  expected: { store: string; stream: string }[] = [],
  store?: string,
): Promise<StatusRow[]> {
  return warehouse.exclusive(async () => {
    const connection = warehouse.connection;
    const key = (store: string, stream: string) => `${store}\u0000${stream}`;
    const states = await listStates(connection, store);
    const newest = await newestStreamRuns(connection, store);
    const lastRuns = new Map(newest.last.map((run) => [key(run.store, run.stream), run]));
    const lastErrors = new Map(newest.lastFailure.map((run) => [key(run.store, run.stream), run]));
    // The stream's last run and last error, as status tells them.
    const runs: RunsOf = (store, stream) => {
      const last = lastRuns.get(key(store, stream));
      const failure = lastErrors.get(key(store, stream));
      return { lastRun: last ? summaryOf(last) : null, lastError: failure ? summaryOf(failure) : null };
    };
    const rows: StatusRow[] = [];
    const listed = new Set(states.map((s) => key(s.store, s.stream)));
    const documents = await documentRows(connection, store, runs);
    for (const row of documents) listed.add(key(row.store, row.stream));
    const others = [
      ...expected.filter((e) => store === undefined || e.store === store),
      ...newest.last,
      ...newest.lastFailure,
    ];
    for (const { store, stream } of others) {
      if (listed.has(key(store, stream))) continue;
      listed.add(key(store, stream));
      rows.push({
        store,
        stream,
        lastSuccessAt: null,
        // Documents read: none, for a store whose ingests all failed before a file completed.
        rows: stream === DOCUMENTS_STREAM ? 0 : await streamRows(connection, store, stream),
        watermark: null,
        lastFullScanAt: null,
        cursorInProgress: null,
        rejectionsSinceLastSuccess: await rejectionsSince(connection, store, stream, null, null),
        ...runs(store, stream),
      });
    }
    for (const saved of states) {
      rows.push({
        store: saved.store,
        stream: saved.stream,
        lastSuccessAt: saved.lastSuccessAt,
        rows: await streamRows(connection, saved.store, saved.stream),
        watermark: saved.state.watermark,
        lastFullScanAt: saved.state.lastFullScanAt,
        cursorInProgress:
          Object.values(saved.state.pass?.slices ?? {}).find((s) => !s.done && s.nextUrl)?.nextUrl ?? null,
        rejectionsSinceLastSuccess: await rejectionsSince(
          connection,
          saved.store,
          saved.stream,
          saved.lastSuccessAt,
          // The row was last saved by the run that completed the pass, when none is in progress.
          saved.state.pass === null ? saved.runId : null,
        ),
        ...runs(saved.store, saved.stream),
      });
    }
    rows.push(...documents);
    return rows.sort((a, b) => a.store.localeCompare(b.store) || a.stream.localeCompare(b.stream));
  });
}

/** A status row as `status` judges it against the freshness bound and its last run. */
export interface JudgedStatusRow extends StatusRow {
  /** No success within the freshness bound, or none ever (ingested documents: never stale). */
  stale: boolean;
  /** Its last run did not complete it (failed, interrupted, skipped), whatever the freshness. */
  failing: boolean;
}

/** `status`'s judgement, shared with the report so that both say the same of every stream. */
export function judgeStatus(
  rows: readonly StatusRow[],
  nowMs: number,
  freshnessHours: number,
): JudgedStatusRow[] {
  const bound = freshnessHours * 3600_000;
  return rows.map((row) => ({
    ...row,
    // Ingested documents come when someone ingests them, not on a schedule: no freshness applies.
    stale:
      row.stream !== DOCUMENTS_STREAM &&
      (row.lastSuccessAt === null || nowMs - Date.parse(row.lastSuccessAt) > bound),
    failing: row.lastRun !== null && row.lastRun.outcome !== 'ok',
  }));
}

/**
 * `readStatus` of `store`'s streams (every store's without it), judged by `judgeStatus`: what `status` prints
 * and the report shows.
 */
export async function readJudgedStatus(
  warehouse: Warehouse,
  options: {
    expected: { store: string; stream: string }[];
    store?: string | undefined;
    nowMs: number;
    freshnessHours: number;
  },
): Promise<JudgedStatusRow[]> {
  const rows = await readStatus(warehouse, options.expected, options.store);
  return judgeStatus(rows, options.nowMs, options.freshnessHours);
}

/** How far back `status` prints the errors a stream has since got past (its JSON has the last one always). */
export const RECENT_ERROR_DAYS = 7;

/*
 * The wording of a status row, shared by `status`'s table and the report's so that both say the same.
 */

/** How long before `nowMs` the time `from` was: never, 12 min, 3.5 h, 2.1 d. */
export function ageText(from: string | null, nowMs: number): string {
  if (!from) return 'never';
  const minutes = Math.round((nowMs - Date.parse(from)) / 60_000);
  if (minutes < 60) return `${minutes} min`;
  if (minutes < 48 * 60) return `${(minutes / 60).toFixed(1)} h`;
  return `${(minutes / 1440).toFixed(1)} d`;
}

/** The fresh column: `-` for ingested documents (no freshness applies), else STALE or ok. */
export function freshText(row: JudgedStatusRow): string {
  return row.stream === DOCUMENTS_STREAM ? '-' : row.stale ? 'STALE' : 'ok';
}

/** The last-run column: ok, or what the last run did to the stream (FAILED, INTERRUPTED, SKIPPED); '' for none. */
export function lastRunText(row: JudgedStatusRow): string {
  if (!row.lastRun) return '';
  return row.failing ? row.lastRun.outcome.toUpperCase() : 'ok';
}

/**
 * The last error shown for the row: the one that makes the stream fail now, or one of the last
 * RECENT_ERROR_DAYS that a later run got past (a stream that fails one night in three is worth knowing
 * about); null for none.
 */
export function shownLastError(row: JudgedStatusRow, nowMs: number): StreamRunSummary | null {
  const e = row.lastError;
  if (!e || !(row.failing || nowMs - Date.parse(e.at) <= RECENT_ERROR_DAYS * 86_400_000)) return null;
  return e;
}

/** The run a shown error came from: `sync run ID`, `backfill run ID`, `ingest run ID`. */
export function errorRunText(error: StreamRunSummary): string {
  return `${error.mode === 'backfill' ? 'backfill' : error.command} run ${error.runId}`;
}

/** After a shown error: `, completed since` when a later run got past it, else nothing. */
export function completedSinceText(row: JudgedStatusRow): string {
  return row.failing ? '' : ', completed since';
}

/** How far back `status` looks for new fields: those first seen within these many days. */
export const NEW_FIELDS_DAYS = 7;

async function newFieldsWhere(
  connection: DuckDBConnection,
  where: string,
  except: readonly NewFields[] = [],
): Promise<NewFields[]> {
  const reader = await connection.runAndReadAll(
    `SELECT _store, "table", field_path, strftime(first_seen_at, '%Y-%m-%dT%H:%M:%S.%gZ')
     FROM _schema_changes WHERE ${where} ORDER BY _store, "table", field_path`,
  );
  const known = new Set(except.flatMap((e) => e.fields.map((f) => [e.store, e.table, f].join('\u0000'))));
  const found: NewFields[] = [];
  for (const [store, table, field, first] of reader.getRows()) {
    const [s, t, f, at] = [String(store), String(table), String(field), String(first)];
    if (known.has([s, t, f].join('\u0000'))) continue;
    const last = found.at(-1);
    if (last?.store === s && last.table === t) {
      last.fields.push(f);
      if (at < last.firstSeenAt) last.firstSeenAt = at;
    } else found.push({ store: s, table: t, fields: [f], firstSeenAt: at });
  }
  return found;
}

/**
 * The field paths run `runId` saw first for `store` (it made their `_schema_changes` rows), less those of
 * `except` (what an earlier call for the same run reported: a drain ingests each spool file on its own).
 */
export function newFieldsOfRun(
  warehouse: Warehouse,
  store: string,
  runId: string,
  except: readonly NewFields[] = [],
): Promise<NewFields[]> {
  return warehouse.exclusive(() =>
    newFieldsWhere(warehouse.connection, `_store = ${literal(store)} AND run_id = ${literal(runId)}`, except),
  );
}

/**
 * The field paths first seen within NEW_FIELDS_DAYS before `nowMs`, per store and table: what `status`
 * lists. By first sighting, not by run, so a sync after the ingest that met them does not hide them, and a
 * rebuild (which keeps the original times) does not make old ones new.
 */
export function recentNewFields(
  warehouse: Warehouse,
  nowMs: number,
  days = NEW_FIELDS_DAYS,
): Promise<NewFields[]> {
  return warehouse.exclusive(async () => {
    // A warehouse made by an older store-sync and opened read-only (status) has not been migrated yet.
    const table = await warehouse.connection.runAndReadAll(
      "SELECT 1 FROM information_schema.tables WHERE table_schema = 'main' AND table_name = '_schema_changes'",
    );
    if (table.getRows().length === 0) return [];
    return newFieldsWhere(
      warehouse.connection,
      `first_seen_at > ${timestampLiteral(nowMs - days * 86_400_000)}`,
    );
  });
}

/** The runs a live writer has in progress (src/state/running.ts), those of `store` (and of no one store) only. */
export function runningOf(file: RunningFile | null, store: string | undefined): RunningFile | null {
  if (file === null) return null;
  const runs = file.runs.filter((run) => store === undefined || run.store === null || run.store === store);
  return runs.length ? { ...file, runs } : null;
}

const counted = (n: number, one: string, many = `${one}s`) =>
  `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;

/**
 * `status`'s lines for runs in progress: each run's command, store, start and commits so far, then a line of
 * its streams' pages and records (a sync's), e.g.
 * `shop sync (incremental), run 01J…, started 3 min ago: 4 commits, 800 records, last commit 2 s ago`.
 */
export function runningLines(file: RunningFile, nowMs: number): string[] {
  const lines = [`running now (pid ${file.pid} writes the warehouse):`];
  for (const run of file.runs) {
    const what = [run.store, run.command].filter(Boolean).join(' ') + (run.mode ? ` (${run.mode})` : '');
    const commits = run.lastCommitAt
      ? `${counted(run.commits, 'commit')}, ${counted(run.records, 'record')}, last commit ${agoText(new Date(run.lastCommitAt), nowMs)}`
      : 'nothing committed yet';
    lines.push(`  ${what}, run ${run.runId}, started ${agoText(new Date(run.startedAt), nowMs)}: ${commits}`);
    const streams = Object.entries(run.streams).map(
      ([name, s]) => `${name} ${counted(s.pages, 'page')}, ${counted(s.records, 'record')}`,
    );
    if (streams.length) lines.push(`    ${streams.join('; ')}`);
  }
  return lines;
}
