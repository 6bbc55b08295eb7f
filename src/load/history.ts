import {
  BOOKKEEPING_COLUMNS,
  HISTORY_OF,
  historyName,
  ident,
  literal,
  type TableDef,
  tableDef,
  versionedColumns,
} from '../model/index.js';

/**
 * Observed-version history (src/model/tables/history.ts; docs/warehouse.md, "History"). After a batch's unit
 * rows are merged (batch-writer.ts) and after a full scan's soft deletes (full-scan.ts), in the same
 * transaction, the rows they touched are compared with the current version of their record in
 * `<table>_history`, by a hash of their content columns computed in SQL; only a record whose content
 * differs, that is new, that a full scan no longer returned or that came back gets a version. The previous
 * version is closed at the new one's `_valid_from`. Because it runs where the merge does, a rebuild (which
 * replays the raw landing through the same path, in landing order) re-derives the same history.
 */

export const historyTracked = (table: string): boolean => HISTORY_OF.includes(table);

/** The history tables, for rebuild to empty before it replays the landing. */
export const historyTables = (): string[] => HISTORY_OF.map(historyName);

/** `md5` of a row's content columns (BOOKKEEPING_COLUMNS left out), as text of a named struct. */
function contentHash(def: TableDef, alias: string): string {
  const fields = def.columns
    .filter((c) => !BOOKKEEPING_COLUMNS.has(c.name))
    .map((c) => `${literal(c.name)}: ${alias}.${ident(c.name)}`);
  return `md5(CAST({${fields.join(', ')}} AS VARCHAR))`;
}

const CHANGES = 'temp.main.history_changes';

/**
 * The statements that add the versions of the rows of `table` (a tracked unit table) matching `rows` (a
 * condition on its alias `t`), for one store, as observed by run `runId`.
 */
export function historySql(table: string, store: string, runId: string, rows: string): string {
  const def = tableDef(table);
  const key = ident(def.unit!.key);
  const history = ident(historyName(table));
  const deleted = def.fullScan ? 'cur._deleted_at IS NOT NULL' : 'false';
  // The API's own time where the record has one (its version), else the event's, else the observation's.
  // Unqualified: the joined versions' columns are all named `_open_*`, so the version's SQL reads the row's.
  const version = def.unit!.version ? `${def.unit!.version}, ` : '';
  const observedAt = `coalesce(${version}_event_at, _synced_at)`;
  const columns = versionedColumns(def).map((c) => c.name);
  return [
    // Only the current versions of the rows' records are read (and hashed): the semi join bounds them.
    `CREATE OR REPLACE TEMP TABLE history_changes AS ` +
      `WITH cur AS (SELECT t.*, ${contentHash(def, 't')} AS _content_hash FROM ${ident(table)} t ` +
      `WHERE t._store = ${literal(store)} AND (${rows})), ` +
      `o AS (SELECT h.${key} AS _open_key, ${contentHash(def, 'h')} AS _open_hash, ` +
      `h._change AS _open_change, h._valid_from AS _open_from, h._version AS _open_version FROM ${history} h ` +
      `SEMI JOIN cur ON h.${key} = cur.${key} ` +
      `WHERE h._store = ${literal(store)} AND h._valid_to IS NULL) ` +
      `SELECT * FROM (SELECT cur.*, coalesce(o._open_version, 0) + 1 AS _version, ` +
      `CASE WHEN ${deleted} THEN (CASE WHEN o._open_change IS DISTINCT FROM 'deleted' THEN 'deleted' END) ` +
      `WHEN o._open_key IS NULL THEN 'created' ` +
      `WHEN o._open_change = 'deleted' THEN 'reappeared' ` +
      `WHEN o._open_hash <> cur._content_hash THEN 'changed' END AS _change, ` +
      // greatest() skips NULL: a first version starts at its own time.
      `greatest(${def.fullScan ? `CASE WHEN ${deleted} THEN cur._deleted_at END, ` : ''}` +
      `${def.fullScan ? `CASE WHEN NOT (${deleted}) THEN ${observedAt} END` : observedAt}, o._open_from) AS _valid_from ` +
      `FROM cur LEFT JOIN o ON o._open_key = cur.${key}) ` +
      `WHERE _change IS NOT NULL`,
    `UPDATE ${history} SET _valid_to = c._valid_from FROM ${CHANGES} c ` +
      `WHERE ${history}._store = ${literal(store)} AND ${history}.${key} = c.${key} AND ${history}._valid_to IS NULL`,
    `INSERT INTO ${history} BY NAME SELECT ${columns.map(ident).join(', ')}, ` +
      `_version, _valid_from, NULL::TIMESTAMPTZ AS _valid_to, ${literal(runId)} AS _observed_run_id, _change FROM ${CHANGES}`,
    `DROP TABLE ${CHANGES}`,
  ].join(';\n');
}

/** The versions a batch's merged rows make: its rows are those it loaded (its own `_synced_at` and run). */
export function batchHistorySql(table: string, store: string, runId: string, syncedAtMs: number): string {
  const at = `TIMESTAMPTZ ${literal(new Date(syncedAtMs).toISOString())}`;
  return historySql(table, store, runId, `t._synced_at = ${at} AND t._run_id = ${literal(runId)}`);
}

/**
 * The versions a full scan's soft deletes make: `deleted` for rows now carrying `_deleted_at`, and
 * `reappeared` for a deleted record whose `_deleted_at` the scan cleared without loading it again (its
 * rejection by the scan counts as seen: full-scan.ts).
 */
export function softDeleteHistorySql(table: string, store: string, runId: string): string {
  const key = ident(tableDef(table).unit!.key);
  const deletedNow =
    `SELECT d.${key} FROM ${ident(historyName(table))} d WHERE d._store = ${literal(store)} ` +
    `AND d._valid_to IS NULL AND d._change = 'deleted'`;
  return historySql(table, store, runId, `t._deleted_at IS NOT NULL OR t.${key} IN (${deletedNow})`);
}
