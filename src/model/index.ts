/**
 * The table model: every warehouse table (the registry), the plans that say which tables a record fills,
 * and the quoting of table and column names in SQL. Normalize, load and state read it; it reads none of them.
 * validate.ts checks it whole against the resource schemas (test/model/model.test.ts); it is left out of
 * this index so that loading the model (every ingest worker does) does not load the schemas.
 */

export { addPlan, type PlanNode, plans, planTables } from './plans.js';
export { ident, literal, timestampLiteral } from './sql.js';
export {
  BOOKKEEPING_COLUMNS,
  contentHashSql,
  HISTORIES_OF,
  HISTORY_OF,
  historyName,
  OWNED_HISTORY_OF,
  versionedColumns,
} from './tables/history.js';
export {
  addTables,
  dataTables,
  ownedBy,
  sourcedColumns,
  tableDef,
  tableDefinitions,
} from './tables/index.js';
export {
  API_2023,
  API_2024,
  type ColumnDef,
  type ColumnType,
  MONEY,
  MONEY_2,
  type Source,
  sourceFor,
  type TableDef,
} from './types.js';
export { unitVersionColumns } from './units.js';
