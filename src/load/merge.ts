import type { EntityKind } from '../contracts.js';
import { ownedBy, planTables, sourcedColumns, type TableDef, tableDef } from '../normalize/index.js';
import { ident, literal, stagingTable } from './sql.js';

/**
 * Merge SQL, generated per unit table (a table whose rows are replaced as a whole with the tables they
 * own: an order with its lines, taxes, refunds …). The rule, in docs/warehouse.md:
 *
 *   newest wins by (version, ties, arrival): the staged or stored row with the greatest version wins, a
 *   missing version ranks below any present one, equal versions go to the greatest tie columns (when the
 *   table names any), and among equals the later arrival wins.
 *
 * So a re-delivered document replaces the stored one with identical content (only `_synced_at`/`_run_id`
 * move), an older one changes nothing, and because the rule is a maximum, the result does not depend on
 * how documents were batched, which is what lets rebuild and a resumed run reproduce the same tables.
 */

export interface RowMeta {
  /** SQL literals. */
  store: string;
  syncedAt: string;
  runId: string;
}

const winners = (def: TableDef) => `temp.main.${ident(`win_${def.name}`)}`;

/**
 * The unit's version as one comparable value: `version` alone, or with ties a struct of it and the tie
 * columns, which DuckDB compares field by field. NULL while `version` is, so a missing version still ranks
 * lowest. A missing tie ranks lowest too: DuckDB orders a NULL field of a struct above every value, so each
 * tie is preceded by whether it is present (false < true); an order whose shape was not shown (api_version
 * NULL) took precedence over a 2024-04-01 one of the same version.
 */
export function versionSql(def: TableDef): string | null {
  const { version, ties } = def.unit ?? {};
  if (!version) return null;
  if (!ties?.length) return version;
  const fields = [
    `'version': ${version}`,
    ...ties.flatMap((c) => [
      `${literal(`${c} present`)}: ${ident(c)} IS NOT NULL`,
      `${literal(c)}: ${ident(c)}`,
    ]),
  ];
  return `CASE WHEN (${version}) IS NOT NULL THEN {${fields.join(', ')}} END`;
}

function insertSql(def: TableDef, unitDef: TableDef, meta: RowMeta): string {
  const columns = sourcedColumns(def);
  const values = columns.map((c) => {
    const v = `s.${ident(c.name)}`;
    if (c.type === 'VARCHAR[]' || c.type === 'BIGINT[]') return `CAST(${v} AS JSON)::${c.type}`;
    if (c.type === 'JSON') return `CAST(${v} AS JSON)`;
    return v;
  });
  const names = ['_store', ...columns.map((c) => c.name), '_synced_at', '_run_id'].map(ident);
  return (
    `INSERT INTO ${ident(def.name)} (${names.join(', ')}) ` +
    `SELECT ${meta.store}, ${values.join(', ')}, ${meta.syncedAt}, ${meta.runId} ` +
    `FROM ${stagingTable(def.name)} s SEMI JOIN ${winners(unitDef)} w ON s._unit = w._unit`
  );
}

/**
 * Statements that pick the winners of a unit table's staged rows and drop those older than what is
 * stored. Run first; then `replaceSql` (which needs to know whether anything stored was displaced).
 */
export function pickWinnersSql(unitTable: string, meta: RowMeta): string {
  const def = tableDef(unitTable);
  const key = ident(def.unit!.key);
  const version = versionSql(def) ?? 'NULL::TIMESTAMPTZ';
  const statements = [
    `CREATE OR REPLACE TEMP TABLE ${ident(`win_${def.name}`)} AS ` +
      `SELECT _unit, ${key} AS k, ${version} AS v FROM ${stagingTable(def.name)} ` +
      `QUALIFY row_number() OVER (PARTITION BY ${key} ORDER BY ${version} DESC NULLS LAST, _unit DESC) = 1`,
  ];
  if (versionSql(def)) {
    statements.push(
      `DELETE FROM ${winners(def)} USING ${ident(def.name)} t ` +
        `WHERE t._store = ${meta.store} AND t.${key} = ${winners(def)}.k ` +
        `AND (${version}) IS NOT NULL AND (${winners(def)}.v IS NULL OR ${winners(def)}.v < (${version}))`,
    );
  }
  // Last statement: its changed-row count tells whether any stored unit is being replaced.
  statements.push(
    `DELETE FROM ${ident(def.name)} USING ${winners(def)} w WHERE ${ident(def.name)}._store = ${meta.store} ` +
      `AND ${ident(def.name)}.${key} = w.k`,
  );
  return statements.join(';\n');
}

/** Deletes the owned rows of displaced units (when there were any) and inserts every winner's rows. */
export function replaceSql(
  unitTable: string,
  meta: RowMeta,
  displaced: boolean,
  stagedTables: Set<string>,
): string {
  const def = tableDef(unitTable);
  const owned = ownedBy(unitTable);
  const statements: string[] = [];
  if (displaced) {
    for (const child of owned) {
      const column = ident(child.owner!.column);
      statements.push(
        `DELETE FROM ${ident(child.name)} USING ${winners(def)} w ` +
          `WHERE ${ident(child.name)}._store = ${meta.store} AND ${ident(child.name)}.${column} = w.k`,
      );
    }
  }
  statements.push(insertSql(def, def, meta));
  for (const child of owned) if (stagedTables.has(child.name)) statements.push(insertSql(child, def, meta));
  return statements.join(';\n');
}

/**
 * Soft deletes of a completed full scan over the given tables (DESIGN §4, contracts.ts). `scope`, when
 * given, is a condition per table that limits the rows the scan covered (a scan bounded by a start date).
 */
export function fullScanSql(
  tables: TableDef[],
  store: string,
  passStartedAt: string,
  scope?: (t: TableDef) => string,
): string {
  return tables
    .flatMap((t) => [
      `UPDATE ${ident(t.name)} SET _deleted_at = ${passStartedAt} ` +
        `WHERE _store = ${store} AND _synced_at < ${passStartedAt} AND _deleted_at IS NULL` +
        (scope ? ` AND ${scope(t)}` : ''),
      `UPDATE ${ident(t.name)} SET _deleted_at = NULL ` +
        `WHERE _store = ${store} AND _synced_at >= ${passStartedAt} AND _deleted_at IS NOT NULL`,
    ])
    .join(';\n');
}

/**
 * The rows of `def` whose record was created on or after `since` (a TIMESTAMPTZ literal): by the table's
 * `created` column, or, for an owned table, by its owner's. A row whose creation time is unknown is not
 * in scope, so it is never soft-deleted by a bounded scan.
 */
function createdSince(def: TableDef, store: string, since: string): string {
  if (def.created) return `${ident(def.created)} >= ${since}`;
  const owner = def.owner && tableDef(def.owner.table);
  if (!def.owner || !owner?.unit)
    throw new Error(
      `${def.name} has no creation column: a full scan bounded by a start date cannot cover it`,
    );
  return (
    `${ident(def.owner.column)} IN (SELECT ${ident(owner.unit.key)} FROM ${ident(owner.name)} ` +
    `WHERE _store = ${store} AND ${createdSince(owner, store, since)})`
  );
}

/**
 * Soft deletes for a completed full scan of an entity's tables, for one store. With `createdFrom` (a day),
 * the scan read only records created from that UTC day on, so only those rows can be found missing.
 */
export function entityFullScanSql(
  store: string,
  entity: EntityKind,
  passStartedAt: string,
  createdFrom?: string,
): string {
  const tables = planTables(entity)
    .map(tableDef)
    .filter((t) => t.fullScan);
  const storeSql = literal(store);
  const since = createdFrom === undefined ? null : `TIMESTAMPTZ ${literal(`${createdFrom} 00:00:00+00`)}`;
  return fullScanSql(
    tables,
    storeSql,
    `TIMESTAMPTZ ${literal(passStartedAt)}`,
    since === null ? undefined : (t) => createdSince(t, storeSql, since),
  );
}
