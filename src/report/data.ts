import { stat } from 'node:fs/promises';
import type { NewFields } from '../load/schema-changes.js';
import { type JudgedStatusRow, NEW_FIELDS_DAYS, readJudgedStatus, recentNewFields } from '../load/status.js';
import type { Warehouse } from '../load/warehouse.js';
import { tableFamilies } from '../model/docs.js';
import { ident, literal, type TableDef, tableDefinitions, timestampLiteral } from '../model/index.js';
import type { SpoolStatus } from '../receive/status.js';

/**
 * What `store-sync report` shows, read from a warehouse opened read-only. The streams and the new fields come
 * from the functions `status` uses (src/load/status.ts: readStatus, recentNewFields) and the spools from
 * src/receive/status.ts, so the report's numbers are `status --json`'s; the rest (runs, table sizes, field
 * and rejection examples) are plain reads of the bookkeeping tables.
 */

/** How many of the latest runs the charts and the run table show. */
export const REPORT_RUNS = 60;
/** How many of the latest rejections are shown whole (the counts cover all of them). */
export const REPORT_REJECTION_EXAMPLES = 40;
/** How many fields of `_schema_changes` are listed, the latest seen first. */
export const REPORT_SCHEMA_CHANGES = 300;
/** A rejected payload is shown up to this many characters (the table keeps 64 KiB, the raw landing all). */
export const REPORT_PAYLOAD_CHARS = 2_000;

/** As `status` judges it (src/load/status.ts judgeStatus): stale, failing. */
export type ReportStream = JudgedStatusRow;

export interface ReportRun {
  runId: string;
  store: string | null;
  command: string;
  mode: string | null;
  startedAt: string;
  finishedAt: string | null;
  seconds: number | null;
  outcome: string | null;
  requests: number | null;
  retries: number | null;
  /** 429 answers; null when the run did not record them (an older run, or one that sends no requests). */
  rateLimited: number | null;
  /** Records (or documents) the run stored, as its `counts` say. */
  records: number | null;
  /** Rows of `_rejected_records` the run wrote (records and single fields). */
  rejections: number;
  error: string | null;
}

export interface ReportTable {
  table: string;
  family: string;
  rows: number;
  /** Soft-deleted rows of a table fed by full scans; null for the others. */
  deleted: number | null;
}

export interface ReportSchemaChange {
  store: string;
  table: string;
  fieldPath: string;
  firstSeenAt: string;
  lastSeenAt: string | null;
  count: number | null;
  example: string | null;
  /** First seen within NEW_FIELDS_DAYS: one of the new fields `status` lists. */
  recent: boolean;
}

export interface ReportRejectionGroup {
  store: string;
  stream: string;
  stage: string | null;
  level: string;
  count: number;
  lastAt: string;
}

export interface ReportRejection {
  store: string;
  stream: string;
  stage: string | null;
  level: string;
  key: string | null;
  reason: string;
  source: string | null;
  payload: string | null;
  /** The payload was longer than REPORT_PAYLOAD_CHARS and is cut. */
  payloadCut: boolean;
  at: string;
  runId: string | null;
}

export interface ReportData {
  generatedAt: string;
  warehouse: string;
  /** The warehouse file and its write-ahead log, in bytes (DuckDB gives no cheap size per table). */
  warehouseBytes: number | null;
  freshnessHours: number;
  store: string | null;
  streams: ReportStream[];
  newFieldsDays: number;
  /** What `status` lists as new fields: first seen within newFieldsDays. */
  newFields: NewFields[];
  runs: ReportRun[];
  tables: ReportTable[];
  schemaChanges: ReportSchemaChange[];
  rejectionGroups: ReportRejectionGroup[];
  rejections: ReportRejection[];
  spools: SpoolStatus[];
}

export interface ReportOptions {
  warehousePath: string;
  /** The streams the config enables, per store (as for readStatus). */
  expected: { store: string; stream: string }[];
  freshnessHours: number;
  /** Only this store's streams, runs, fields and rejections (tables are counted whole). */
  store?: string;
  spools: SpoolStatus[];
  now?: number;
}

const ISO = `'%Y-%m-%dT%H:%M:%S.%gZ'`;
const iso = (column: string) => `strftime(${column}, ${ISO})`;

const text = (value: unknown): string | null =>
  value === null || value === undefined ? null : String(value);
const num = (value: unknown): number | null => (value === null || value === undefined ? null : Number(value));

async function rows(warehouse: Warehouse, sql: string): Promise<unknown[][]> {
  return (await warehouse.selectJson(sql)).rows;
}

/** The columns a table has: a warehouse made by an older store-sync, opened read-only, is not migrated. */
async function columnsOf(warehouse: Warehouse, table: string): Promise<Set<string>> {
  const found = await rows(
    warehouse,
    `SELECT column_name FROM information_schema.columns WHERE table_schema = 'main' AND table_name = ${literal(table)}`,
  );
  return new Set(found.map(([name]) => String(name)));
}

/**
 * The records a run stored, from its `counts` as each command writes them: a sync's per stream
 * (`{stream: {records}}`), an ingest's or a drain's (`{documents: {documents}}`), a rebuild's (`{records}`).
 */
export function recordsOfCounts(counts: unknown): number | null {
  if (typeof counts !== 'object' || counts === null) return null;
  const own = counts as Record<string, unknown>;
  if (typeof own.records === 'number') return own.records;
  if (typeof own.documents === 'number') return own.documents;
  let total: number | null = null;
  for (const value of Object.values(own)) {
    const inner = recordsOfCounts(value);
    if (inner !== null && typeof value === 'object') total = (total ?? 0) + inner;
  }
  return total;
}

async function readRuns(warehouse: Warehouse, store: string | undefined): Promise<ReportRun[]> {
  const columns = await columnsOf(warehouse, '_sync_runs');
  if (columns.size === 0) return [];
  const rateLimited = columns.has('rate_limited') ? 'r.rate_limited' : 'NULL';
  // A rebuild (no store) re-derives every store's tables, so it belongs to each store's history.
  const where = store === undefined ? '' : `WHERE r._store = ${literal(store)} OR r._store IS NULL`;
  const found = await rows(
    warehouse,
    `WITH rejected AS (SELECT _run_id, count(*)::DOUBLE AS n FROM _rejected_records GROUP BY _run_id)
     SELECT * FROM (
       SELECT r._run_id, r._store, r.command, r.mode, ${iso('r.started_at')}, ${iso('r.finished_at')},
              (epoch_ms(r.finished_at) - epoch_ms(r.started_at)) / 1000.0, r.outcome,
              r.requests::DOUBLE, r.retries::DOUBLE, ${rateLimited}::DOUBLE, r.counts::VARCHAR,
              coalesce(rejected.n, 0), r.error
       FROM _sync_runs r LEFT JOIN rejected USING (_run_id) ${where}
       ORDER BY r.started_at DESC, r._run_id DESC LIMIT ${REPORT_RUNS}
     ) ORDER BY 5, 1`,
  );
  return found.map((r) => {
    let counts: unknown = null;
    try {
      counts = r[11] === null ? null : JSON.parse(String(r[11]));
    } catch {
      counts = null;
    }
    return {
      runId: String(r[0]),
      store: text(r[1]),
      command: String(r[2]),
      mode: text(r[3]),
      startedAt: String(r[4]),
      finishedAt: text(r[5]),
      seconds: num(r[6]),
      outcome: text(r[7]),
      requests: num(r[8]),
      retries: num(r[9]),
      rateLimited: num(r[10]),
      records: recordsOfCounts(counts),
      rejections: Number(r[12]),
      error: text(r[13]),
    };
  });
}

async function readTables(warehouse: Warehouse): Promise<ReportTable[]> {
  const familyOf = new Map(tableFamilies().flatMap(([family, defs]) => defs.map((t) => [t.name, family])));
  const present = new Set(
    (
      await rows(warehouse, "SELECT table_name FROM information_schema.tables WHERE table_schema = 'main'")
    ).map(([name]) => String(name)),
  );
  const defs = tableDefinitions.filter((t) => present.has(t.name));
  if (defs.length === 0) return [];
  const deleted = (t: TableDef) =>
    t.fullScan ? 'count(*) FILTER (WHERE _deleted_at IS NOT NULL)::DOUBLE' : 'NULL::DOUBLE';
  const found = await rows(
    warehouse,
    defs
      .map((t) => `SELECT ${literal(t.name)}, count(*)::DOUBLE, ${deleted(t)} FROM ${ident(t.name)}`)
      .join(' UNION ALL '),
  );
  const counted = new Map(found.map(([name, n, d]) => [String(name), [Number(n), num(d)] as const]));
  return defs.map((t) => ({
    table: t.name,
    family: familyOf.get(t.name) ?? t.entity,
    rows: counted.get(t.name)?.[0] ?? 0,
    deleted: counted.get(t.name)?.[1] ?? null,
  }));
}

async function readSchemaChanges(
  warehouse: Warehouse,
  store: string | undefined,
  now: number,
): Promise<ReportSchemaChange[]> {
  const columns = await columnsOf(warehouse, '_schema_changes');
  if (columns.size === 0) return [];
  const where = store === undefined ? '' : `WHERE _store = ${literal(store)}`;
  const recentFrom = timestampLiteral(now - NEW_FIELDS_DAYS * 86_400_000);
  const found = await rows(
    warehouse,
    `SELECT _store, "table", field_path, ${iso('first_seen_at')}, ${iso('last_seen_at')}, "count"::DOUBLE,
            example, first_seen_at > ${recentFrom}
     FROM _schema_changes ${where}
     ORDER BY first_seen_at > ${recentFrom} DESC, last_seen_at DESC, _store, "table", field_path
     LIMIT ${REPORT_SCHEMA_CHANGES}`,
  );
  return found.map((r) => ({
    store: String(r[0]),
    table: String(r[1]),
    fieldPath: String(r[2]),
    firstSeenAt: String(r[3]),
    lastSeenAt: text(r[4]),
    count: num(r[5]),
    example: text(r[6]),
    recent: r[7] === true,
  }));
}

async function readRejections(
  warehouse: Warehouse,
  store: string | undefined,
): Promise<{ groups: ReportRejectionGroup[]; examples: ReportRejection[] }> {
  const columns = await columnsOf(warehouse, '_rejected_records');
  if (columns.size === 0) return { groups: [], examples: [] };
  // Rejections recorded before fields could be refused alone were all of whole records.
  const level = columns.has('level') ? "coalesce(level, 'record')" : "'record'";
  const where = store === undefined ? '' : `WHERE _store = ${literal(store)}`;
  const groups = await rows(
    warehouse,
    `SELECT _store, stream, stage, ${level} AS lvl, count(*)::DOUBLE, ${iso('max(_synced_at)')}
     FROM _rejected_records ${where} GROUP BY ALL ORDER BY 1, 2, 3, 4`,
  );
  const examples = await rows(
    warehouse,
    `SELECT _store, stream, stage, ${level}, "key", reason, source, left(payload, ${REPORT_PAYLOAD_CHARS}),
            length(payload) > ${REPORT_PAYLOAD_CHARS}, ${iso('_synced_at')}, _run_id
     FROM _rejected_records ${where}
     ORDER BY _synced_at DESC, raw_seq DESC NULLS LAST LIMIT ${REPORT_REJECTION_EXAMPLES}`,
  );
  return {
    groups: groups.map((r) => ({
      store: String(r[0]),
      stream: String(r[1]),
      stage: text(r[2]),
      level: String(r[3]),
      count: Number(r[4]),
      lastAt: String(r[5]),
    })),
    examples: examples.map((r) => ({
      store: String(r[0]),
      stream: String(r[1]),
      stage: text(r[2]),
      level: String(r[3]),
      key: text(r[4]),
      reason: String(r[5]),
      source: text(r[6]),
      payload: text(r[7]),
      payloadCut: r[8] === true,
      at: String(r[9]),
      runId: text(r[10]),
    })),
  };
}

async function fileBytes(file: string): Promise<number | null> {
  let total: number | null = null;
  for (const name of [file, `${file}.wal`]) {
    try {
      total = (total ?? 0) + (await stat(name)).size;
    } catch {
      // No write-ahead log is the usual state of a closed warehouse.
    }
  }
  return total;
}

/** Everything the report shows, from a warehouse the caller opened (read-only) and closes. */
export async function gatherReport(warehouse: Warehouse, options: ReportOptions): Promise<ReportData> {
  const now = options.now ?? Date.now();
  const { store } = options;
  const streams = await readJudgedStatus(warehouse, {
    expected: options.expected,
    store,
    nowMs: now,
    freshnessHours: options.freshnessHours,
  });
  const newFields = (await recentNewFields(warehouse, now)).filter(
    (entry) => store === undefined || entry.store === store,
  );
  const { groups, examples } = await readRejections(warehouse, store);
  return {
    generatedAt: new Date(now).toISOString(),
    warehouse: options.warehousePath,
    warehouseBytes: await fileBytes(options.warehousePath),
    freshnessHours: options.freshnessHours,
    store: store ?? null,
    streams,
    newFieldsDays: NEW_FIELDS_DAYS,
    newFields,
    runs: await readRuns(warehouse, store),
    tables: await readTables(warehouse),
    schemaChanges: await readSchemaChanges(warehouse, store, now),
    rejectionGroups: groups,
    rejections: examples,
    spools: options.spools,
  };
}
