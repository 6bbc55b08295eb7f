import { lstat, mkdir, readdir, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import type { Warehouse } from '../src/load/index.js';
import { lockHolder } from '../src/load/open.js';
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
 * listed it can still read it); older ones are removed. A partitioned table's files carry the export's
 * stamp in their names: a reader that listed them through the old link and opens them after the swap
 * gets "no such file" rather than the new version's file of the same name, so it never mixes two.
 *
 * Export never removes what it did not write: a `<dir>/<table>` that is not its link is refused before
 * anything is written, and one export at a time writes a folder (`.versions/export-lock.duckdb`), since each prunes
 * the versions it does not know.
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

/** The version `<dir>/<table>` links to; null when nothing is there. Refuses anything export did not write. */
async function currentVersion(outDir: string, table: string): Promise<string | null> {
  const link = path.join(outDir, table);
  const found = await lstat(link).catch(() => null);
  if (!found) return null;
  const target = found.isSymbolicLink() ? await readlink(link) : null;
  if (target && path.dirname(target) === VERSIONS && path.basename(target).startsWith(`${table}-`))
    return path.basename(target);
  throw new StoreSyncError(
    ERROR_CODES.USAGE,
    `cannot export ${table}: ${link} exists and was not written by store-sync export ` +
      `(${target ? `a link to ${target}` : found.isDirectory() ? 'a folder' : 'a file'}, not a link into ${VERSIONS}/); ` +
      'move it away or choose another --out or parquetDir. Nothing was exported',
  );
}

/** Points `<dir>/<table>` at the new version and prunes versions older than the previous one. */
async function swap(outDir: string, table: string, version: string, previous: string | null): Promise<void> {
  const link = path.join(outDir, table);
  const temporary = `${link}.link-${process.pid}`;
  await rm(temporary, { force: true });
  await symlink(path.join(VERSIONS, version), temporary, 'dir');
  await rename(temporary, link);
  const keep = new Set([version, previous]);
  for (const entry of await readdir(path.join(outDir, VERSIONS))) {
    if (entry.startsWith(`${table}-`) && !keep.has(entry) && /^\d+-\d+$/.test(entry.slice(table.length + 1)))
      await rm(path.join(outDir, VERSIONS, entry), { recursive: true, force: true });
  }
}

/** The folders this process is exporting to. */
const exportingHere = new Set<string>();

/** The export lock: a small DuckDB database file under `.versions/`, held open (and so locked) while an export runs. */
export const LOCK_FILE = 'export-lock.duckdb';

const locked = (outDir: string, holder: string) =>
  new StoreSyncError(
    ERROR_CODES.EXPORT_LOCKED,
    `another store-sync export (pid ${holder}) is writing to ${outDir}; ` +
      'wait for it to finish, or export somewhere else. Nothing was exported',
  );

/**
 * Takes the folder's export lock for this export, or fails at once naming the export that holds it.
 *
 * The lock is the kernel's, not a file's presence: opening `.versions/export-lock.duckdb` as a DuckDB database
 * takes DuckDB's fcntl write lock on it, exactly as the warehouse's one-writer rule does. The kernel drops the
 * lock when the holder exits, however it exits, so a killed export leaves nothing to take over: the pid files
 * this replaced needed a stale-lock takeover, which could let two exports write when three met at the same
 * dead lock, and could mistake a reused pid for a live export. The file itself stays (removing it while
 * another export opens it would let two exports lock two different files).
 *
 * fcntl locks belong to the process, and closing any descriptor of the file drops all of them: within a
 * process the folder is claimed in memory first, so this process never opens the file a second time.
 */
async function lockFolder(outDir: string): Promise<() => Promise<void>> {
  if (exportingHere.has(outDir)) throw locked(outDir, `${process.pid}, this process`);
  exportingHere.add(outDir);
  const file = path.join(outDir, VERSIONS, LOCK_FILE);
  try {
    const holder = await DuckDBInstance.create(file, { access_mode: 'READ_WRITE', threads: '1' });
    return async () => {
      holder.closeSync();
      exportingHere.delete(outDir);
    };
  } catch (cause) {
    exportingHere.delete(outDir);
    const pid = lockHolder(cause);
    if (pid !== null) throw locked(outDir, pid);
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `cannot take the export lock ${file}: ${cause instanceof Error ? cause.message : String(cause)}; ` +
        'if it is not a DuckDB file, remove it (no export is running then) and export again. Nothing was exported',
      { cause },
    );
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

/**
 * Creates the export folder (and its `.versions/`), or fails naming it: `sync` with `exportAfterSync` calls it
 * before it changes anything, so a folder that cannot be made is a usage error with nothing synced.
 */
export async function prepareExportFolder(outDir: string): Promise<void> {
  const absolute = path.resolve(outDir);
  await makeFolder(absolute);
  await makeFolder(path.join(absolute, VERSIONS));
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
  await prepareExportFolder(absolute);
  const release = await lockFolder(absolute);
  try {
    // Before writing anything: every table's place must be empty or export's own link (the lock keeps it so).
    const chosen = new Map<TableDef, string | null>();
    for (const def of all.filter((t) => wanted.includes(t.name)))
      chosen.set(def, await currentVersion(absolute, def.name));
    return await exportTables(warehouse, absolute, chosen, started);
  } finally {
    await release();
  }
}

async function exportTables(
  warehouse: Warehouse,
  absolute: string,
  chosen: Map<TableDef, string | null>,
  started: number,
): Promise<ExportSummary> {
  const stamp = `${Date.now()}-${process.pid}`;
  // A partitioned table's file names carry the stamp (see the top of this file).
  const files = `data-${stamp}`;
  const tables: ExportedTable[] = [];
  for (const [def, previous] of chosen) {
    const version = `${def.name}-${stamp}`;
    const target = path.join(absolute, VERSIONS, version);
    const partitioned = isPartitioned(def);
    await mkdir(target, { recursive: true });
    const destination = partitioned ? target : path.join(target, 'data.parquet');
    const options = partitioned ? `, PARTITION_BY (month), FILENAME_PATTERN '${files}-{i}'` : '';
    // A writer's memory limit is sized for loading, not for a COPY with a Parquet row group in progress per
    // month: at 256 MB the orders of two million documents could not be exported.
    const result = await warehouse.exclusive(() =>
      warehouse.withDefaultMemoryLimit(async () => {
        const copied = await warehouse.connection.run(
          `COPY (${selectSql(def)}) TO ${literal(destination)} (FORMAT parquet${options})`,
        );
        // A partitioned COPY of no rows writes no file, and `read_parquet('<table>/**/*.parquet')` then fails
        // with "No files found": an empty table gets one empty file, with the month as a column, so readers
        // see the table's columns and no rows, as with every other empty table.
        if (partitioned && Number(copied.rowsChanged) === 0)
          await warehouse.connection.run(
            `COPY (${selectSql(def)} LIMIT 0) TO ${literal(path.join(target, `${files}-0.parquet`))} (FORMAT parquet)`,
          );
        return copied;
      }),
    );
    await swap(absolute, def.name, version, previous);
    tables.push({
      table: def.name,
      rows: Number(result.rowsChanged),
      partitioned,
      path: path.join(absolute, def.name),
    });
  }
  return { outDir: absolute, tables, seconds: (performance.now() - started) / 1000 };
}
