import { randomUUID } from 'node:crypto';
import { type Dirent, existsSync } from 'node:fs';
import {
  copyFile,
  link,
  lstat,
  mkdir,
  readdir,
  readlink,
  realpath,
  rename,
  rm,
  stat,
  symlink,
} from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { duckdbApi } from '../src/load/duckdb-api.js';
import type { Warehouse } from '../src/load/index.js';
import { lockHolder } from '../src/load/open.js';
import {
  EXPORT_MEMORY_LIMIT,
  EXPORT_ROW_GROUP_BYTES,
  RUNTIME_PROFILES,
} from '../src/load/runtime-profile.js';
import { ident, literal, type TableDef, tableDefinitions } from '../src/model/index.js';
import { processAlive } from '../src/processes.js';

/**
 * `store-sync export`: every table to Parquet under `<dir>/<table>/` with DuckDB's COPY. Orders and the
 * tables that carry an order number are Hive-partitioned by month of the order's `date_placed`
 * (`month=2024-05/`, `month=__HIVE_DEFAULT_PARTITION__` when unknown).
 *
 * Atomic replacement: `<dir>` is a symbolic link to one complete export, a folder in `<dir>.versions/` beside
 * it, and everything under `<dir>` is a plain folder or file. A new export is written to a new folder there
 * (the tables it exports by COPY, the others hard-linked from the current export), then a new link is renamed
 * over `<dir>` (rename(2) is atomic), so a reader resolving `<dir>` sees the old export or the new one, never
 * a half-written one, and all its tables from the same export. The previous export stays until the next
 * export begins (a reader that listed it can still read it); older ones are removed. A partitioned table's
 * files carry the export's stamp in their names: a reader that listed them through the old link and opens
 * them after the swap gets "no such file" rather than the new version's file of the same name, so it never
 * mixes two.
 *
 * The versions are outside `<dir>` because a glob reads what is under it: DuckDB's `**` goes into hidden
 * folders (the earlier layout kept them in `<dir>/.versions/`, where `<dir>/**` reads the current export
 * twice over, then the previous one) but not into linked folders, so only the root may be a link.
 *
 * Export never removes what it did not write: a `<dir>` that is a folder holds either an earlier export's
 * layout (a link per table into `<dir>/.versions/`), which the next export moves into `<dir>.versions/`,
 * keeping what else is there, or it is refused where something of the user's has a table's name, before
 * anything is written. One export at a time writes a folder (`<dir>.versions/export-lock.duckdb`), since each
 * prunes the versions it does not know.
 */

export interface ExportOptions {
  /** Only these tables (default: all data tables plus the run, state, rejection and ledger tables). */
  tables?: string[];
  /** Called before each table is copied and once the last is: what a progress bar shows. */
  onProgress?: (progress: ExportProgress) => void;
}

/** How far an export is: tables copied of those chosen, rows so far, and the table being copied. */
export interface ExportProgress {
  tablesDone: number;
  tablesTotal: number;
  rows: number;
  /** The table being copied; null once all are. */
  table: string | null;
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
/** `<dir>.versions/`: the exports `<dir>` has pointed at, and the export lock. */
const VERSIONS = '.versions';
/** One export's folder in `<dir>.versions/`: `<ms>-<pid>`. */
const VERSION = /^\d+-\d+$/;
/** What an export may remove from `<dir>.versions/`: versions, earlier layouts moved there, links of killed exports. */
const PRUNABLE = /^(?:(?:layout-)?\d+-\d+|link-\d+)$/;
/** The earlier layout's folder of versions inside `<dir>` (a table was a link into it). */
const INNER_VERSIONS = '.versions';

/** Where the exports to `outDir` are kept: beside it, so that no glob under `<dir>` reaches them. */
export function versionsFolder(outDir: string): string {
  return `${path.resolve(outDir)}${VERSIONS}`;
}

/** The export lock of `outDir` (see lockFolder). */
export function exportLockFile(outDir: string): string {
  return path.join(versionsFolder(outDir), LOCK_FILE);
}

const usage = (message: string, cause?: unknown) =>
  new StoreSyncError(ERROR_CODES.USAGE, message, cause === undefined ? undefined : { cause });

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

/**
 * What export copies of a table: its rows, with the order's month (`month`) where it is partitioned. With
 * `store`, only that store's rows and without `_store` (the lake has it in its paths: `_store=<store>/`).
 */
export function selectSql(def: TableDef, store?: string): string {
  const columns = store === undefined ? '*' : '* EXCLUDE (_store)';
  const where = (alias: string) => (store === undefined ? '' : ` WHERE ${alias}_store = ${literal(store)}`);
  if (def.name === 'orders')
    return `SELECT ${columns}, strftime(date_placed, '%Y-%m') AS month FROM orders${where('')}`;
  if (!isPartitioned(def)) return `SELECT ${columns} FROM ${ident(def.name)}${where('')}`;
  return (
    `SELECT c.${columns}, strftime(o.date_placed, '%Y-%m') AS month FROM ${ident(def.name)} c ` +
    `LEFT JOIN orders o ON o._store = c._store AND o.number = c.order_number${where('c.')}`
  );
}

/** Whether a link's text is one export writes at `<dir>`: `<name>.versions/<version>`. */
function isExportLink(dir: string, text: string): boolean {
  return path.dirname(text) === `${path.basename(dir)}${VERSIONS}` && VERSION.test(path.basename(text));
}

/**
 * The folder export works on: `outDir` itself, unless it is a link of the user's (a folder kept on a bigger
 * disk, say), which is followed to where it points, since export replaces `<dir>` with its own link.
 */
async function resolveOutDir(outDir: string): Promise<string> {
  let current = path.resolve(outDir);
  for (let hops = 0; hops < 40; hops++) {
    const found = await lstat(current).catch(() => null);
    if (!found?.isSymbolicLink()) return current;
    const text = await readlink(current);
    if (isExportLink(current, text)) return current;
    current = path.resolve(await realpath(path.dirname(current)), text);
  }
  throw usage(`cannot export to ${outDir}: too many symbolic links; choose another --out or parquetDir`);
}

/** What `<dir>` is before an export. */
type Current =
  /** Nothing: the first export. */
  | { kind: 'none' }
  /** An export's version in `<dir>.versions/` (`<dir>` links to it, but for a move that was interrupted). */
  | { kind: 'version'; name: string }
  /**
   * A folder: an earlier layout's (`tables`, links into `<dir>/.versions/`, and what else was put there,
   * `others`), or one made by hand. It is moved into `<dir>.versions/` when the new export takes its place.
   */
  | { kind: 'folder'; tables: Map<string, string>; others: string[] };

const whatIs = (entry: Dirent, text: string | null) =>
  text !== null ? `a link to ${text}` : entry.isDirectory() ? 'a folder' : 'a file';

/** What `<dir>` holds, refusing (before anything is written) what export cannot replace without loss. */
async function inspect(absolute: string, wanted: Set<string>): Promise<Current> {
  const found = await lstat(absolute).catch(() => null);
  if (!found) {
    // A move interrupted between its two renames (see swap) left `<dir>` missing: the version it was to link
    // to was complete, so it is the current one.
    const entries = await readdir(versionsFolder(absolute));
    const moved = entries
      .filter((e) => /^layout-\d+-\d+$/.test(e) && entries.includes(e.slice('layout-'.length)))
      .sort(byStamp)
      .at(-1);
    return moved ? { kind: 'version', name: moved.slice('layout-'.length) } : { kind: 'none' };
  }
  // resolveOutDir followed any link but export's own.
  if (found.isSymbolicLink()) {
    const name = path.basename(await readlink(absolute));
    // Files put into a table's folder by hand would go with the folder's replacement.
    for (const table of wanted) {
      const what = await foreignIn(path.join(absolute, table));
      if (what) throw refusal(table, path.join(absolute, table), what);
    }
    return { kind: 'version', name };
  }
  if (!found.isDirectory())
    throw usage(
      `cannot export to ${absolute}: it is a file, not a folder; move it away or choose another --out or parquetDir. Nothing was exported`,
    );
  if (found.dev !== (await stat(path.dirname(absolute))).dev)
    throw usage(
      `cannot export to ${absolute}: it is a mount point, and export replaces ${absolute} with a link to the ` +
        `current export in ${versionsFolder(absolute)} beside it; export to a folder inside it ` +
        `(--out ${path.join(absolute, 'parquet')}). Nothing was exported`,
    );
  const all = new Set(exportableTables().map((t) => t.name));
  const tables = new Map<string, string>();
  const others: string[] = [];
  const inTheWay: { name: string; what: string }[] = [];
  for (const entry of await readdir(absolute, { withFileTypes: true })) {
    if (entry.name === INNER_VERSIONS && entry.isDirectory()) continue;
    const text = entry.isSymbolicLink() ? await readlink(path.join(absolute, entry.name)) : null;
    const intoVersions = text !== null && path.dirname(text) === INNER_VERSIONS;
    // A link being put in place when an export of that layout was killed.
    if (intoVersions && /\.link-\d+$/.test(entry.name)) continue;
    if (intoVersions && path.basename(text).startsWith(`${entry.name}-`))
      tables.set(entry.name, path.join(absolute, text));
    else if (all.has(entry.name)) inTheWay.push({ name: entry.name, what: whatIs(entry, text) });
    else others.push(entry.name);
  }
  // A table's name taken by something of the user's: the tables being exported first, then the others,
  // which would become export's to replace once inside a version.
  const refused = inTheWay.find((e) => wanted.has(e.name)) ?? inTheWay[0];
  if (refused) {
    const place = path.join(absolute, refused.name);
    if (wanted.has(refused.name)) throw refusal(refused.name, place, refused.what);
    throw usage(
      `cannot export to ${absolute}: ${place} has the name of the table ${refused.name} but was not written by ` +
        `store-sync export (${refused.what}); move it away or choose another --out or parquetDir. Nothing was exported`,
    );
  }
  return { kind: 'folder', tables, others };
}

const refusal = (table: string, place: string, what: string) =>
  usage(
    `cannot export ${table}: ${place} exists and was not written by store-sync export (${what}); ` +
      'move it away or choose another --out or parquetDir. Nothing was exported',
  );

/** Export's file names in a table's folder: `data.parquet`, or `data-<stamp>-<i>.parquet`. */
const TABLE_FILE = /^data(?:-\d+-\d+-\d+)?\.parquet$/;

/**
 * What in a table's folder of the current export export did not write (null when nothing): export writes a
 * folder of its own files there, directly or in `month=…/` folders.
 */
async function foreignIn(folder: string): Promise<string | null> {
  const found = await lstat(folder).catch(() => null);
  if (!found) return null;
  if (found.isSymbolicLink()) return `a link to ${await readlink(folder)}`;
  if (!found.isDirectory()) return 'a file';
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    if (entry.isFile() && TABLE_FILE.test(entry.name)) continue;
    if (entry.isDirectory() && entry.name.startsWith('month=')) {
      const inner = await readdir(path.join(folder, entry.name), { withFileTypes: true });
      const other = inner.find((e) => !(e.isFile() && TABLE_FILE.test(e.name)));
      if (!other) continue;
      return `a folder holding ${path.join(entry.name, other.name)}`;
    }
    return `a folder holding ${entry.name}`;
  }
  return null;
}

const stampOf = (name: string) =>
  name
    .replace(/^layout-/, '')
    .split('-')
    .map(Number) as [number, number];
const byStamp = (a: string, b: string) => {
  const [ma, pa] = stampOf(a);
  const [mb, pb] = stampOf(b);
  return ma - mb || pa - pb;
};

/**
 * Puts `from` (a file, folder or link) at `to` without copying data: files are hard-linked (copied where the
 * file system has no hard links). Versions never change a file once written, so two may share one.
 */
async function carry(from: string, to: string): Promise<void> {
  // An earlier layout's link to a version that is gone: nothing to carry.
  const found = await lstat(from).catch(() => null);
  if (!found) return;
  if (found.isDirectory()) {
    await mkdir(to);
    for (const name of await readdir(from)) await carry(path.join(from, name), path.join(to, name));
  } else if (found.isSymbolicLink()) {
    await symlink(await readlink(from), to);
  } else if (found.isFile()) {
    await link(from, to).catch(() => copyFile(from, to));
  }
}

/** Points `<dir>` at the new version, moving a folder in its place (an earlier layout's) into `<dir>.versions/`. */
async function swap(absolute: string, current: Current, version: string): Promise<void> {
  const versions = versionsFolder(absolute);
  const temporary = path.join(versions, `link-${process.pid}`);
  await rm(temporary, { force: true });
  await symlink(path.join(path.basename(versions), version), temporary, 'dir');
  if (current.kind === 'folder') {
    // A folder cannot be renamed over: it is moved out of the way first, and `<dir>` is missing until the
    // next rename (a reader then gets "no such file", as for a listing made before a swap; inspect finishes
    // a move interrupted there). Only the first export over an earlier layout does this.
    try {
      await rename(absolute, path.join(versions, `layout-${version}`));
    } catch (error) {
      await rm(temporary, { force: true });
      throw usage(
        `cannot export to ${absolute}: moving the folder there into ${versions} failed ` +
          `(${(error as NodeJS.ErrnoException).code ?? (error as Error).message}); export to another --out or parquetDir. ` +
          'Nothing was exported',
        error,
      );
    }
  }
  await rename(temporary, absolute);
}

/**
 * Removes every version but the current one, before a new one is written: the one before it has been
 * replaced since the last export (a reader that listed it then has had until now), a half-written one was
 * killed, an earlier layout moved here is an export that is not current. At most two exports take space.
 */
async function prune(absolute: string, current: Current): Promise<void> {
  const versions = versionsFolder(absolute);
  for (const entry of await readdir(versions))
    if (PRUNABLE.test(entry) && !(current.kind === 'version' && entry === current.name))
      await rm(path.join(versions, entry), { recursive: true, force: true });
}

/** The lock files this process holds (see holdLock). */
const lockedHere = new Set<string>();

/** The export lock: a small DuckDB database file in `<dir>.versions/`, held open (and so locked) while an export runs. */
export const LOCK_FILE = 'export-lock.duckdb';

const locked = (outDir: string, holder: string) =>
  new StoreSyncError(
    ERROR_CODES.EXPORT_LOCKED,
    `another store-sync export (pid ${holder}) is writing to ${outDir}; ` +
      'wait for it to finish, or export somewhere else. Nothing was exported',
  );

/** What holdLock throws when it cannot take its lock. */
export interface LockRefusals {
  /** Another export holds it: `holder` is its pid (`<pid>, this process` for one of this process). */
  held: (holder: string, cause?: unknown) => StoreSyncError;
  /** The file cannot be opened as a lock (not a DuckDB file, say). */
  unusable: (cause: unknown) => StoreSyncError;
}

/**
 * Takes an export's lock, `file`, or fails at once naming the export that holds it; returns its release.
 * Export's folder lock and the lake's are both this.
 *
 * The lock is the kernel's, not a file's presence: opening `file` as a DuckDB database takes DuckDB's fcntl
 * write lock on it, exactly as the warehouse's one-writer rule does. The kernel drops the lock when the
 * holder exits, however it exits, so a killed export leaves nothing to take over: the pid files this
 * replaced needed a stale-lock takeover, which could let two exports write when three met at the same dead
 * lock, and could mistake a reused pid for a live export. The file itself stays (removing it while another
 * export opens it would let two exports lock two different files).
 *
 * fcntl locks belong to the process, and closing any descriptor of the file drops all of them: within a
 * process the file is claimed in memory first, so this process never opens it a second time.
 */
export async function holdLock(file: string, refuse: LockRefusals): Promise<() => void> {
  if (lockedHere.has(file)) throw refuse.held(`${process.pid}, this process`);
  lockedHere.add(file);
  try {
    await createLockFile(file);
    const holder = await duckdbApi.DuckDBInstance.create(file, { access_mode: 'READ_WRITE', threads: '1' });
    return () => {
      holder.closeSync();
      lockedHere.delete(file);
    };
  } catch (cause) {
    lockedHere.delete(file);
    const pid = lockHolder(cause);
    throw pid !== null ? refuse.held(pid, cause) : refuse.unusable(cause);
  }
}

/**
 * Puts a complete, empty DuckDB database at `file` unless one is there. A database DuckDB creates in place
 * is locked before its header is written, so an export killed in between (or stopped there, then killed)
 * left a file no DuckDB could open, and every later export failed on it until someone removed it by hand.
 * So the database is created under a name of its own and linked into place (`link` fails if the name is
 * taken, so a lock file another export already made is never replaced): the name only ever holds a whole
 * database. Where the file system has no hard links, DuckDB creates it in place, as before.
 */
async function createLockFile(file: string): Promise<void> {
  await removeDeadCreations(file);
  if (existsSync(file)) return;
  const fresh = `${file}.${process.pid}.${randomUUID()}.tmp`;
  try {
    const instance = await duckdbApi.DuckDBInstance.create(fresh, { threads: '1' });
    instance.closeSync();
    await link(fresh, file);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    // Taken by another export meanwhile, or no hard links here: either way the lock is opened as it stands.
    if (code !== 'EEXIST' && code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw error;
  } finally {
    await rm(fresh, { force: true });
    await rm(`${fresh}.wal`, { force: true });
  }
}

/**
 * Removes the databases createLockFile made for `file` in processes that have since died (killed between
 * creating one and removing it): each name carries its process's pid. One of a live process is its own.
 */
async function removeDeadCreations(file: string): Promise<void> {
  const prefix = `${path.basename(file)}.`;
  const folder = path.dirname(file);
  let names: string[];
  try {
    names = await readdir(folder);
  } catch {
    return;
  }
  for (const name of names) {
    const pid = /^(\d+)\.[0-9a-f-]+\.tmp(?:\.wal)?$/.exec(name.slice(prefix.length))?.[1];
    if (!name.startsWith(prefix) || pid === undefined || processAlive(Number(pid))) continue;
    await rm(path.join(folder, name), { force: true });
  }
}

/** Takes the folder's export lock (`<dir>.versions/export-lock.duckdb`, see holdLock) for this export. */
function lockFolder(outDir: string): Promise<() => void> {
  const file = exportLockFile(outDir);
  return holdLock(file, {
    held: (holder) => locked(outDir, holder),
    unusable: (cause) =>
      new StoreSyncError(
        ERROR_CODES.USAGE,
        `cannot take the export lock ${file}: ${cause instanceof Error ? cause.message : String(cause)}; ` +
          'if it is not a DuckDB file, remove it (no export is running then) and export again. Nothing was exported',
        { cause },
      ),
  });
}

/**
 * The earlier layout's lock (`<dir>/.versions/export-lock.duckdb`), taken too while an export moves that
 * layout away: an older store-sync exporting there meanwhile would write into the folder being moved.
 */
async function lockEarlierLayout(outDir: string): Promise<() => void> {
  const file = path.join(outDir, INNER_VERSIONS, LOCK_FILE);
  if (!(await stat(file).catch(() => null))) return () => {};
  try {
    const holder = await duckdbApi.DuckDBInstance.create(file, { access_mode: 'READ_WRITE', threads: '1' });
    return () => holder.closeSync();
  } catch (cause) {
    const pid = lockHolder(cause);
    if (pid !== null) throw locked(outDir, pid);
    // Not a lock any more (a file of another kind): nothing can be holding it.
    return () => {};
  }
}

/**
 * `mkdir -p` of a folder export needs, one level at a time. Node 20's recursive mkdir loops forever, at full
 * CPU, where a folder exists but refuses children with ENOENT (`/proc`, some network and FUSE mounts); done
 * this way it fails, and the error names the folder and why.
 */
async function makeFolder(folder: string, outDir: string): Promise<void> {
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
        `cannot create the Parquet folder ${outDir}: creating ${level} failed (${code ?? (error as Error).message}); choose another --out or parquetDir`,
        { cause: error },
      );
    }
  }
}

/**
 * Creates the folders the export to `outDir` needs (the one it is in, and `<dir>.versions/` beside it;
 * `<dir>` itself is export's link, made by the first export), or fails naming it: `sync` with
 * `exportAfterSync` calls it before it changes anything, so a folder that cannot be made is a usage error
 * with nothing synced.
 */
export async function prepareExportFolder(outDir: string): Promise<string> {
  const absolute = await resolveOutDir(outDir);
  if (path.dirname(absolute) === absolute)
    throw usage(`cannot export to ${absolute}: choose a folder under it (--out or parquetDir)`);
  await makeFolder(path.dirname(absolute), absolute);
  await makeFolder(versionsFolder(absolute), absolute);
  return absolute;
}

export async function exportParquet(
  warehouse: Warehouse,
  outDir: string,
  options: ExportOptions = {},
): Promise<ExportSummary> {
  const started = performance.now();
  const all = exportableTables();
  const wanted = options.tables ?? all.map((t) => t.name);
  const unknown = wanted.filter((name) => !all.some((t) => t.name === name));
  if (unknown.length)
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `cannot export unknown table(s) ${unknown.join(', ')}; see docs/warehouse.md for the tables`,
    );
  const absolute = await prepareExportFolder(outDir);
  const release = await lockFolder(absolute);
  try {
    // Before writing anything: what is at `<dir>` must be export's, or nothing of the user's in a table's place
    // (the lock keeps it so).
    const current = await inspect(absolute, new Set(wanted));
    const releaseEarlier = current.kind === 'folder' ? await lockEarlierLayout(absolute) : () => {};
    try {
      const chosen = all.filter((t) => wanted.includes(t.name));
      return await exportTables(warehouse, absolute, current, chosen, started, options.onProgress);
    } finally {
      releaseEarlier();
    }
  } finally {
    release();
  }
}

/**
 * Runs `fn` with DuckDB's memory limited to EXPORT_MEMORY_LIMIT and insertion order not preserved (see
 * runtime-profile.ts), then sets both back as they were.
 */
const withExportSettings = <T>(warehouse: Warehouse, fn: () => Promise<T>): Promise<T> =>
  warehouse.withSettings({ memory_limit: EXPORT_MEMORY_LIMIT, preserve_insertion_order: false }, fn);

/** One table's copy (copyTable): what to copy and where. */
export interface TableCopy {
  def: TableDef;
  /** selectSql's, for the table (and a store). */
  select: string;
  /** The table's folder, made already: a partitioned table's months go into it, the others' `data.parquet`. */
  target: string;
  /** The export's stamp, in a partitioned table's file names: `data-<stamp>-<i>.parquet`. */
  stamp: string;
  /**
   * Where an empty partitioned table's one file goes: `'month-column'` in `target`, with the month as a column
   * (export: read by `<table>/**\/*.parquet`), or `'default-month'` in `target/month=__HIVE_DEFAULT_PARTITION__/`
   * without it (the lake: read by the fixed-depth `<table>/_store=<store>/*\/*.parquet`, the month a
   * partition column).
   */
  empty: 'month-column' | 'default-month';
}

/** Copies one table to Parquet (see TableCopy), for export and the lake; returns the rows copied. */
export async function copyTable(
  warehouse: Warehouse,
  { def, select, target, stamp, empty }: TableCopy,
): Promise<number> {
  const partitioned = isPartitioned(def);
  const destination = partitioned ? target : path.join(target, 'data.parquet');
  const options = partitioned
    ? { partitionBy: ['month'], filenamePattern: `data-${stamp}-{i}`, rowGroupBytes: EXPORT_ROW_GROUP_BYTES }
    : {};
  // A writer's memory limit is sized for loading (RUNTIME_PROFILES.bulkCopy gives DuckDB's default, as a
  // reader has), and the export's own settings bound what the COPY holds (exportSettings).
  return warehouse.withProfile(RUNTIME_PROFILES.bulkCopy, warehouse.logger, () =>
    withExportSettings(warehouse, async () => {
      const copied = await warehouse.copyToParquet(select, destination, options);
      // A partitioned COPY of no rows writes no file, and a glob over the table then fails with "No files
      // found": an empty table gets one empty file, so readers see the table's columns and no rows, as with
      // every other empty table.
      if (partitioned && copied === 0) {
        if (empty === 'month-column')
          await warehouse.copyToParquet(`${select} LIMIT 0`, path.join(target, `data-${stamp}-0.parquet`));
        else {
          const folder = path.join(target, 'month=__HIVE_DEFAULT_PARTITION__');
          await mkdir(folder);
          await warehouse.copyToParquet(
            `SELECT * EXCLUDE (month) FROM (${select}) LIMIT 0`,
            path.join(folder, `data-${stamp}-0.parquet`),
          );
        }
      }
      return copied;
    }),
  );
}

async function exportTables(
  warehouse: Warehouse,
  absolute: string,
  current: Current,
  chosen: TableDef[],
  started: number,
  onProgress?: (progress: ExportProgress) => void,
): Promise<ExportSummary> {
  await prune(absolute, current);
  const version = `${Date.now()}-${process.pid}`;
  const folder = path.join(versionsFolder(absolute), version);
  await mkdir(folder);
  const tables: ExportedTable[] = [];
  const report = (table: string | null) =>
    onProgress?.({
      tablesDone: tables.length,
      tablesTotal: chosen.length,
      rows: tables.reduce((n, t) => n + t.rows, 0),
      table,
    });
  for (const def of chosen) {
    report(def.name);
    const target = path.join(folder, def.name);
    await mkdir(target);
    // A partitioned table's file names carry the stamp (see the top of this file).
    const rows = await copyTable(warehouse, {
      def,
      select: selectSql(def),
      target,
      stamp: version,
      empty: 'month-column',
    });
    tables.push({
      table: def.name,
      rows,
      partitioned: isPartitioned(def),
      path: path.join(absolute, def.name),
    });
  }
  report(null);
  // The tables not exported this time (and anything else in the export), as they are now.
  const exported = new Set(chosen.map((t) => t.name));
  if (current.kind === 'version') {
    const from = path.join(versionsFolder(absolute), current.name);
    for (const name of await readdir(from).catch(() => []))
      if (!exported.has(name)) await carry(path.join(from, name), path.join(folder, name));
  } else if (current.kind === 'folder') {
    for (const [table, from] of current.tables)
      if (!exported.has(table)) await carry(from, path.join(folder, table));
    for (const name of current.others) await carry(path.join(absolute, name), path.join(folder, name));
  }
  await swap(absolute, current, version);
  return { outDir: absolute, tables, seconds: (performance.now() - started) / 1000 };
}
