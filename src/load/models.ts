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
