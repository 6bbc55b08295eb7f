import { mkdir, readdir, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import type { Warehouse } from '../src/load/index.js';
import { ident, literal } from '../src/load/sql.js';
import { type TableDef, tableDefinitions } from '../src/normalize/index.js';

/**
 * `store-sync export`: every table to Parquet under `<dir>/<table>/` with DuckDB's COPY. Orders and the
 * tables that carry an order number are Hive-partitioned by month of the order's `date_placed`
 * (`month=2024-05/`, `month=__HIVE_DEFAULT_PARTITION__` when unknown).
 *
 * Atomic replacement: `<dir>/<table>` is a symbolic link to a complete version directory under
 * `<dir>/.versions/`. A new export is written beside the current one, then a new link is renamed over
 * the old (rename(2) is atomic), so a reader resolving `<dir>/<table>` sees the old table or the new
 * one, never a half-written one. The previous version stays until the next export (a reader that
 * listed it can still read it); older ones are removed.
 */

export interface ExportOptions {
  /** Only these tables (default: all data tables plus the run, state, rejection and ledger tables). */
  tables?: string[];
}

export interface ExportedTable {
  table: string;
  rows: number;
  partitioned: boolean;
  path: string;
}

export interface ExportSummary {
  outDir: string;
  tables: ExportedTable[];
  seconds: number;
}

const NOT_EXPORTED = new Set(['_raw_landing', '_raw_landing_parts', '_schema']);
const VERSIONS = '.versions';

export function exportableTables(): TableDef[] {
  return tableDefinitions.filter((t) => !NOT_EXPORTED.has(t.name));
}

/** Orders and every order-family table with an order number, partitioned by the order's month. */
export function isPartitioned(def: TableDef): boolean {
  if (def.name === 'orders') return true;
  return (
    (def.entity === 'order' || def.entity === 'fulfillment') &&
    def.columns.some((c) => c.name === 'order_number')
  );
}

function selectSql(def: TableDef): string {
  if (def.name === 'orders') return `SELECT *, strftime(date_placed, '%Y-%m') AS month FROM orders`;
  if (!isPartitioned(def)) return `SELECT * FROM ${ident(def.name)}`;
  return (
    `SELECT c.*, strftime(o.date_placed, '%Y-%m') AS month FROM ${ident(def.name)} c ` +
    'LEFT JOIN orders o ON o._store = c._store AND o.number = c.order_number'
  );
}

async function isLink(file: string): Promise<boolean> {
  try {
    await readlink(file);
    return true;
  } catch {
    return false;
  }
}

/** Points `<dir>/<table>` at the new version and prunes versions older than the previous one. */
async function swap(outDir: string, table: string, version: string): Promise<void> {
  const link = path.join(outDir, table);
  const previous = (await isLink(link)) ? path.basename(await readlink(link)) : null;
  if (!previous && (await stat(link).catch(() => null))) {
    // A plain directory from elsewhere: moved aside once, the only non-atomic step.
    await rename(link, path.join(outDir, VERSIONS, `${table}-legacy-${Date.now()}`));
  }
  const temporary = `${link}.link-${process.pid}`;
  await rm(temporary, { force: true });
  await symlink(path.join(VERSIONS, version), temporary, 'dir');
  await rename(temporary, link);
  const keep = new Set([version, previous]);
  for (const entry of await readdir(path.join(outDir, VERSIONS))) {
    if (entry.startsWith(`${table}-`) && !keep.has(entry) && /^\d|legacy/.test(entry.slice(table.length + 1)))
      await rm(path.join(outDir, VERSIONS, entry), { recursive: true, force: true });
  }
}

/**
 * `mkdir -p` of the export folder, one level at a time. Node 20's recursive mkdir loops forever, at full CPU,
 * where a folder exists but refuses children with ENOENT (`/proc`, some network and FUSE mounts); done this
 * way it fails, and the error names the folder and why.
 */
async function makeFolder(folder: string): Promise<void> {
  const missing: string[] = [];
  for (let current = folder; !(await stat(current).catch(() => null)); current = path.dirname(current)) {
    missing.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const level of missing) {
    try {
      await mkdir(level);
    } catch (error) {
      const { code } = error as NodeJS.ErrnoException;
      if (code === 'EEXIST') continue;
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `cannot create the Parquet folder ${folder}: creating ${level} failed (${code ?? (error as Error).message}); choose another --out or parquetDir`,
        { cause: error },
      );
    }
  }
}

export async function exportParquet(
  warehouse: Warehouse,
  outDir: string,
  options: ExportOptions = {},
): Promise<ExportSummary> {
  const started = performance.now();
  const absolute = path.resolve(outDir);
  const all = exportableTables();
  const wanted = options.tables ?? all.map((t) => t.name);
  const unknown = wanted.filter((name) => !all.some((t) => t.name === name));
  if (unknown.length)
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `cannot export unknown table(s) ${unknown.join(', ')}; see docs/warehouse.md for the tables`,
    );
  await makeFolder(absolute);
  await makeFolder(path.join(absolute, VERSIONS));
  const stamp = `${Date.now()}-${process.pid}`;
  const tables: ExportedTable[] = [];
  for (const def of all.filter((t) => wanted.includes(t.name))) {
    const version = `${def.name}-${stamp}`;
    const target = path.join(absolute, VERSIONS, version);
    const partitioned = isPartitioned(def);
    await mkdir(target, { recursive: true });
    const destination = partitioned ? target : path.join(target, 'data.parquet');
    const options = partitioned ? ", PARTITION_BY (month), FILENAME_PATTERN 'data-{i}'" : '';
    const result = await warehouse.exclusive(async () => {
      const copied = await warehouse.connection.run(
        `COPY (${selectSql(def)}) TO ${literal(destination)} (FORMAT parquet${options})`,
      );
      // A partitioned COPY of no rows writes no file, and `read_parquet('<table>/**/*.parquet')` then fails
      // with "No files found": an empty table gets one empty file, with the month as a column, so readers
      // see the table's columns and no rows, as with every other empty table.
      if (partitioned && Number(copied.rowsChanged) === 0)
        await warehouse.connection.run(
          `COPY (${selectSql(def)} LIMIT 0) TO ${literal(path.join(target, 'data-0.parquet'))} (FORMAT parquet)`,
        );
      return copied;
    });
    await swap(absolute, def.name, version);
    tables.push({
      table: def.name,
      rows: Number(result.rowsChanged),
      partitioned,
      path: path.join(absolute, def.name),
    });
  }
  return { outDir: absolute, tables, seconds: (performance.now() - started) / 1000 };
}
