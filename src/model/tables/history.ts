import { meta } from '../columns.js';
import { ident, literal } from '../sql.js';
import type { ColumnDef, TableDef } from '../types.js';

/**
 * Observed-version history (docs/warehouse.md, "History"; src/load/history.ts writes it): for the unit tables
 * named here, `<table>_history` keeps every version of a record the loads observed, with when it held. The
 * warehouse table keeps the current state only (newest wins), so what changed when is only here.
 */

/** The unit tables that keep a history. */
export const HISTORY_OF: readonly string[] = ['subscriptions', 'fulfillment_orders', 'locations', 'products'];

/**
 * Tables owned by a unit of HISTORY_OF that keep a history of their own (a product's variants, their prices and
 * their stock): their rows are replaced whenever their unit is loaded, so what changed in them is only here.
 */
export const OWNED_HISTORY_OF: readonly string[] = ['variants', 'variant_prices', 'variant_stockrecords'];

/** Every table with a `<table>_history`, units first. */
export const HISTORIES_OF: readonly string[] = [...HISTORY_OF, ...OWNED_HISTORY_OF];

export const historyName = (table: string): string => `${table}_history`;

export const HISTORY_CHANGES = ['created', 'changed', 'deleted', 'reappeared'] as const;

/**
 * Columns of a unit row that say how and when it was loaded rather than what the record is: a version is
 * written only when the other columns differ from the current version's.
 */
export const BOOKKEEPING_COLUMNS: ReadonlySet<string> = new Set([
  '_store',
  '_synced_at',
  '_run_id',
  '_deleted_at',
  '_event_id',
  '_event_type',
  '_event_at',
  '_api_version_label',
  '_envelope',
  '_absent_fields',
]);

/**
 * `md5` of a row's content columns (BOOKKEEPING_COLUMNS left out), as text of a named struct; `alias` qualifies
 * the columns ('' for none). A version stores it (`_content_hash`), so the next load compares a row with its
 * current version by one narrow column instead of reading every column of every open version.
 */
export function contentHashSql(base: TableDef, alias: string): string {
  const qualified = alias ? `${alias}.` : '';
  const fields = base.columns
    .filter((c) => !BOOKKEEPING_COLUMNS.has(c.name))
    .map((c) => `${literal(c.name)}: ${qualified}${ident(c.name)}`);
  return `md5(CAST({${fields.join(', ')}} AS VARCHAR))`;
}

/** What `_valid_from` is for a table: the API's time where the record carries a version, else observed. */
function validFromComment(base: TableDef, unit: TableDef): string {
  // An owned row carries no time of its own: it changes when its unit is loaded, at the unit's time.
  if (base !== unit)
    return `When the version began: the time its \`${unit.name}\` row was loaded with, as \`${historyName(unit.name)}._valid_from\` is (${unit.unit?.version ? `its \`${unit.unit.version}\`, the API's time, ` : ''}else the event's \`timestamp\`, else the load's \`_synced_at\`: observed); for a \`deleted\` version, \`_deleted_at\` of the row, or for a row its unit no longer carries, the unit's time. Never earlier than the previous version's \`_valid_from\`.`;
  const observed =
    "else the envelope's `timestamp` for a row from an ingested event document (the API's time), else " +
    '`_synced_at` of the load that observed it (observed, precision: one run: the change happened after the ' +
    'previous observation of the record and at the latest then)';
  const own = base.unit?.version
    ? `\`${base.unit.version}\` of the version (the API's time), ${observed}`
    : `The table carries no version time: ${observed.replace(/^else /, '')}`;
  const deleted = base.fullScan
    ? '; for a `deleted` version, `_deleted_at` (the start of the full scan that no longer returned the record: observed, precision: one full scan)'
    : '';
  return `When the version began. ${own[0]!.toUpperCase()}${own.slice(1)}${deleted}. Never earlier than the previous version's \`_valid_from\`, so versions do not overlap: a version observed with an older time than the current one (an older event ingested later) starts where the current one did, which then lasts no time.`;
}

/**
 * The columns of a unit table a version copies: all but `_run_id` (the version's own `_observed_run_id` says
 * which run saw it).
 */
export const versionedColumns = (base: TableDef): ColumnDef[] =>
  base.columns.filter((c) => c.name !== '_run_id');

/**
 * The history table of a unit table, or of a table `unit` owns (its columns as the registry gives them,
 * standard ones included).
 */
export function historyTable(base: TableDef, unit: TableDef = base): TableDef {
  if (!unit.unit) throw new Error(`${base.name}: only a unit table or one a unit owns can keep a history`);
  const columns: ColumnDef[] = [];
  for (const c of versionedColumns(base)) {
    // Bookkeeping: the loader fills every column, so none carries a source.
    const { source: _source, derive: _derive, backfill: _backfill, ...column } = c;
    columns.push(
      c.name === '_synced_at'
        ? { ...column, comment: 'When the load that observed the version wrote it.' }
        : column,
    );
  }
  columns.push(
    meta(
      '_version',
      'BIGINT',
      "The version's number among the record's versions: 1 for the first observed, then one more each time. Two versions can share a `_valid_from` (see it), never a number.",
    ),
    meta('_valid_from', 'TIMESTAMPTZ', validFromComment(base, unit)),
    meta(
      '_valid_to',
      'TIMESTAMPTZ',
      "When the version stopped holding: the next version's `_valid_from`; NULL for the current version.",
    ),
    meta('_observed_run_id', 'VARCHAR', 'Run that observed the version (see _sync_runs).'),
    {
      ...meta(
        '_content_hash',
        'VARCHAR',
        "md5 of the version's columns but the bookkeeping ones (those `_change` says are ignored), as DuckDB writes them as text: what the next load compares a row with to tell whether it changed.",
      ),
      // Versions written before the column existed get theirs from their own columns.
      backfill: contentHashSql(base, ''),
    },
    meta(
      '_change',
      'VARCHAR',
      '`created` (first observation), `changed` (its columns differ from the previous version, ignoring `_synced_at`, `_run_id`, `_event_*`, `_api_version_label`, `_envelope` and `_absent_fields`), ' +
        (base.fullScan
          ? `\`deleted\` (a completed full scan no longer returned it${base === unit ? '' : `, or its \`${unit.name}\` row was loaded without it`}: the version carries its last columns), \`reappeared\` (observed again after \`deleted\`).`
          : 'or `changed`; this table is not fed by full scans, so no version is `deleted` or `reappeared`.'),
    ),
  );
  return {
    name: historyName(base.name),
    comment:
      base === unit
        ? `Every observed version of \`${base.name}\` rows: a version is added when a load sees the record's columns change, when a full scan no longer returns it and when it comes back; re-loading an unchanged record adds none. Re-derived by rebuild. Owned rows are versioned only where their own history table exists.`
        : `Every observed version of \`${base.name}\` rows (owned by \`${unit.name}\`): a version is added when a load of their ${unit.name} row sees a row's columns change, a row appear or a row go, and when a full scan no longer returns their ${unit.name} row; re-loading an unchanged ${unit.name} row adds none. Re-derived by rebuild.`,
    key: base === unit ? ['_store', unit.unit.key, '_version'] : [...base.key, '_version'],
    entity: 'bookkeeping',
    columns,
  };
}
