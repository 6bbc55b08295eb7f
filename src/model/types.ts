import type { EntityKind } from '../contracts.js';

/**
 * The table registry's vocabulary. One `TableDef` per warehouse table is the single source of the DDL,
 * the `COMMENT ON` data dictionary, the staging (Appender) column order, docs/warehouse.md and the rows
 * normalize produces, so a table is described in exactly one place.
 */

export const MONEY = 'DECIMAL(18,3)';
/**
 * The spec's request pattern `^-?\d{0,10}(?:\.\d{0,2})?$`, for variants' unit_cost, whose only writer is the
 * variant update request that carries the pattern. (Subscriptions' shipping_price is a response value in
 * the store's currency, which may have three decimals: it is MONEY.)
 */
export const MONEY_2 = 'DECIMAL(12,2)';

export type ColumnType =
  | 'BIGINT'
  | 'DOUBLE'
  | 'BOOLEAN'
  | 'VARCHAR'
  | 'TIMESTAMPTZ'
  | 'DATE'
  | 'JSON'
  | 'BLOB'
  | 'BLOB[]'
  | 'VARCHAR[]'
  | 'BIGINT[]'
  | typeof MONEY
  | typeof MONEY_2;

export const API_2023 = '2023-02-10';
export const API_2024 = '2024-04-01';

/**
 * Where a column's value comes from, relative to the item the row is made of:
 * - `a.b`          field `b` of object field `a` of the item;
 * - `$.a`          field of the unit the row belongs to (the order a line belongs to, or the fulfillment a
 *                  fulfillment line item belongs to, even inside an order document);
 * - `$$.a`         field of the whole document (the order document a fulfillment or a customer came in);
 * - `^.a`          field of the parent item (e.g. the line a tax line belongs to);
 * - `#`            the item's position in its array (0-based);
 * - `#-`           the item's position as a negative id, `-(position + 1)` (−1 = first): the last alternative
 *                  of an owned child's `id`, for an item the document gave no id (tables/index.ts);
 * - `^#-`          the same of the parent item: the last alternative of a column holding the parent's id;
 * - `=text`        a constant;
 * - `@api_version` the detected order shape;
 * - `@event_id`, `@event_type`, `@event_at`, `@label` what the envelope the document came in said of it: its
 *                  `event_id`, `event_type`, `timestamp` and `api_version` (the label as given, known or
 *                  not); null for a bare document and for the sync's records (tables/index.ts adds them to
 *                  every unit table);
 * - `@envelope`     the envelope's other fields as JSON (detect.ts `EnvelopeMeta.rest`);
 * - `@extra`        the fields at the item's level the model does not map, as JSON (normalize fills it after
 *                  the row: src/normalize/known.ts says what is mapped);
 * - `@absent`       the tracked fields of a unit item that its document did not carry, comma-joined
 *                  (known.ts `trackedFields`): what a partial document leaves to the stored row;
 * - `@derived`      computed from other columns of the row after it is written (`ColumnDef.derive`);
 * - `x|y`          the first of several sources that is present.
 * An object picks a source per order shape (`default` covers the other shape and unknown shapes);
 * a shape without an entry leaves the column NULL, never borrowing another shape's field.
 */
export type Source = string | { [API_2023]?: string; [API_2024]?: string; default?: string };

/** The source text that applies to a shape: its own entry, else `default`; null leaves the column NULL. */
export function sourceFor(source: Source, shape: string | null): string | null {
  if (typeof source === 'string') return source;
  const own = shape === null ? undefined : (source as Record<string, string | undefined>)[shape];
  return own ?? source.default ?? null;
}

export interface ColumnDef {
  name: string;
  type: ColumnType;
  comment: string;
  /** Omitted for bookkeeping columns that normalize does not fill. */
  source?: Source;
  /**
   * Stored without DuckDB's compression (`USING COMPRESSION uncompressed`), for bytes no compression can
   * shrink: DuckDB otherwise trains its string compression on every row group of them, for nothing.
   * Only tables created after it was set have it (DuckDB cannot change a column's compression).
   */
  uncompressed?: true;
  /**
   * For a `@derived` column: computed from two columns of the same row, exactly or not at all
   * (`divide`: numerator ÷ denominator, NULL when either is NULL, the denominator is 0 or the quotient does
   * not fit the column's scale exactly). normalize/derive.ts computes it on both normalize paths.
   */
  derive?: { divide: [numerator: string, denominator: string] };
  /** SQL that fills the column on rows stored before it existed, run when a migration adds it (ddl.ts). */
  backfill?: string;
}

export interface TableDef {
  name: string;
  comment: string;
  /** Primary key, `_store` first. Enforced by the load's merge rather than by a DuckDB constraint. */
  key: string[];
  /** The table's family, for docs and for soft deletes: the entity whose full scans cover it. */
  entity: EntityKind | 'customer' | 'bookkeeping';
  /** The table whose rows own these (a replaced parent takes its children with it). */
  parent?: string;
  /**
   * Set on tables whose rows are merged as units (documents, API records, customers): `key` names the unit's
   * key column and `version` is the SQL over the table's columns that orders two versions (newest wins).
   * `ties` are columns that order two versions with the same `version`, in turn, before arrival does: for
   * a table fed by several streams at once, where which of two equal versions arrived last is chance, and
   * for documents that come in two shapes, where the one with more detail must win whatever the order.
   */
  unit?: {
    key: string;
    version?: string;
    ties?: string[];
    /**
     * Rows sighted in documents of other entities (a customer in each of their orders), so that nearly every
     * batch repeats keys the batches before it stored: an ingest or a rebuild holds the table's winners in
     * memory until its transaction commits instead of merging them batch by batch (src/load/held-units.ts).
     * Only for a unit table that owns no table, keeps no history and is not fed by full scans.
     */
    sighted?: true;
  };
  /** For tables owned by a unit: the column that holds the owning unit's key, and that unit's table. */
  owner?: { table: string; column: string };
  /** Fed by full scans: carries `_deleted_at`. */
  fullScan?: boolean;
  /**
   * The column holding when the record was created, by which the API's creation-date filter selects it:
   * a full scan bounded by a start date soft-deletes only rows created from that day (merge.ts).
   */
  created?: string;
  columns: ColumnDef[];
}
