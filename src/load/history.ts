import type { DuckDBConnection } from '@duckdb/node-api';
import {
  contentHashSql,
  HISTORIES_OF,
  HISTORY_OF,
  historyName,
  ident,
  literal,
  OWNED_HISTORY_OF,
  ownedBy,
  type TableDef,
  tableDef,
  versionedColumns,
} from '../model/index.js';
import { historyOn } from './history-switch.js';
import type { Key } from './key-ranges.js';
import { keysSql } from './merge.js';

/**
 * Observed-version history (src/model/tables/history.ts; docs/warehouse.md, "History"). After a batch's unit
 * rows are merged (batch-writer.ts) and after a full scan's soft deletes (full-scan.ts), in the same
 * transaction, the rows they touched are compared with the current version of their record in
 * `<table>_history`, by a hash of their content columns computed in SQL; only a record whose content
 * differs, that is new, that a full scan no longer returned or that came back gets a version. The previous
 * version is closed at the new one's `_valid_from`. Because it runs where the merge does, a rebuild (which
 * replays the raw landing through the same path, in landing order) re-derives the same history.
 */

/** Whether loads of `table` write history versions: a unit table of HISTORY_OF, with history on. */
export const historyTracked = (table: string): boolean => HISTORY_OF.includes(table) && historyOn();

/** The history tables, for rebuild to empty before it replays the landing. */
export const historyTables = (): string[] => HISTORIES_OF.map(historyName);

/** The tables of `unit` that keep a history of their own (OWNED_HISTORY_OF), in registry order. */
const ownedHistories = (unit: string): TableDef[] =>
  ownedBy(unit).filter((def) => OWNED_HISTORY_OF.includes(def.name));

const CHANGES = 'temp.main.history_changes';
/**
 * The rows being versioned (and, for an owned table, their units), put in temporary tables before they are
 * joined with the history: with their exact size known, DuckDB builds its join's hash table on these few rows
 * and streams the history past it, pruned by their keys' range. Joined in one statement with the history, the
 * optimizer misjudged them as the larger side and built the hash table on every open version, with all its
 * columns: a cost that grew with the history, batch after batch (docs/performance.md, "Issue 27").
 */
const ROWS = 'temp.main.history_rows';
const OWNERS = 'temp.main.history_owners';

/**
 * The statements that add the versions of the rows of `table` (a tracked unit table) matching `rows` (a
 * condition on its alias `t`), for one store, as observed by run `runId`, and those of the tables it owns that
 * keep a history, for the same units. `rowsAgain` is a condition on `t` that still holds for those rows once
 * their versions are written (`rows` itself when it reads nothing of the history): the INSERT reads the
 * versions' columns through it, which lets DuckDB skip the unit table's other rows.
 *
 * As one text, every step run whatever `find` found: a full scan's statements are put in its batch's `after`
 * list, which rebuild prepares in worker threads that have no DuckDB to ask. A batch's own history, written
 * where the connection is, skips the empty writes (writeHistory).
 */
function historySql(table: string, store: string, runId: string, rows: string, rowsAgain: string): string {
  return historySteps(table, store, runId, rows, rowsAgain)
    .flatMap((step) => [...step.find, step.close, step.insert, ...DROPS])
    .join(';\n');
}

/**
 * One history table's statements: `find` puts the versions to write in `history_changes`, `close` closes the
 * current versions they replace, and `insert` adds them.
 */
interface HistoryStep {
  find: string[];
  close: string;
  insert: string;
}

/**
 * The steps of `table`'s history and of the tables it owns that keep one. The owned tables' come first: `rows`
 * may read the unit's history (a full scan's `reappeared` units are those whose current version is
 * `deleted`), which the unit's own statements change.
 */
function historySteps(
  table: string,
  store: string,
  runId: string,
  rows: string,
  rowsAgain: string,
): HistoryStep[] {
  return [
    ...ownedHistories(table).map((owned) => ownedHistorySteps(owned, tableDef(table), store, runId, rows)),
    unitHistoryStep(table, store, runId, rows, rowsAgain),
  ];
}

/**
 * The temporary tables, dropped after each step of historySql. writeHistory leaves them to the next batch's
 * `find`, which replaces them: dropping them would be statements more for every batch.
 */
const DROPS = [CHANGES, ROWS, OWNERS].map((temp) => `DROP TABLE IF EXISTS ${temp}`);

/**
 * Writes the versions a batch's merged rows make (see historySql), skipping a table's statements when its
 * `find` found nothing for them to do: in a nightly run most batches re-read records that have not changed,
 * and the INSERT, of every versioned column, costs its planning even with nothing to insert; in a first sync
 * every version is a record's first (`created`), so there is no current version to close, and the UPDATE,
 * which joins the changes with the table's history, would close none.
 */
async function writeHistory(
  connection: DuckDBConnection,
  table: string,
  store: string,
  runId: string,
  rows: string,
  rowsAgain: string,
): Promise<void> {
  for (const step of historySteps(table, store, runId, rows, rowsAgain)) {
    const found = await connection.runAndReadAll(
      [
        ...step.find,
        `SELECT count(*)::INTEGER, count(*) FILTER (WHERE _change <> 'created')::INTEGER FROM ${CHANGES}`,
      ].join(';\n'),
    );
    const [versions, replacing] = found.getRows()[0]!.map(Number);
    if (versions! > 0)
      await connection.run((replacing! > 0 ? [step.close, step.insert] : [step.insert]).join(';\n'));
  }
}

/** The statement closing the current versions, of `def`'s history, that `history_changes` replaces by `keys`. */
function closeSql(def: TableDef, store: string, keys: readonly string[]): string {
  const history = ident(historyName(def.name));
  const same = keys.map((k) => `${history}.${ident(k)} = c.${ident(k)}`).join(' AND ');
  return (
    `UPDATE ${history} SET _valid_to = c._valid_from FROM ${CHANGES} c ` +
    `WHERE ${history}._store = ${literal(store)} AND ${same} AND ${history}._valid_to IS NULL`
  );
}

/** The API's own time of a unit row where it has one (its version), else the event's, else the observation's. */
const observedAtOf = (unit: TableDef, alias = ''): string => {
  const a = alias ? `${alias}.` : '';
  return `coalesce(${unit.unit!.version ? `${a}${ident(unit.unit!.version)}, ` : ''}${a}_event_at, ${a}_synced_at)`;
};

/** A version's own fields, as SELECT expressions (see insertVersionsSql). */
interface VersionFields {
  version: string;
  validFrom: string;
  change: string;
  contentHash: string;
}

/**
 * The INSERT of versions into `def`'s history: its versioned columns read from `alias` (none: unqualified),
 * the version's own fields, open (`_valid_to` NULL) and observed by run `runId`; `from` is the rest of the
 * SELECT (its FROM, joins and WHERE).
 */
function insertVersionsSql(
  def: TableDef,
  alias: string,
  fields: VersionFields,
  runId: string,
  from: string,
): string {
  const qualified = alias ? `${alias}.` : '';
  const columns = versionedColumns(def).map((c) => `${qualified}${ident(c.name)}`);
  return (
    `INSERT INTO ${ident(historyName(def.name))} BY NAME SELECT ${columns.join(', ')}, ` +
    `${fields.version} AS _version, ${fields.validFrom} AS _valid_from, NULL::TIMESTAMPTZ AS _valid_to, ` +
    `${literal(runId)} AS _observed_run_id, ${fields.change} AS _change, ${fields.contentHash} AS _content_hash ` +
    from
  );
}

/**
 * The versions of the rows `owned` (a table `unit` owns) holds for the units matching `rows`: each row compared
 * with the current version of its key; a current version whose row the unit no longer has becomes `deleted`
 * (the unit was loaded without it), with its last columns. A unit not loaded again keeps its rows, so it is
 * never among `rows` and its rows' versions stand.
 */
function ownedHistorySteps(
  owned: TableDef,
  unit: TableDef,
  store: string,
  runId: string,
  rows: string,
): HistoryStep {
  const history = ident(historyName(owned.name));
  const owner = ident(owned.owner!.column);
  const keys = owned.key.filter((k) => k !== '_store');
  const same = (a: string, b: string) => keys.map((k) => `${a}.${ident(k)} = ${b}.${ident(k)}`).join(' AND ');
  const columns = versionedColumns(owned).map((c) => ident(c.name));
  const deleted = owned.fullScan ? 'cur._deleted_at IS NOT NULL' : 'false';
  const s = literal(store);
  const find = [
    `CREATE OR REPLACE TEMP TABLE history_owners AS SELECT t.${ident(unit.unit!.key)} AS _owner, ` +
      `${observedAtOf(unit, 't')} AS _owner_at FROM ${ident(unit.name)} t WHERE t._store = ${s} AND (${rows})`,
    `CREATE OR REPLACE TEMP TABLE history_rows AS SELECT r.*, ${contentHashSql(owned, 'r')} AS _content_hash, ` +
      `w._owner_at FROM ${ident(owned.name)} r JOIN ${OWNERS} w ON r.${owner} = w._owner WHERE r._store = ${s}`,
    `CREATE OR REPLACE TEMP TABLE history_changes AS ` +
      `WITH o AS (SELECT h.*, h._content_hash AS _open_hash, w._owner_at FROM ${history} h ` +
      `JOIN ${OWNERS} w ON h.${owner} = w._owner WHERE h._store = ${s} AND h._valid_to IS NULL) ` +
      `SELECT * FROM (` +
      `SELECT ${columns.map((c) => `cur.${c}`).join(', ')}, cur._content_hash, coalesce(o._version, 0) + 1 AS _version, ` +
      `CASE WHEN ${deleted} THEN (CASE WHEN o._change IS DISTINCT FROM 'deleted' THEN 'deleted' END) ` +
      `WHEN o._version IS NULL THEN 'created' ` +
      `WHEN o._change = 'deleted' THEN 'reappeared' ` +
      `WHEN o._open_hash <> cur._content_hash THEN 'changed' END AS _change, ` +
      `greatest(CASE WHEN ${deleted} THEN cur._deleted_at ELSE cur._owner_at END, o._valid_from) AS _valid_from ` +
      `FROM ${ROWS} cur LEFT JOIN o ON ${same('o', 'cur')} ` +
      `UNION ALL ` +
      `SELECT ${columns.map((c) => `o.${c}`).join(', ')}, o._content_hash, o._version + 1, 'deleted', greatest(o._owner_at, o._valid_from) ` +
      `FROM o ANTI JOIN ${ROWS} cur ON ${same('o', 'cur')} WHERE o._change <> 'deleted'` +
      `) WHERE _change IS NOT NULL`,
  ];
  // An owned table's versions carry their own columns through history_changes.
  const insert = insertVersionsSql(
    owned,
    '',
    { version: '_version', validFrom: '_valid_from', change: '_change', contentHash: '_content_hash' },
    runId,
    `FROM ${CHANGES}`,
  );
  return { find, close: closeSql(owned, store, keys), insert };
}

/**
 * The versions of the rows of `table`, a tracked unit table, matching `rows` (see historySql). Only narrow
 * columns go through the temporary tables (each row's key, content hash and times): the version's own columns
 * are read once, by the INSERT, from the unit row itself. Carrying every column through them made each batch
 * plan and materialize two statements of some 80 columns, which cost a nightly sync more than the history's
 * lookups did (docs/performance.md, "Issue 27").
 */
function unitHistoryStep(
  table: string,
  store: string,
  runId: string,
  rows: string,
  rowsAgain: string,
): HistoryStep {
  const def = tableDef(table);
  const key = ident(def.unit!.key);
  const history = ident(historyName(table));
  const s = literal(store);
  const deleted = def.fullScan ? 'cur._deleted_at IS NOT NULL' : 'false';
  // The version's time: `_deleted_at` for a row a full scan no longer returned, else the API's own time where
  // the record has one (its version), else the event's, else the observation's (observedAtOf).
  const validFrom = def.fullScan
    ? `CASE WHEN ${deleted} THEN cur._deleted_at ELSE cur._observed_at END`
    : 'cur._observed_at';
  const find = [
    `CREATE OR REPLACE TEMP TABLE history_rows AS SELECT t.${key} AS _key, ` +
      `${contentHashSql(def, 't')} AS _content_hash, ${def.fullScan ? 't._deleted_at' : 'NULL::TIMESTAMPTZ AS _deleted_at'}, ` +
      `${observedAtOf(def, 't')} AS _observed_at ` +
      `FROM ${ident(table)} t WHERE t._store = ${s} AND (${rows})`,
    // Only the current versions of the rows' records are read: the join with them bounds them.
    `CREATE OR REPLACE TEMP TABLE history_changes AS ` +
      `WITH o AS (SELECT h.${key} AS _open_key, h._content_hash AS _open_hash, ` +
      `h._change AS _open_change, h._valid_from AS _open_from, h._version AS _open_version FROM ${history} h ` +
      `JOIN ${ROWS} r ON h.${key} = r._key WHERE h._store = ${s} AND h._valid_to IS NULL) ` +
      `SELECT * FROM (SELECT cur._key AS ${key}, cur._content_hash, coalesce(o._open_version, 0) + 1 AS _version, ` +
      `CASE WHEN ${deleted} THEN (CASE WHEN o._open_change IS DISTINCT FROM 'deleted' THEN 'deleted' END) ` +
      `WHEN o._open_key IS NULL THEN 'created' ` +
      `WHEN o._open_change = 'deleted' THEN 'reappeared' ` +
      `WHEN o._open_hash <> cur._content_hash THEN 'changed' END AS _change, ` +
      // greatest() skips NULL: a first version starts at its own time.
      `greatest(${validFrom}, o._open_from) AS _valid_from ` +
      `FROM ${ROWS} cur LEFT JOIN o ON o._open_key = cur._key) ` +
      `WHERE _change IS NOT NULL`,
  ];
  // A unit table holds one row per store and key, so the join finds each changed record's row.
  const insert = insertVersionsSql(
    def,
    't',
    {
      version: 'c._version',
      validFrom: 'c._valid_from',
      change: 'c._change',
      contentHash: 'c._content_hash',
    },
    runId,
    `FROM ${ident(table)} t JOIN ${CHANGES} c ON t.${key} = c.${key} WHERE t._store = ${s} AND (${rowsAgain})`,
  );
  return { find, close: closeSql(def, store, [def.unit!.key]), insert };
}

/** The rows a batch loaded into a unit table (alias `t`): those of its own `_synced_at` and run. */
const batchRows = (runId: string, syncedAtMs: number): string =>
  `t._synced_at = TIMESTAMPTZ ${literal(new Date(syncedAtMs).toISOString())} AND t._run_id = ${literal(runId)}`;

/** Writes the versions a batch's merged rows make: its rows are those it loaded (its own `_synced_at` and run). */
export function writeBatchHistory(
  connection: DuckDBConnection,
  table: string,
  store: string,
  runId: string,
  syncedAtMs: number,
): Promise<void> {
  const rows = batchRows(runId, syncedAtMs);
  return writeHistory(connection, table, store, runId, rows, rows);
}

/**
 * The first versions of a batch's records none of which was stored before it (the merge found no stored row
 * of their keys: merge.ts, `fresh`), and of the rows they own that keep a history: one INSERT each, without
 * the `find` that writeBatchHistory runs. A record has versions only once its row is stored, and store-sync
 * never removes a unit's row without storing its key again (the merge deletes a unit it replaces, partial.ts
 * one it folds; rebuild empties the histories too), so no current version exists for these keys: each
 * version is what writeHistory would write against an empty history, `created` (or `deleted` for a row
 * carrying `_deleted_at`), version 1, from the row's own time. Writing them so matters most in a first sync,
 * where every batch is new: the `find`, with its temporary tables and their counts, took a third of the
 * history's time there (docs/performance.md, "Issue 32 point 1").
 */
export function firstVersionsSql(
  table: string,
  store: string,
  runId: string,
  syncedAtMs: number,
  keys: readonly Key[] | null,
): string[] {
  const def = tableDef(table);
  // Its keys as well as its time and run: another batch of the same transaction may share both (ingest
  // workers date their batches to the millisecond), and its records have their versions already. Null: no
  // other batch of the run is dated `syncedAtMs` (BatchMeta.ownTime), so its time and run are the batch's rows.
  const rows =
    keys === null
      ? batchRows(runId, syncedAtMs)
      : `${batchRows(runId, syncedAtMs)} AND ${keysSql('t', def.unit!.key, keys)}`;
  const s = literal(store);
  const firstVersion = (of: TableDef, alias: string): VersionFields => {
    // A row a full scan no longer returned starts deleted, at its `_deleted_at`.
    const deleted = of.fullScan ? `${alias}._deleted_at IS NOT NULL` : null;
    const either = (then: string, otherwise: string) =>
      deleted === null ? otherwise : `CASE WHEN ${deleted} THEN ${then} ELSE ${otherwise} END`;
    return {
      version: '1',
      // An owned row's time is its unit's, as writeHistory's.
      validFrom: either(`${alias}._deleted_at`, observedAtOf(def, 't')),
      change: either("'deleted'", "'created'"),
      contentHash: contentHashSql(of, alias),
    };
  };
  const owned = ownedHistories(table).map((child) =>
    insertVersionsSql(
      child,
      'r',
      firstVersion(child, 'r'),
      runId,
      `FROM ${ident(child.name)} r JOIN ${ident(table)} t ON r.${ident(child.owner!.column)} = t.${ident(def.unit!.key)} ` +
        `WHERE r._store = ${s} AND t._store = ${s} AND (${rows})`,
    ),
  );
  const unit = insertVersionsSql(
    def,
    't',
    firstVersion(def, 't'),
    runId,
    `FROM ${ident(table)} t WHERE t._store = ${s} AND (${rows})`,
  );
  return [...owned, unit];
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
  // Once written, a `reappeared` version closes the `deleted` one that selected its row: the INSERT reads every
  // row of the store's table (a full scan's end, once per scan).
  return historySql(table, store, runId, `t._deleted_at IS NOT NULL OR t.${key} IN (${deletedNow})`, 'true');
}
