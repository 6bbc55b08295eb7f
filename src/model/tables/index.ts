import { col, meta, text, ts } from '../columns.js';
import type { ColumnDef, TableDef } from '../types.js';
import { bookkeepingTables } from './bookkeeping.js';
import { catalogueTables } from './catalogue.js';
import { fulfillmentTables } from './fulfillment.js';
import { HISTORIES_OF, historyTable } from './history.js';
import { orderTables } from './orders.js';
import { peopleTables } from './people.js';

/**
 * Every warehouse table, data tables first. Data tables get the standard columns here so no definition
 * can forget them: `_store` first, then the spec's fields, then `_synced_at`, `_run_id` and, for tables
 * fed by full scans, `_deleted_at`; unit tables then get what the envelope of the document said
 * (ENVELOPE_COLUMNS); and owned tables get their positional ids (withPositionalIds).
 */

/**
 * What the envelope a document came in said of it, kept with every unit row the document made (the row an
 * event produced can be traced to the event; a redelivered event still merges by the table's version, so
 * it stays one row). NULL for a bare document and for the sync's records (src/normalize/detect.ts says
 * which envelopes carry what).
 */
const ENVELOPE_COLUMNS: readonly ColumnDef[] = [
  text(
    '_event_id',
    "The envelope's `event_id`: the webhook delivery or event the row came from.",
    '@event_id',
  ),
  text('_event_type', "The envelope's `event_type` (`order.updated`).", '@event_type'),
  ts(
    '_event_at',
    "The envelope's `timestamp` (event envelopes carry one; the webhook envelope has no time field).",
    '@event_at',
  ),
  text(
    '_api_version_label',
    "The envelope's `api_version` as given, known or not (`unstable`, a newer date); the shape the row was read with is in `api_version` where the table has one.",
    '@label',
  ),
  col(
    '_envelope',
    'JSON',
    "The envelope's other fields, as sent (`object`, `webhook`, `event_version`, `context`, what a proxy added), and any of `event_id`, `event_type`, `timestamp`, `api_version` the columns above could not keep as sent (a `timestamp` that is not a date-time); a captured list page's own fields under `list_page`; NULL for a bare document, a synced record, or an envelope with nothing more.",
    '@envelope',
  ),
];

/**
 * What the store sent at the row's level that no column maps (a field the API added, a proxy's annotation),
 * and the original of a value refused for its column: nothing a store sends is dropped (docs/ingest.md,
 * "Nothing is lost"). New field paths are also listed in `_schema_changes`.
 */
const EXTRA_COLUMN: ColumnDef = col(
  '_extra',
  'JSON',
  'Fields of the item that no column maps, as sent (nested objects included), and the original of any value refused for its column (see _rejected_records, level `field`); NULL when there were none.',
  '@extra',
);

/**
 * Which of the fields a unit's documents may carry the row's documents did not: a list item or a summary
 * carries fewer fields than the full document, and updates only what it carries (load/merge.ts).
 */
const ABSENT_COLUMN: ColumnDef = col(
  '_absent_fields',
  'VARCHAR',
  'Fields (comma-separated) that no document loaded for the row carried, so the columns they feed are unknown rather than empty; NULL when the documents carried every field.',
  '@absent',
);

function withStandardColumns(def: TableDef): TableDef {
  if (def.entity === 'bookkeeping') return def;
  const columns: ColumnDef[] = [
    meta('_store', 'VARCHAR', 'Configured name of the store (part of every key).'),
    ...withPositionalIds(def),
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
  if (def.unit) columns.push(...ENVELOPE_COLUMNS);
  columns.push(EXTRA_COLUMN);
  if (def.unit) columns.push(ABSENT_COLUMN);
  return { ...def, columns };
}

/** The alternative appended to an owned item's `id`, and to a column holding its parent item's `id`. */
const POSITIONAL: Partial<Record<string, { alternative: string; comment: string }>> = {
  id: {
    alternative: '#-',
    comment:
      "Negative (−1 = first) when the document gave the item no id: the key is then the parent's key and the position.",
  },
  '^.id': {
    alternative: '^#-',
    comment: 'Negative (−1 = first) when the document gave the parent item no id (see its `id`).',
  },
};

/**
 * Real documents carry array items without their own id (the order lines of a storefront checkout event,
 * refund lines, attachments). An item of an owned table is keyed by its owner's key, its parent's and its
 * own id, so such an item is keyed by its position instead, as a negative id (`#-`) that no real id takes,
 * and the tables below it read that id as their parent's (`^#-`), rather than the whole document being
 * rejected. Only a missing or null id falls back: one that is present but not an integer is still refused,
 * and a unit's own key (an order's number) stays required. Owned rows are replaced with their unit, so the
 * unit's next document, with ids, replaces the positional rows. Applied here, to every owned table, so a
 * table added later cannot forget it; the owner column (the unit's key) is left as it is.
 */
function withPositionalIds(def: TableDef): ColumnDef[] {
  if (!def.owner || def.unit) return def.columns;
  return def.columns.map((column) => {
    const positional = typeof column.source === 'string' ? POSITIONAL[column.source] : undefined;
    if (!positional || !def.key.includes(column.name) || column.name === def.owner!.column) return column;
    return {
      ...column,
      comment: `${column.comment} ${positional.comment}`,
      source: `${column.source}|${positional.alternative}`,
    };
  });
}

const standard: TableDef[] = [...orderTables, ...fulfillmentTables, ...catalogueTables, ...peopleTables].map(
  withStandardColumns,
);

const registry: TableDef[] = [
  ...standard,
  // After the data tables, from their full definitions: a history has the columns of its table's rows.
  ...HISTORIES_OF.map((name) => {
    const base = standard.find((t) => t.name === name)!;
    return historyTable(base, base.owner ? standard.find((t) => t.name === base.owner!.table) : base);
  }),
  ...bookkeepingTables,
];

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
