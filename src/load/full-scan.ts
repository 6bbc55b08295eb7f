import type { EntityKind } from '../contracts.js';
import { ident, literal, planTables, type TableDef, tableDef } from '../model/index.js';
import { historyTracked, softDeleteHistorySql } from './history.js';

/**
 * Soft deletes of a completed full scan (docs/warehouse.md, "Soft deletes"; contracts.ts `completedFullScan`).
 *
 * A scan soft-deletes only the records it did not receive. What it received is durable, so a pass resumed by a
 * later run counts what the earlier run received:
 * - a record it loaded (whole, or with some fields refused) has `_synced_at` at or after the pass's start;
 * - a record it rejected whole is a `_rejected_records` row of the pass: the same store and stream,
 *   `_synced_at` from the pass's start to the completing commit, level `record`, `key` its unit key as text.
 * A rejection of the pass that names no row (no key read, or one that cannot be a key: `keyless`) could be any
 * record, so it suspends the pass's soft deletes (Warehouse.commitPage logs it). Tables owned by a unit (a product's variants and stockrecords …)
 * follow their unit's `_deleted_at`: they are replaced with it, never seen on their own.
 */

/** The scan being completed, as its commit (or rebuild's replay of its landed marker) knows it. */
export interface CompletedScan {
  store: string;
  /** The stream whose rejections count as received (`_rejected_records.stream`). */
  stream: string;
  entity: EntityKind;
  /** When the pass started (ISO): rows loaded since were received. */
  passStartedAt: string;
  /** A scan bounded by a start date (YYYY-MM-DD): only units created from that UTC day on are in it. */
  createdFrom?: string | undefined;
  /**
   * The completing commit's `_synced_at` (ms): rejections up to it belong to the pass. Rebuild keeps extract
   * rejections of later passes in place while it replays an earlier marker; this bound keeps them out.
   */
  completedAtMs: number;
  /** The run completing the scan: it observed the deletions (history.ts). */
  runId: string;
}

/** The pass's rejections of whole records, as a condition on `_rejected_records r`. */
function passRejections(scan: CompletedScan): string {
  return (
    `r._store = ${literal(scan.store)} AND r.stream = ${literal(scan.stream)} ` +
    `AND r._synced_at >= ${passStart(scan)} AND epoch_ms(r._synced_at) <= ${Math.trunc(scan.completedAtMs)} ` +
    `AND coalesce(r.level, 'record') = 'record'`
  );
}

const passStart = (scan: CompletedScan): string => `TIMESTAMPTZ ${literal(scan.passStartedAt)}`;

/**
 * A rejection that names no row of `unit`: no key was read, or the one read cannot be a key of the table
 * (`id: "x"` for a BIGINT id). Either could be any record, so the scan deletes nothing: were the API to send
 * every id in a new form, each record would be rejected under a key no row has, and every row deleted.
 */
function keyless(unit: TableDef): string {
  const key = unit.columns.find((c) => c.name === unit.unit!.key);
  const type = key?.type ?? 'VARCHAR';
  return type === 'VARCHAR' ? 'r.key IS NULL' : `(r.key IS NULL OR TRY_CAST(r.key AS ${type}) IS NULL)`;
}

const unitTables = (entity: EntityKind): TableDef[] =>
  planTables(entity)
    .map(tableDef)
    .filter((t) => t.fullScan && t.unit);

/** The number of the pass's rejections that name no row: when not 0, the pass deletes nothing. */
export function unkeyedRejectionsSql(scan: CompletedScan): string {
  const conditions = unitTables(scan.entity).map(keyless);
  const condition = conditions.length === 0 ? 'false' : conditions.join(' OR ');
  return `SELECT count(*) FROM _rejected_records r WHERE ${passRejections(scan)} AND (${condition})`;
}

/**
 * The rows of a unit table whose record was created on or after `since` (a TIMESTAMPTZ literal), by its
 * `created` column. A row whose creation time is unknown is not in scope, so it is never soft-deleted by a
 * bounded scan.
 */
function createdSince(def: TableDef, since: string): string {
  if (!def.created)
    throw new Error(
      `${def.name} has no creation column: a full scan bounded by a start date cannot cover it`,
    );
  return `${ident(def.created)} >= ${since}`;
}

/** A unit table's soft deletes and undeletes. */
function unitSql(def: TableDef, scan: CompletedScan): string[] {
  const name = ident(def.name);
  const store = literal(scan.store);
  const start = passStart(scan);
  const rejected = `SELECT 1 FROM _rejected_records r WHERE ${passRejections(scan)}`;
  const keyText = `CAST(${name}.${ident(def.unit!.key)} AS VARCHAR)`;
  const scope =
    scan.createdFrom === undefined
      ? ''
      : ` AND ${createdSince(def, `TIMESTAMPTZ ${literal(`${scan.createdFrom} 00:00:00+00`)}`)}`;
  return [
    `UPDATE ${name} SET _deleted_at = ${start} ` +
      `WHERE _store = ${store} AND _synced_at < ${start} AND _deleted_at IS NULL${scope} ` +
      `AND NOT EXISTS (${rejected} AND (${keyless(def)} OR r.key = ${keyText}))`,
    `UPDATE ${name} SET _deleted_at = NULL ` +
      `WHERE _store = ${store} AND _deleted_at IS NOT NULL ` +
      `AND (_synced_at >= ${start} OR EXISTS (${rejected} AND r.key = ${keyText}))`,
  ];
}

/** An owned table's rows take their unit's `_deleted_at`. */
function ownedSql(def: TableDef, unit: TableDef, store: string): string {
  const name = ident(def.name);
  return (
    `UPDATE ${name} SET _deleted_at = u._deleted_at FROM ${ident(unit.name)} u ` +
    `WHERE ${name}._store = ${literal(store)} AND u._store = ${literal(store)} ` +
    `AND u.${ident(unit.unit!.key)} = ${name}.${ident(def.owner!.column)} ` +
    `AND ${name}._deleted_at IS DISTINCT FROM u._deleted_at`
  );
}

/** The statements that complete a full scan of an entity's tables, for one store: units first, then what they own. */
export function entityFullScanSql(scan: CompletedScan): string {
  const tables = planTables(scan.entity)
    .map(tableDef)
    .filter((t) => t.fullScan);
  const units = unitTables(scan.entity);
  const statements = units.flatMap((t) => unitSql(t, scan));
  for (const t of tables) {
    if (t.unit) continue;
    const unit = t.owner && units.find((u) => u.name === t.owner!.table);
    if (!unit)
      throw new Error(
        `${t.name} is read by full scans of ${scan.entity} but owned by no unit table they read: nothing says when its rows were received`,
      );
    statements.push(ownedSql(t, unit, scan.store));
  }
  // The deletions (and their history) once every soft delete is set: a deleted record's version is `deleted`.
  for (const unit of units)
    if (historyTracked(unit.name)) statements.push(softDeleteHistorySql(unit.name, scan.store, scan.runId));
  return statements.join(';\n');
}
