import { type AnalyticsModel, analyticsModels } from '../model/analytics/index.js';
import { ident, literal } from '../model/index.js';

/**
 * The analyst models as DuckDB views with their COMMENTs. They are part of the schema migration (ddl.ts), so
 * they exist in every warehouse a writer has opened and change with the registry's fingerprint. A view is
 * read afresh by every query, so nothing refreshes them after a run, a rebuild or an ingest; and since DuckDB
 * binds a view's tables by name when it is queried, a rebuild's DROP and CREATE of the tables leaves them intact.
 */

export function modelViewSql(model: AnalyticsModel): string[] {
  return [
    `CREATE OR REPLACE VIEW ${ident(model.name)} AS ${model.sql.trim()}`,
    `COMMENT ON VIEW ${ident(model.name)} IS ${literal(model.comment)}`,
    ...model.columns.map(
      (c) => `COMMENT ON COLUMN ${ident(model.name)}.${ident(c.name)} IS ${literal(c.comment)}`,
    ),
  ];
}

/** Every model's statements, in creation order (a model may read the ones before it). */
export function modelsSql(): string[] {
  return analyticsModels.flatMap(modelViewSql);
}

/** Per store: order documents held in `orders`, and order numbers the store references that it does not hold. */
export interface OrderCoverage {
  store: string;
  captured: number;
  referencedNotCaptured: number;
}

/**
 * The counts behind `order_coverage`, per store; none when the warehouse predates the view (a reader does not
 * migrate). `selectJson` is the warehouse's own read, so a writer and a read-only open both work.
 */
export async function readOrderCoverage(warehouse: {
  selectJson: (sql: string) => Promise<{ rows: unknown[][] }>;
}): Promise<OrderCoverage[]> {
  const present = await warehouse.selectJson(
    "SELECT 1 FROM duckdb_views() WHERE view_name = 'order_coverage' AND schema_name = 'main'",
  );
  if (present.rows.length === 0) return [];
  const { rows } = await warehouse.selectJson(`
    WITH captured AS (SELECT _store, count(*) AS n FROM orders GROUP BY _store),
         missing AS (SELECT _store, count(*) AS n FROM order_coverage GROUP BY _store)
    SELECT coalesce(c._store, m._store) AS store, coalesce(c.n, 0) AS captured, coalesce(m.n, 0) AS missing
    FROM captured c FULL JOIN missing m ON m._store = c._store
    ORDER BY store`);
  return rows.map(([store, captured, missing]) => ({
    store: String(store),
    captured: Number(captured),
    referencedNotCaptured: Number(missing),
  }));
}

const count = (n: number) => n.toLocaleString('en-US');

/** `orders: 281 captured, 58,148 referenced but not captured → see order_coverage` */
export function orderCoverageLine(coverage: OrderCoverage): string {
  return `orders: ${count(coverage.captured)} captured, ${count(coverage.referencedNotCaptured)} referenced but not captured → see order_coverage`;
}
