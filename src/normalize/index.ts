/** Normalize: records and documents → rows of the warehouse tables, as the table model (src/model/) says. */

export {
  type DetectedRecord,
  type Detection,
  detectDocument,
  detectEntity,
  detectOrderShape,
  type EnvelopeMeta,
  type UnknownLabel,
} from './detect.js';
export { MAX_NESTING, type RawText, rawText, recordProblem } from './guard.js';
export {
  type FieldRejection,
  NormalizeError,
  Normalizer,
  SCHEMA_CONTRACTS,
  type SchemaChange,
  type SchemaContract,
  stagingColumns,
  UNIT_COLUMN,
} from './normalizer.js';
export {
  type EncodedText,
  type RowsSnapshot,
  type StageKind,
  snapshotBuffers,
  stageKind,
  TableRows,
  textBytesAt,
} from './rows.js';
export { toDecimal, toTimestamp, ValueError } from './values.js';
