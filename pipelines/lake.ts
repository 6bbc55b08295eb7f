import { lstat, mkdir, readdir, readlink, rename, rm, symlink } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { duckdbApi } from '../src/load/duckdb-api.js';
import type { Warehouse } from '../src/load/index.js';
import { ident, literal, type TableDef } from '../src/model/index.js';
import { copyTable, exportableTables, holdLock, isPartitioned, selectSql } from './export.js';

/**
 * `store-sync export --lake DIR`: every store's tables in one Hive-partitioned Parquet lake, and a small
 * DuckDB catalog of views over it.
 *
 * Layout (the contract readers rely on, docs/operations.md "Many stores"):
 *   DIR/<table>/_store=<store>/month=YYYY-MM/data-<stamp>-<i>.parquet   order-dated tables (isPartitioned)
 *   DIR/<table>/_store=<store>/data.parquet                               the others
 *   DIR/catalog.duckdb                                                   a view per table, `_store` a column
 * `_store` (and `month`) are partition columns: they are in the paths, not in the files.
 *
 * Per-store atomic replacement: a store's export is written to `DIR/.versions/<store>/<stamp>/`, then each
 * `DIR/<table>/_store=<store>` (a symbolic link to its folder there) is replaced by rename(2) of a new link,
 * so a reader of the layout sees each table of a store old or new, never half written. The catalog's views
 * name the version folders themselves, and the catalog is written to a temporary file renamed over
 * `DIR/catalog.duckdb`: a reader of the catalog sees every table of every store from one export, old or new,
 * and one that has the old catalog open keeps reading the previous version, which stays until the next
 * export (as `export` keeps its previous one). Globs through the links need a fixed depth
 * (`DIR/orders/*\/*\/*.parquet`): DuckDB's `**` does not follow links.
 */

export interface LakeSource {
  store: string;
  /** The warehouse holding the store's rows (one per store, or one for all, filtered by `_store`). */
  warehouse: Warehouse;
}

export interface LakeOptions {
  tables?: string[];
  onTable?: (store: string, table: string) => void;
}

export interface LakeStore {
  store: string;
  version: string;
  tables: { table: string; rows: number }[];
}

export interface LakeSummary {
  dir: string;
  catalog: string;
  stores: LakeStore[];
  seconds: number;
}

const VERSIONS = '.versions';
export const CATALOG_FILE = 'catalog.duckdb';
const LOCK_FILE = 'lake-lock.duckdb';
const STORE_DIR = /^_store=(.+)$/;

const usage = (message: string) => new StoreSyncError(ERROR_CODES.USAGE, message);

/** The lake's lock: `DIR/.versions/lake-lock.duckdb`, held while an export writes the lake (see holdLock). */
function lockLake(dir: string): Promise<() => void> {
  const file = path.join(dir, VERSIONS, LOCK_FILE);
  return holdLock(file, {
    held: (pid, cause) =>
      new StoreSyncError(
        ERROR_CODES.EXPORT_LOCKED,
        `another store-sync export (pid ${pid}) is writing the lake ${dir}; wait for it to finish. Nothing was exported`,
        cause === undefined ? undefined : { cause },
      ),
    unusable: (cause) =>
      new StoreSyncError(
        ERROR_CODES.USAGE,
        `cannot take the lake's lock ${file}: ${cause instanceof Error ? cause.message : String(cause)}. Nothing was exported`,
        { cause },
      ),
  });
}

/**
 * The version `DIR/<table>/_store=<store>` links to: export's link (its version folder), or null for nothing
 * there. Something else there is refused when the table is being exported (`replacing`), and otherwise
 * passed over (null): export leaves it as it is.
 */
async function linkedVersion(
  dir: string,
  table: string,
  store: string,
  replacing: boolean,
): Promise<string | null> {
  const place = path.join(dir, table, `_store=${store}`);
  const found = await lstat(place).catch(() => null);
  if (!found) return null;
  const text = found.isSymbolicLink() ? await readlink(place) : null;
  const prefix = path.join('..', VERSIONS, store) + path.sep;
  if (text?.startsWith(prefix)) return text.slice(prefix.length).split(path.sep)[0]!;
  if (replacing)
    throw usage(
      `cannot export the lake to ${dir}: ${place} was not written by store-sync export --lake (${text === null ? 'not a link' : `a link to ${text}`}); move it away or choose another --lake folder. Nothing was exported`,
    );
  return null;
}

export async function exportLake(
  dir: string,
  sources: readonly LakeSource[],
  options: LakeOptions = {},
): Promise<LakeSummary> {
  const started = performance.now();
  const absolute = path.resolve(dir);
  const all = exportableTables();
  const wanted = options.tables ?? all.map((t) => t.name);
  const unknown = wanted.filter((name) => !all.some((t) => t.name === name));
  if (unknown.length)
    throw usage(`cannot export unknown table(s) ${unknown.join(', ')}; see docs/warehouse.md for the tables`);
  const chosen = all.filter((t) => wanted.includes(t.name));
  await mkdir(path.join(absolute, VERSIONS), { recursive: true });
  const release = await lockLake(absolute);
  try {
    // Before anything is written: every place a link of the chosen tables goes must be export's or free. Every
    // version a store's links point at now is kept by the cleanup below: the tables not exported this time go
    // on reading theirs, and the chosen ones' are what the previous catalog names.
    // The catalog in place names its versions too: after an export killed between moving the links and
    // writing its catalog, the links point past what the catalog (and its readers) read. Null: it could not be
    // read, and the cleanup deletes nothing.
    const cataloged = await catalogVersions(absolute);
    const previous = new Map<string, Set<string>>();
    for (const { store } of sources) {
      const versions = new Set<string>(cataloged?.get(store) ?? []);
      for (const def of all) {
        const linked = await linkedVersion(absolute, def.name, store, chosen.includes(def));
        if (linked) versions.add(linked);
      }
      previous.set(store, versions);
    }
    const version = `${Date.now()}-${process.pid}`;
    const stores: LakeStore[] = [];
    for (const { store, warehouse } of sources) {
      const folder = path.join(absolute, VERSIONS, store, version);
      const tables: LakeStore['tables'] = [];
      for (const def of chosen) {
        options.onTable?.(store, def.name);
        const target = path.join(folder, def.name, `_store=${store}`);
        await mkdir(target, { recursive: true });
        // A view over no file fails: an empty store's partitioned table gets one empty file in the default
        // month, so readers see the columns and no rows.
        const rows = await copyTable(warehouse, {
          def,
          select: selectSql(def, store),
          target,
          stamp: version,
          empty: 'default-month',
        });
        tables.push({ table: def.name, rows });
      }
      // The store's tables go into place one rename each, once all are written.
      for (const def of chosen) {
        const place = path.join(absolute, def.name, `_store=${store}`);
        await mkdir(path.dirname(place), { recursive: true });
        const temporary = path.join(absolute, VERSIONS, `link-${process.pid}`);
        await rm(temporary, { force: true });
        await symlink(
          path.join('..', VERSIONS, store, version, def.name, `_store=${store}`),
          temporary,
          'dir',
        );
        await rename(temporary, place);
      }
      stores.push({ store, version, tables });
    }
    const catalog = await writeCatalog(absolute, all, sources[0]?.warehouse ?? null);
    // Each store keeps this version and every one its links pointed at before it: the previous catalog's (a
    // reader may have it open), and those of the tables not exported now, which still link to theirs.
    for (const { store } of cataloged === null ? [] : sources) {
      const keep = new Set([version, ...(previous.get(store) ?? [])]);
      const root = path.join(absolute, VERSIONS, store);
      for (const entry of await readdir(root))
        if (!keep.has(entry)) await rm(path.join(root, entry), { recursive: true, force: true });
    }
    return { dir: absolute, catalog, stores, seconds: (performance.now() - started) / 1000 };
  } finally {
    release();
  }
}

/**
 * Writes `DIR/catalog.duckdb`: a view per table over the version folder of every store the lake holds (those
 * exported now and those left as they were), with the warehouse's COMMENTs, to a temporary file renamed
 * into place.
 */
async function writeCatalog(dir: string, all: TableDef[], warehouse: Warehouse | null): Promise<string> {
  const comments = warehouse ? await commentsOf(warehouse) : new Map<string, string>();
  const temporary = path.join(dir, VERSIONS, `catalog-${process.pid}.duckdb`);
  await rm(temporary, { force: true });
  await rm(`${temporary}.wal`, { force: true });
  const instance = await duckdbApi.DuckDBInstance.create(temporary, { threads: '1' });
  try {
    const connection = await instance.connect();
    for (const def of all) {
      const folder = path.join(dir, def.name);
      const entries = await readdir(folder).catch(() => [] as string[]);
      const globs: string[] = [];
      for (const entry of entries.sort()) {
        if (!STORE_DIR.test(entry)) continue;
        const text = await readlink(path.join(folder, entry)).catch(() => null);
        if (text === null) continue;
        const target = path.resolve(folder, text);
        globs.push(isPartitioned(def) ? path.join(target, '*', '*.parquet') : path.join(target, '*.parquet'));
      }
      if (globs.length === 0) continue;
      const types = isPartitioned(def)
        ? "{'_store': 'VARCHAR', 'month': 'VARCHAR'}"
        : "{'_store': 'VARCHAR'}";
      await connection.run(
        `CREATE VIEW ${ident(def.name)} AS SELECT * FROM read_parquet([${globs.map(literal).join(', ')}], ` +
          `hive_partitioning = true, hive_types = ${types}, union_by_name = true)`,
      );
      const own = comments.get(def.name);
      if (own) await connection.run(`COMMENT ON VIEW ${ident(def.name)} IS ${literal(own)}`);
      for (const column of def.columns) {
        const text = comments.get(`${def.name}.${column.name}`);
        if (text)
          await connection.run(
            `COMMENT ON COLUMN ${ident(def.name)}.${ident(column.name)} IS ${literal(text)}`,
          );
      }
      if (isPartitioned(def))
        await connection.run(
          `COMMENT ON COLUMN ${ident(def.name)}.month IS ${literal("Month of the order's date_placed, YYYY-MM (the lake's partition; NULL when unknown).")}`,
        );
    }
    await connection.run('CHECKPOINT');
    connection.closeSync();
  } finally {
    instance.closeSync();
  }
  const file = path.join(dir, CATALOG_FILE);
  await rename(temporary, file);
  await rm(`${temporary}.wal`, { force: true });
  return file;
}

/**
 * The versions each store's views in `DIR/catalog.duckdb` read (their `.versions/<store>/<version>/` paths):
 * an empty map when there is no catalog yet, null when there is one that cannot be read.
 */
async function catalogVersions(dir: string): Promise<Map<string, Set<string>> | null> {
  const file = path.join(dir, CATALOG_FILE);
  if (!(await lstat(file).catch(() => null))) return new Map();
  const found = new Map<string, Set<string>>();
  try {
    const instance = await duckdbApi.DuckDBInstance.create(file, { access_mode: 'READ_ONLY', threads: '1' });
    try {
      const connection = await instance.connect();
      const reader = await connection.runAndReadAll('SELECT sql FROM duckdb_views() WHERE NOT internal');
      connection.closeSync();
      const folder = new RegExp(`${escapeRegExp(path.join(dir, VERSIONS))}/([^/]+)/([^/]+)/`, 'g');
      for (const [sql] of reader.getRows())
        for (const [, store, version] of String(sql).matchAll(folder)) {
          if (!found.has(store!)) found.set(store!, new Set());
          found.get(store!)!.add(version!);
        }
    } finally {
      instance.closeSync();
    }
  } catch {
    return null;
  }
  return found;
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The warehouse's COMMENTs: `table` and `table.column` → text. */
async function commentsOf(warehouse: Warehouse): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  const tables = await warehouse.selectJson(
    "SELECT table_name, comment FROM duckdb_tables() WHERE schema_name = 'main' AND comment IS NOT NULL",
  );
  for (const [table, comment] of tables.rows) out.set(String(table), String(comment));
  const columns = await warehouse.selectJson(
    "SELECT table_name, column_name, comment FROM duckdb_columns() WHERE schema_name = 'main' AND comment IS NOT NULL",
  );
  for (const [table, column, comment] of columns.rows) out.set(`${table}.${column}`, String(comment));
  return out;
}
