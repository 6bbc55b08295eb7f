/** Load: the DuckDB warehouse (schema, merge, the Appender, state) and its readers. */
export { BatchBuilder, type BatchCounts, type BatchMeta, type RejectionRow } from './batch-builder.js';
export { BatchWriter } from './batch-writer.js';
export { commentSql, createTableSql, schemaFingerprint } from './ddl.js';
export { DOCUMENTS_STREAM } from './documents.js';
export { INGEST_WAREHOUSE_BLOCK_BYTES } from './open.js';
export { PageGroups } from './page-groups.js';
export { type QueryResult, runReadOnlyQuery } from './query.js';
export { readStatus, type StatusRow } from './status.js';
export { Transaction, type TransactionOptions } from './transaction.js';
export { openWarehouse, type PageCounts, Warehouse, type WarehouseOptions } from './warehouse.js';
