import type { DuckDBConnection } from '@duckdb/node-api';
import { HISTORIES_OF, historyName, ownedBy, type TableDef } from '../model/index.js';
import type { TableRows } from '../normalize/index.js';
import type { AppenderPool, Feed } from './chunks.js';
import { historyTracked } from './history.js';
import type { Key, KeyRanges } from './key-ranges.js';
import type { Layouts } from './layouts.js';
import { mergeUnits } from './merge.js';
import { type FoldMeta, foldPartialUnits } from './partial.js';

/** Where a unit family's rows go, and who hears how many rows went into which table. */
export interface FamilyTarget {
  connection: DuckDBConnection;
  layouts: Layouts;
  appenders: AppenderPool;
  keyRanges: KeyRanges;
  /** Rows appended to a table (history versions included), for the commit's choice (Transaction.commit). */
  appended(table: string, rows: number): void;
}

/** What writing a unit family stored. */
export interface FamilyWritten {
  /** Rows stored (inserted or replacing stored ones): winners appended and folded rows inserted. */
  rows: number;
  /**
   * Whether a record of a table with a history was stored, and then the keys when every one of them was new
   * (merge.ts MergeDecision `fresh`), else null.
   */
  versioned: { fresh: Key[] | null } | null;
}

/**
 * Writes the rows of a unit table and of the tables it owns (`family`, unit first, sealed): the winners by
 * the merge rule (merge.ts) are appended straight into the warehouse tables after the stored units they
 * replace are deleted, and keys whose documents carry different fields are folded with the stored rows
 * (partial.ts). Every table is fed by column name; the rows' own `_synced_at` and `_run_id` columns, where
 * they have them (held-units.ts), else `meta`'s.
 */
export async function writeUnitFamily(
  target: FamilyTarget,
  def: TableDef,
  family: readonly TableRows[],
  meta: FoldMeta,
): Promise<FamilyWritten> {
  const { connection, appenders, keyRanges, layouts } = target;
  const [rows] = family;
  const { units, partial, fresh } = await mergeUnits(connection, appenders, rows!, meta.store, keyRanges);
  // Keys whose documents carry different fields are folded field by field (partial.ts), from the family's
  // rows before they are filtered down to the winners.
  let folded = 0;
  if (partial) {
    folded = await foldPartialUnits(
      connection,
      def.name,
      new Map(family.map((member) => [member.name, member])),
      partial,
      meta,
    );
    target.appended(def.name, folded);
  }
  let stored = folded;
  const tracked = historyTracked(def.name);
  for (const member of family) {
    if (units) member.keepUnits(units);
    // Counted once filtered: the rows stored, not the batch's (a customer in 100 orders of one batch is
    // one row; the rows of a document older than the stored one are none).
    stored += member.length;
    if (member.length === 0) continue;
    (await appenders.get(member.name)).append(member, unitFeeds(member, layouts, meta));
    target.appended(member.name, member.length);
    if (tracked && HISTORIES_OF.includes(member.name))
      target.appended(historyName(member.name), member.length);
  }
  // Only when a record of the table was stored (rows that all lost to stored ones change no version).
  const versioned = tracked && (rows!.length > 0 || folded > 0) ? { fresh } : null;
  return { rows: stored, versioned };
}

/** The family of a unit table among a batch's tables: the unit's rows, then its owned tables' (those with rows). */
export function unitFamily(def: TableDef, tables: ReadonlyMap<string, TableRows>): TableRows[] {
  return [tables.get(def.name), ...ownedBy(def.name).map((t) => tables.get(t.name))].filter(
    (r): r is TableRows => r !== undefined && r.length > 0,
  );
}

/**
 * Feeds for a warehouse table in its physical column order: a column the rows carry comes from them, and
 * the standard columns the rows do not carry are `meta`'s, the same on every row.
 */
function unitFeeds(rows: TableRows, layouts: Layouts, meta: FoldMeta): Feed[] {
  return layouts.columns(rows.name).map((name): Feed => {
    const column = rows.columns.findIndex((c) => c.name === name);
    if (column > 0) return { from: 'rows', column };
    if (name === '_store') return { from: 'text', value: meta.store };
    if (name === '_synced_at') return { from: 'int64', value: meta.syncedAtMs * 1000 };
    if (name === '_run_id') return { from: 'text', value: meta.runId };
    return { from: 'null' };
  });
}
