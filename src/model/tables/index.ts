import { meta } from '../columns.js';
import type { ColumnDef, TableDef } from '../types.js';
import { bookkeepingTables } from './bookkeeping.js';
import { catalogueTables } from './catalogue.js';
import { fulfillmentTables } from './fulfillment.js';
import { orderTables } from './orders.js';
import { peopleTables } from './people.js';

/**
 * Every warehouse table, data tables first. Data tables get the standard columns here so no definition
 * can forget them: `_store` first, then the spec's fields, then `_synced_at`, `_run_id` and, for tables
 * fed by full scans, `_deleted_at`.
 */

function withStandardColumns(def: TableDef): TableDef {
  if (def.entity === 'bookkeeping') return def;
  const columns: ColumnDef[] = [
    meta('_store', 'VARCHAR', 'Configured name of the store (part of every key).'),
    ...def.columns,
    meta('_synced_at', 'TIMESTAMPTZ', 'When the row was loaded.'),
    meta('_run_id', 'VARCHAR', 'Run that loaded the row (see _sync_runs).'),
  ];
  if (def.fullScan) {
    columns.push(
      meta(
        '_deleted_at',
        'TIMESTAMPTZ',
        'Set when a completed full scan no longer returned the record (the scan start).',
      ),
    );
  }
  return { ...def, columns };
}

const registry: TableDef[] = [
  ...orderTables,
  ...fulfillmentTables,
  ...catalogueTables,
  ...peopleTables,
  ...bookkeepingTables,
].map(withStandardColumns);

export const tableDefinitions: readonly TableDef[] = registry;

const byName = new Map(tableDefinitions.map((t) => [t.name, t]));

/**
 * Adds the tables of a stream declared outside src/ (docs/architecture.md, "Adding a stream"), with the
 * standard columns. Called before a warehouse is opened: its schema migration then creates them.
 */
export function addTables(defs: readonly TableDef[]): void {
  for (const def of defs) {
    if (byName.has(def.name)) throw new Error(`the registry already has a table named ${def.name}`);
    const full = withStandardColumns(def);
    registry.push(full);
    byName.set(full.name, full);
  }
}

export function tableDef(name: string): TableDef {
  const def = byName.get(name);
  if (!def) throw new Error(`no table named ${name} in the registry`);
  return def;
}

export const dataTables = (): TableDef[] => tableDefinitions.filter((t) => t.entity !== 'bookkeeping');

/** Tables owned by a unit table (children replaced with it), in registry order. */
export const ownedBy = (unitTable: string): TableDef[] =>
  tableDefinitions.filter((t) => t.owner?.table === unitTable);

/** Columns normalize fills (everything with a source), in the staging/Appender order. */
export const sourcedColumns = (def: TableDef): ColumnDef[] =>
  def.columns.filter((c) => c.source !== undefined);
