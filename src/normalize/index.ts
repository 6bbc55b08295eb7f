/** Normalize: records and documents → rows of the warehouse tables, all described by the table registry. */

export { sourceFor } from './compile.js';
export {
  type DetectedRecord,
  type Detection,
  detectDocument,
  detectEntity,
  detectOrderShape,
} from './detect.js';
export { MAX_NESTING, type RawText, rawText, recordProblem } from './guard.js';
export { NormalizeError, Normalizer, stagingColumns, UNIT_COLUMN } from './normalizer.js';
export { type PlanNode, plans, planTables } from './plans.js';
export {
  type EncodedText,
  type RowsSnapshot,
  type StageKind,
  snapshotBuffers,
  stageKind,
  TableRows,
} from './rows.js';
export { dataTables, ownedBy, sourcedColumns, tableDef, tableDefinitions } from './tables/index.js';
export {
  API_2023,
  API_2024,
  type ColumnDef,
  type ColumnType,
  MONEY,
  MONEY_2,
  type Source,
  type TableDef,
} from './types.js';
export { toDecimal, toTimestamp, ValueError } from './values.js';
