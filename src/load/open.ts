import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  linkSync,
  mkdirSync,
  openSync,
  readFileSync,
  readSync,
  renameSync,
  rmSync,
  statSync,
} from 'node:fs';
import path from 'node:path';
import type { DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { ERROR_CODES, isStoreSyncError, StoreSyncError } from '../errors.js';
import type { Logger } from '../log.js';
// The SQL quoting alone: the table model behind model/index.js is not needed to open a warehouse (query).
import { literal } from '../model/sql.js';
import { duckdbApi } from './duckdb-api.js';
import { WRITER_CHECKPOINT_THRESHOLD, writerMemoryLimit } from './runtime-profile.js';

/**
 * Opening the DuckDB file with the one-writer rule (docs/warehouse.md, "Transactions and one writer").
 * DuckDB's own file lock does the enforcing across processes; this module turns its IO error into our
 * message, and refuses a second writer inside the same process (which the OS lock does not see).
 */

export interface OpenOptions {
  readOnly?: boolean;
  /** The file must exist already, for a writer too (rebuild: a new warehouse has no landing to rebuild). */
  existing?: boolean;
  /**
   * DuckDB memory_limit, e.g. '2GB'. Writers default to WRITER_MEMORY_LIMIT (runtime-profile.ts): batches are
   * bounded and DuckDB spills what does not fit, while DuckDB's own default, 80% of RAM, would let one ingest
   * fill the machine with cached blocks. Read-only opens keep DuckDB's default, for analysts' queries.
   */
  memoryLimit?: string;
  threads?: number;
  /**
   * A writer that finds the file locked by another process tries again until this many seconds have passed
   * (`--wait-for-lock`); 0 or none: it fails at once, naming the holder.
   */
  waitForLockSeconds?: number;
  /** How often a waiting writer says it still waits (default LOCK_WAIT_LOG_MS); tests shorten it. */
  lockWaitLogMs?: number;
  /** Where a waiting writer says so. */
  logger?: Logger;
  /**
   * The block size of the file if this open creates it (default NEW_WAREHOUSE_BLOCK_BYTES; an existing file
   * keeps its own): `ingest` creates with INGEST_WAREHOUSE_BLOCK_BYTES.
   */
  newFileBlockBytes?: number;
}

/** A waiting writer logs that it still waits this often. */
export const LOCK_WAIT_LOG_MS = 30_000;
/** A waiting writer tries the lock again this often: a run that finishes is followed within a second. */
const LOCK_RETRY_MS = 1_000;

/**
 * Rows per row group in the tables a writer appends to (DuckDB's default is 122,880). DuckDB writes a
 * transaction's appends to the file a full row group at a time and keeps the partial one in memory until the
 * commit, which then compresses and writes it: with the default, an ingest holds some 400 MB of partial row
 * groups across its tables and each 200,000-document commit takes seconds, during which nothing else can be
 * loaded. With 16,384 rows the commit takes a fraction of a second and DuckDB holds a seventh as much, for a
 * file a few per cent larger. A row group's size is an option of the attached database, not of the file:
 * files written this way open in any DuckDB, and rows appended by another tool use its own size.
 */
export const WRITER_ROW_GROUP_ROWS = 16_384;

/**
 * The storage format of a warehouse a writer creates (an existing file keeps its own). DuckDB otherwise
 * writes new files in the 0.10.2 format, which any DuckDB since then reads but which compresses with older,
 * costlier methods: DuckDB's share of loading the ingest benchmark's documents is about 14 % less in the 1.5
 * format (docs/performance.md, "Settings and the measurements behind them"). Such a file needs DuckDB 1.5 or
 * newer to read it (docs/querying.md); the Parquet export reads anywhere.
 */
export const NEW_WAREHOUSE_STORAGE_VERSION = 'v1.5.0';

/**
 * The block size of a warehouse a writer creates (an existing file keeps its own; DuckDB's default is 256
 * KB). DuckDB gives every column of a table's row group in progress a block of its own, and an ingest has
 * some 300 columns in progress across its tables: with 256 KB blocks that alone takes about 200 MB of
 * DuckDB's memory. With 128 KB blocks a large ingest runs as fast with DuckDB limited to 256 MB as with twice
 * that and the default blocks, and the large store's sync took 1.21 to 1.23 times the bare download against
 * 1.25 to 1.26 with 64 KB blocks (docs/performance.md, "Settings and the measurements behind them"). DuckDB
 * reads any block size since 1.2.
 */
export const NEW_WAREHOUSE_BLOCK_BYTES = 128 * 1024;

/**
 * The block size of a warehouse `ingest` creates. A streaming ingest runs DuckDB in 160 MB
 * (STREAMING_INGEST_MEMORY_LIMIT), where its 128 KB blocks in progress did not fit: DuckDB spilled them, each
 * to a temporary file of its own (its shared temporary file takes only 256 KB blocks), some 5,000 files
 * created and deleted per 200,000 documents, on the thread that appends. With 64 KB blocks nothing spills and
 * 200,000 documents load about a second sooner, 12.0 to 12.9 s against 13.2 to 13.5 (32 KB blocks: 13.7 to
 * 14.4 s, the file half as large again): docs/performance.md, "Issue 31: the worker never waits". A warehouse
 * is made by the command that first loads it, usually its largest load.
 */
export const INGEST_WAREHOUSE_BLOCK_BYTES = 64 * 1024;

/** The writer's name for the warehouse it attaches (its queries use the default database, this one). */
export const WAREHOUSE_ALIAS = 'warehouse';

const writersInProcess = new Set<string>();

/**
 * Creates the warehouse's missing folders, one level at a time: Node 20's recursive mkdir loops forever, at
 * full CPU, where a folder exists but refuses children with ENOENT (`/proc`, some network and FUSE mounts).
 * A new user's config points at `data/warehouse.duckdb` before `data/` exists; a writer makes it.
 */
function makeFolders(folder: string): void {
  const missing: string[] = [];
  for (let current = folder; !existsSync(current); current = path.dirname(current)) {
    missing.unshift(current);
    if (path.dirname(current) === current) break;
  }
  for (const level of missing) {
    try {
      mkdirSync(level);
    } catch (cause) {
      const { code } = cause as NodeJS.ErrnoException;
      if (code === 'EEXIST') continue;
      throw new StoreSyncError(
        ERROR_CODES.WAREHOUSE_PATH,
        `cannot create the warehouse folder ${folder}: creating ${level} failed (${code ?? (cause as Error).message}); create it yourself or choose another --warehouse path`,
        { cause, details: { field: 'warehouse' } },
      );
    }
  }
}

function checkFolder(file: string, readOnly: boolean, existing: boolean): void {
  const folder = path.dirname(file);
  // Readers (query, status, export) and rebuild never create anything: a mistyped path must say so.
  if ((readOnly || existing) && !existsSync(file))
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE_PATH,
      `no warehouse at ${file}: it does not exist yet; run a sync or an ingest first (or check --warehouse and the config's "warehouse")`,
      { details: { field: 'warehouse' } },
    );
  if (!readOnly && !existsSync(folder)) makeFolders(folder);
  if (!statSync(folder).isDirectory())
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE_PATH,
      `the warehouse folder ${folder} is a file, not a folder: choose another --warehouse path`,
      { details: { field: 'warehouse' } },
    );
  checkIsWarehouse(file);
  if (readOnly) return;
  try {
    accessSync(folder, constants.W_OK);
  } catch (cause) {
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE_PATH,
      `warehouse folder ${folder} is not writable by this user`,
      { cause, details: { field: 'warehouse' } },
    );
  }
}

/** What every DuckDB database file holds at bytes 8-11, after the header block's checksum. */
const DUCKDB_MAGIC = 'DUCK';

/**
 * An existing path must be a DuckDB file. DuckDB opens an existing JSON, CSV or Parquet file as an
 * in-memory database over it: a sync or an ingest into `--warehouse orders.json` reported success and
 * stored nothing, anywhere. An empty file is what a crash of DuckDB right after creating one leaves: a
 * writer replaces it (see createWarehouse).
 */
function checkIsWarehouse(file: string): void {
  if (!existsSync(file)) return;
  const refuse = (what: string) =>
    new StoreSyncError(
      ERROR_CODES.WAREHOUSE_PATH,
      `${file} is ${what}, not a DuckDB warehouse: choose another --warehouse path (a new file is created there)`,
      { details: { field: 'warehouse' } },
    );
  const stats = statSync(file);
  if (stats.isDirectory()) throw refuse('a folder');
  if (!stats.isFile()) throw refuse('not a regular file');
  if (stats.size === 0) return;
  const head = Buffer.alloc(12);
  const handle = openSync(file, 'r');
  try {
    readSync(handle, head, 0, head.length, 0);
  } finally {
    closeSync(handle);
  }
  if (head.toString('latin1', 8, 12) !== DUCKDB_MAGIC) throw refuse('another kind of file');
}

/** The pid DuckDB names when another process holds a file's lock; null when the error is not about a lock. */
export function lockHolder(error: unknown): string | null {
  const message = error instanceof Error ? error.message : String(error);
  if (!/Conflicting lock|Could not set lock/i.test(message)) return null;
  return /PID (\d+)/i.exec(message)?.[1] ?? 'unknown';
}

/**
 * The POSIX (fcntl) locks held on `file`, by process, from Linux's /proc/locks: DuckDB locks a database file
 * this way, readers sharing a read lock and a writer taking a write lock. Empty where that cannot be told
 * (not Linux, or the file is gone). Reading /proc/locks does not touch the file, so it never drops a lock of
 * this process (closing any descriptor of the file would).
 */
export function fileLocks(file: string): { pid: number; kind: 'read' | 'write' }[] {
  try {
    const inode = String(statSync(file).ino);
    return (
      readFileSync('/proc/locks', 'utf8')
        .split('\n')
        .map((line) => line.trim().split(/\s+/))
        // "1: POSIX  ADVISORY  READ 17873 fe:00:5316696 0 EOF"; a waiting request has "->" after the number,
        // which shifts its fields, so it is not taken for a held lock.
        .filter(([, type, , , , device]) => type === 'POSIX' && device?.split(':')[2] === inode)
        .map(([, , , kind, pid]) => ({ pid: Number(pid), kind: kind === 'READ' ? 'read' : 'write' }))
    );
  } catch {
    return [];
  }
}

/**
 * Whether process `pid` holds its lock on the file to read or to write; null where that cannot be told. A
 * writer stopped by a reader (a long query, a BI tool) must not be told someone writes.
 */
function lockKind(file: string, pid: string): 'read' | 'write' | null {
  return fileLocks(file).find((lock) => lock.pid === Number(pid))?.kind ?? null;
}

/**
 * The writer's ATTACH of the warehouse file, with its row group size (see WRITER_ROW_GROUP_ROWS), and the
 * block size of a file it creates (`createdBlockBytes`).
 */
function attachSql(
  absolute: string,
  alias = WAREHOUSE_ALIAS,
  createdBlockBytes: number | null = null,
): string {
  // An existing file has its block size, and DuckDB refuses to attach it with another.
  const block = createdBlockBytes === null ? '' : `, BLOCK_SIZE ${createdBlockBytes}`;
  return `ATTACH ${literal(absolute)} AS ${alias} (ROW_GROUP_SIZE ${WRITER_ROW_GROUP_ROWS}${block})`;
}

/**
 * Makes a missing warehouse file, complete, before the writer attaches it. DuckDB creates a file where it is
 * attached and locks it only then: a second writer starting at that moment found an empty file and failed
 * ("not a valid DuckDB database file"), while the first failed on the second's lock, and the empty file
 * stopped every later run. So the file is made under a name of this process's own and linked into place:
 * a link never replaces a file, so of two writers creating at once one file wins, the other's is dropped, and
 * both attach the same complete file, where DuckDB's lock decides.
 */
async function createWarehouse(
  instance: DuckDBInstance,
  absolute: string,
  blockBytes: number,
): Promise<void> {
  setAsideEmptyFile(absolute);
  if (existsSync(absolute)) return;
  const draft = `${absolute}.creating-${process.pid}`;
  const dropDraft = () => {
    rmSync(draft, { force: true });
    rmSync(`${draft}.wal`, { force: true });
  };
  dropDraft();
  const connection = await instance.connect();
  try {
    await connection.run(attachSql(draft, 'creating', blockBytes));
    // Detaching writes the new file's header and closes it: what is linked is a whole database.
    await connection.run('DETACH creating');
    linkSync(draft, absolute);
  } catch (cause) {
    const { code } = cause as NodeJS.ErrnoException;
    // Another writer's file is in place already: this one is not needed.
    if (code === 'EEXIST') return;
    // A file system without hard links (some network and FUSE mounts): a rename is the nearest, and it
    // replaces only a file created since the check above.
    if (code === 'EPERM' || code === 'ENOTSUP' || code === 'ENOSYS') {
      if (!existsSync(absolute)) renameSync(draft, absolute);
      return;
    }
    throw cause;
  } finally {
    connection.closeSync();
    dropDraft();
  }
}

/**
 * Moves an empty file at the warehouse path out of the way (see checkIsWarehouse). It is renamed first, then
 * looked at, so that a warehouse another writer linked there in between is put back rather than deleted.
 */
function setAsideEmptyFile(absolute: string): void {
  if (!existsSync(absolute) || statSync(absolute).size > 0) return;
  const aside = `${absolute}.empty-${process.pid}`;
  renameSync(absolute, aside);
  try {
    if (statSync(aside).size > 0) linkSync(aside, absolute);
  } finally {
    rmSync(aside, { force: true });
  }
}

/** Why the warehouse could not be opened (or attached again), in our words when another process holds it. */
function openFailure(absolute: string, readOnly: boolean, cause: unknown): StoreSyncError {
  const pid = lockHolder(cause);
  if (pid !== null && readOnly)
    return new StoreSyncError(
      ERROR_CODES.WAREHOUSE_LOCKED,
      `cannot read ${absolute} while another store-sync process (pid ${pid}) is writing to it: DuckDB admits readers only when no process holds the file for writing; retry when that run finishes`,
      { cause, details: { pid: Number(pid) } },
    );
  if (pid !== null && lockKind(absolute, pid) === 'read')
    return new StoreSyncError(
      ERROR_CODES.WAREHOUSE_LOCKED,
      `another process (pid ${pid}) has ${absolute} open for reading (a store-sync query, status or export, or a DuckDB client): DuckDB lets a process write only when no other has the file open; run again once it has finished`,
      { cause, details: { pid: Number(pid) } },
    );
  if (pid !== null)
    return new StoreSyncError(
      ERROR_CODES.WAREHOUSE_LOCKED,
      `another store-sync process (pid ${pid}) is writing to ${absolute}; wait for it to finish (or stop it) and run again`,
      { cause, details: { pid: Number(pid) } },
    );
  return new StoreSyncError(
    ERROR_CODES.WAREHOUSE,
    `cannot open warehouse ${absolute}: ${cause instanceof Error ? cause.message : String(cause)}`,
    { cause },
  );
}

/**
 * Detaches the writer's warehouse and attaches it again (see Warehouse.reattach), on a connection outside
 * any transaction. The file is unlocked in between; a process that takes it then makes the attach fail,
 * with the message a writer gets at open, and leaves nothing attached.
 */
export async function reattachWarehouse(connection: DuckDBConnection, absolute: string): Promise<void> {
  // The in-memory database the writer's instance was created as; the warehouse cannot be detached while
  // it is the connection's default.
  await connection.run('USE memory');
  await connection.run(`DETACH ${WAREHOUSE_ALIAS}`);
  // ATTACH would make a new, empty warehouse where the file was.
  if (!existsSync(absolute))
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE,
      `warehouse ${absolute} was moved or deleted while this run wrote to it: what was committed before is in the file wherever it went; put it back and run again`,
    );
  try {
    await connection.run(attachSql(absolute));
  } catch (cause) {
    throw openFailure(absolute, false, cause);
  }
  await connection.run(`USE ${WAREHOUSE_ALIAS}`);
}

/**
 * Opens the warehouse (see openOnce); a writer given `waitForLockSeconds` and meeting another process's lock
 * tries again every second until the holder lets go or the time is up, saying every `lockWaitLogMs` that it
 * waits. The last refusal is the error, with how long it waited.
 */
export async function openInstance(
  file: string,
  options: OpenOptions,
): Promise<{ instance: DuckDBInstance; release: () => void }> {
  const waitMs = options.readOnly ? 0 : (options.waitForLockSeconds ?? 0) * 1000;
  const logEvery = options.lockWaitLogMs ?? LOCK_WAIT_LOG_MS;
  const started = Date.now();
  let nextLog = started;
  for (;;) {
    try {
      return await openOnce(file, options);
    } catch (error) {
      const waited = Date.now() - started;
      if (!isStoreSyncError(error, ERROR_CODES.WAREHOUSE_LOCKED) || waitMs <= 0) throw error;
      if (waited >= waitMs)
        throw new StoreSyncError(
          ERROR_CODES.WAREHOUSE_LOCKED,
          `${error.message} (waited ${Math.round(waited / 1000)} s of --wait-for-lock ${options.waitForLockSeconds})`,
          { cause: error, details: error.details },
        );
      if (Date.now() >= nextLog) {
        options.logger?.info('warehouse.waiting_for_lock', {
          waitedSeconds: Math.round(waited / 1000),
          waitsUpTo: options.waitForLockSeconds,
          message: error.message,
        });
        nextLog += logEvery;
      }
      await new Promise((resolve) => setTimeout(resolve, Math.min(LOCK_RETRY_MS, waitMs - waited)));
    }
  }
}

async function openOnce(
  file: string,
  options: OpenOptions,
): Promise<{ instance: DuckDBInstance; release: () => void }> {
  const absolute = path.resolve(file);
  const readOnly = options.readOnly ?? false;
  checkFolder(absolute, readOnly, options.existing ?? false);
  if (!readOnly && writersInProcess.has(absolute))
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE_LOCKED,
      `another store-sync writer (pid ${process.pid}, this process) is writing to ${absolute}; close it first`,
      { details: { pid: process.pid } },
    );
  const config: Record<string, string> = readOnly ? { access_mode: 'READ_ONLY' } : {};
  const memoryLimit = readOnly ? options.memoryLimit : writerMemoryLimit(options);
  if (memoryLimit) config.memory_limit = memoryLimit;
  if (!readOnly) {
    config.checkpoint_threshold = WRITER_CHECKPOINT_THRESHOLD;
    // Each full row group is written as soon as it fills, not five at a time: DuckDB holds one, not five.
    config.write_buffer_row_group_count = '1';
    config.storage_compatibility_version = NEW_WAREHOUSE_STORAGE_VERSION;
    // Spilled data goes beside the warehouse, as DuckDB does for a database it opens itself.
    config.temp_directory = `${absolute}.tmp`;
  }
  if (options.threads) config.threads = String(options.threads);
  let instance: DuckDBInstance | undefined;
  try {
    if (readOnly) instance = await duckdbApi.DuckDBInstance.create(absolute, config);
    else {
      // A writer attaches the file to an in-memory instance, to set its row group size (see above).
      instance = await duckdbApi.DuckDBInstance.create(':memory:', config);
      await createWarehouse(instance, absolute, options.newFileBlockBytes ?? NEW_WAREHOUSE_BLOCK_BYTES);
      const connection = await instance.connect();
      try {
        await connection.run(attachSql(absolute));
      } finally {
        connection.closeSync();
      }
    }
  } catch (cause) {
    instance?.closeSync();
    throw openFailure(absolute, readOnly, cause);
  }
  if (!readOnly) writersInProcess.add(absolute);
  return {
    instance,
    release: () => {
      if (!readOnly) writersInProcess.delete(absolute);
    },
  };
}

/** A connection to the warehouse of an instance from openInstance (a writer's is the attached database). */
export async function connectWarehouse(
  instance: DuckDBInstance,
  readOnly: boolean,
): Promise<DuckDBConnection> {
  const connection = await instance.connect();
  if (!readOnly) await connection.run(`USE ${WAREHOUSE_ALIAS}`);
  return connection;
}
