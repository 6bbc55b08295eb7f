import type { EntityKind } from '../contracts.js';
import { ident, literal, planTables, type TableDef, tableDef } from '../model/index.js';

/**
 * Soft deletes of a completed full scan over the given tables (docs/warehouse.md, "Soft deletes";
 * contracts.ts). `scope`, when given, is a condition per table that limits the rows the scan covered (a scan
 * bounded by a start date).
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
