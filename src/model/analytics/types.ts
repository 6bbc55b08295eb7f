/**
 * An analyst model: a DuckDB view over the warehouse's tables, with what it and each of its columns mean.
 * src/load/models.ts creates them (with COMMENT ON VIEW / COMMENT ON COLUMN); docs/warehouse.md lists them.
 */
export interface ModelColumn {
  name: string;
  comment: string;
}

export interface AnalyticsModel {
  name: string;
  /** What one row is, and the definitions a reader needs to use it. */
  comment: string;
  /** The view's SELECT: its output columns are `columns`, in that order (test/models/models.test.ts). */
  sql: string;
  columns: readonly ModelColumn[];
}

/** `timestamptz` as a UTC calendar day, whatever the session's TimeZone (a DuckDB CLI uses the machine's). */
export const utcDay = (expr: string): string => `CAST(timezone('UTC', ${expr}) AS DATE)`;

/**
 * `amount / quantity` as an exact DECIMAL(18,3), or NULL when the division is not exact to 3 decimals (10.00
 * over 3 units) or the quantity is not positive: DuckDB divides DECIMALs as DOUBLE, so the division is done on
 * thousandths as integers and scaled back by a DECIMAL multiplication, which is exact.
 */
export const exactUnit = (amount: string, quantity: string): string =>
  `CASE WHEN ${quantity} > 0 AND CAST(${amount} * 1000 AS HUGEINT) % ${quantity} = 0
     THEN CAST(CAST(CAST(${amount} * 1000 AS HUGEINT) // ${quantity} AS DECIMAL(18,0)) * 0.001 AS DECIMAL(18,3)) END`;
