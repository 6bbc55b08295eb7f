import { mkdtemp, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { type IngestSummary, ingestPaths } from '../../pipelines/ingest.js';
import type { FilePlan } from '../../src/ingest/prepare.js';
import { DOCUMENTS_STREAM, KIND } from '../../src/load/documents.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { BlockWriter, CODEC } from '../../src/load/landing.js';
import type { StoredBlock } from '../../src/load/replay.js';
import { createLogger, type Logger, silentLogger } from '../../src/log.js';
import { dataTables, ident, literal, tableDef } from '../../src/model/index.js';

/** Shared by the warehouse tests: temp folders, warehouses, and rows read back in a comparable form. */

export const FIXTURES = fileURLToPath(new URL('../fixtures/documents/', import.meta.url));

export async function tempDir(
  prefix = 'store-sync-wh-',
): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** Documents as NDJSON lines. */
export const ndjson = (docs: unknown[]): string => `${docs.map((d) => JSON.stringify(d)).join('\n')}\n`;

/**
 * Writes `docs` as `<dir>/<name>` and ingests it for store `shop` as run `name` (the name makes each file a
 * new one to the ledger, and the run id tells runs apart); answers the ingest's summary.
 */
export async function ingestDocuments(
  warehouse: Warehouse,
  dir: string,
  name: string,
  docs: unknown[],
  options: { workers?: number } = {},
): Promise<IngestSummary> {
  const file = path.join(dir, name);
  await writeFile(file, ndjson(docs));
  return ingestPaths(warehouse, [file], { store: 'shop', runId: name, logger: silentLogger, ...options });
}

export async function tempWarehouse(): Promise<{
  warehouse: Warehouse;
  dir: string;
  file: string;
  cleanup: () => Promise<void>;
}> {
  const { dir, cleanup } = await tempDir();
  const file = path.join(dir, 'warehouse.duckdb');
  const warehouse = await openWarehouse(file);
  return {
    warehouse,
    dir,
    file,
    cleanup: async () => {
      await warehouse.close().catch(() => undefined);
      await cleanup();
    },
  };
}

/** A bare DuckDB file in a temp folder (no warehouse tables), for tests of the loader's parts. */
export async function tempDatabase(): Promise<{ connection: DuckDBConnection; close: () => Promise<void> }> {
  const { dir, cleanup } = await tempDir();
  const instance = await DuckDBInstance.create(path.join(dir, 'bare.duckdb'));
  const connection = await instance.connect();
  return {
    connection,
    close: async () => {
      connection.closeSync();
      instance.closeSync();
      await cleanup();
    },
  };
}

export type Row = Record<string, unknown>;

/**
 * A table's rows as plain objects ordered by key: DECIMAL and TIMESTAMPTZ as DuckDB prints them
 * ("12.500", "2024-05-01 10:00:00+00"), integers as numbers, JSON as its text; `compact` leaves out NULLs.
 */
export async function tableRows(
  connection: DuckDBConnection,
  table: string,
  options: { exclude?: string[]; compact?: boolean; where?: string } = {},
): Promise<Row[]> {
  const exclude = options.exclude ?? ['_synced_at', '_run_id'];
  const def = tableDef(table);
  const order = def.key.map(ident).join(', ');
  const columns = def.columns.filter((c) => !exclude.includes(c.name));
  const sql = `SELECT ${columns.map((c) => ident(c.name)).join(', ')} FROM ${ident(table)}${options.where ? ` WHERE ${options.where}` : ''} ORDER BY ${order}`;
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowsJson().map((values) => {
    const row: Row = {};
    columns.forEach((c, i) => {
      let v: unknown = values[i];
      if (v !== null && c.type === 'BIGINT') v = Number(v);
      if (Array.isArray(v) && c.type === 'BIGINT[]') v = v.map(Number);
      if (v === null && options.compact) return;
      row[c.name] = v;
    });
    return row;
  });
}

/** Every data table, rows serialized and sorted, without the columns that may legitimately differ. */
export async function snapshot(
  connection: DuckDBConnection,
  exclude = ['_synced_at', '_run_id'],
  tables = dataTables().map((t) => t.name),
): Promise<Record<string, string[]>> {
  const out: Record<string, string[]> = {};
  for (const table of tables) {
    const rows = await tableRows(connection, table, { exclude });
    out[table] = rows.map((r) => JSON.stringify(r)).sort();
  }
  return out;
}

export async function count(connection: DuckDBConnection, table: string, where = 'true'): Promise<number> {
  const reader = await connection.runAndReadAll(`SELECT count(*) FROM ${ident(table)} WHERE ${where}`);
  return Number(reader.getRows()[0]![0]);
}

/** A DuckDB setting as DuckDB shows it (`256MB` shows as `244.1 MiB`). */
/** Rows of every data table of the warehouse, together. */
export async function storedRows(connection: DuckDBConnection): Promise<number> {
  let total = 0;
  for (const { name } of dataTables()) total += await count(connection, name);
  return total;
}

export async function currentSetting(connection: DuckDBConnection, name: string): Promise<string> {
  const reader = await connection.runAndReadAll(`SELECT current_setting(${literal(name)})`);
  return String(reader.getRows()[0]![0]);
}

/** A debug logger that keeps, in order, `field` of every `event` logged to it. */
export function loggedValues(event: string, field: string): { logger: Logger; values: unknown[] } {
  const values: unknown[] = [];
  const logger = createLogger({
    level: 'debug',
    format: 'json',
    write: (line) => {
      const entry = JSON.parse(line) as Record<string, unknown>;
      if (entry.event === event) values.push(entry[field]);
    },
  });
  return { logger, values };
}

export const runMeta = (store = 'shop') => ({
  store,
  runId: 'test-run',
  syncedAtMs: Date.parse('2024-06-01T00:00:00Z'),
});

/** What prepareFiles needs to read the whole of `file` from its start, in batches of `batchDocuments`. */
export async function wholeFilePlan(
  file: string,
  batchDocuments: number,
): Promise<{ files: FilePlan[]; batchDocuments: number; batchBytes: number }> {
  const entry = {
    size: (await stat(file)).size,
    mtimeMs: 0,
    sha256: null,
    status: 'partial' as const,
    byteOffset: 0,
    line: 0,
    documents: 0,
    rejected: 0,
  };
  return { files: [{ index: 0, path: file, status: 'loaded', entry }], batchDocuments, batchBytes: 1 << 30 };
}

/** A product with one variant, its price and its stockrecord (ids `id`×10 and ×100); `changes` override fields. */
export function productRecord(id: number, changes: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    title: `P${id}`,
    date_updated: '2024-05-01T10:00:00Z',
    variants: [
      {
        id: id * 10,
        sku: `S${id}`,
        prices: [{ currency: 'EUR', price: '1.00' }],
        stockrecords: [{ id: id * 100, num_in_stock: 3 }],
      },
    ],
    ...changes,
  };
}

/**
 * A raw landing block holding `orders` order documents (orderDoc 1 … orders), as rebuild reads one from the
 * warehouse: its bytes in a buffer of their own.
 */
export async function landedOrdersBlock(orders: number): Promise<StoredBlock> {
  const writer = new BlockWriter();
  for (let n = 1; n <= orders; n++)
    writer.add({
      seq: n,
      kind: KIND.document,
      stream: DOCUMENTS_STREAM,
      entity: null,
      source: null,
      payload: JSON.stringify(orderDoc(n)),
    });
  const payload = await writer.finish();
  const owned = new Uint8Array(payload.byteLength);
  owned.set(payload);
  return { store: 'shop', codec: CODEC, payload: owned, syncedAtMs: 0, runId: 'r' };
}

/** A small 2024-04-01 order document (two lines with a tax line each). */
export function orderDoc(n: number, updatedAt = '2024-05-01T10:00:00Z'): Record<string, unknown> {
  return {
    number: `T-${n}`,
    updated_at: updatedAt,
    date_placed: '2024-05-01T09:00:00Z',
    total_incl_tax: `${n}.50`,
    user: { id: n % 7, email: `c${n % 7}@example.com` },
    lines: [1, 2].map((k) => ({
      id: n * 10 + k,
      product_id: k,
      sku: `SKU-${k}`,
      quantity: k,
      price_incl_tax: '2.50',
      tax_lines: [{ amount: '0.40', rate: 0.19, tax_id: 1 }],
    })),
  };
}
