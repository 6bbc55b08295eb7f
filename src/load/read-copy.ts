import { constants, existsSync, promises as fs, statSync } from 'node:fs';
import path from 'node:path';
import type { DuckDBConnection } from '@duckdb/node-api';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { Logger } from '../log.js';
import { literal } from '../model/sql.js';

/**
 * The published read copy (docs/operations.md, "Readers and the nightly sync"). DuckDB lets no other process
 * read a file while one writes it, so after each run a writer publishes a snapshot of the warehouse beside it,
 * which readers (analysts' DuckDB clients, BI tools, `query`, `status` and `export` while a run goes on) open
 * instead. The snapshot is made while the writer still holds the warehouse's lock, so it is of committed
 * data only, and it is written to a temporary name in the same folder and renamed over the old copy: a reader
 * opens either the old copy or the new one, never a half, and a reader that has the old one open keeps
 * reading it (on Linux a rename does not disturb an open file). The writer never waits for readers.
 */

export interface ReadCopySettings {
  enabled: boolean;
  /** Absolute; null: beside the warehouse (readCopyPath). */
  path: string | null;
  /** A DuckDB storage version the copy is written in (e.g. 'v1.0.0'), for older clients; null: the warehouse's own. */
  storageCompatibility: string | null;
}

export const DEFAULT_READ_COPY: ReadCopySettings = { enabled: true, path: null, storageCompatibility: null };

/** Where the read copy of `warehouse` is: `settings.path`, else `data/warehouse.duckdb` → `data/warehouse.read.duckdb`. */
export function readCopyPath(
  warehouse: string,
  settings: Pick<ReadCopySettings, 'path'> | undefined,
): string {
  if (settings?.path) return path.resolve(settings.path);
  const absolute = path.resolve(warehouse);
  return absolute.endsWith('.duckdb')
    ? `${absolute.slice(0, -'.duckdb'.length)}.read.duckdb`
    : `${absolute}.read.duckdb`;
}

/**
 * The name a copy is written under before it is renamed into place. One name, not one per process: only the
 * writer holding the warehouse's lock publishes, and a copy left half-written by a killed writer is simply
 * overwritten by the next one.
 */
export const publishingPath = (copy: string) => `${copy}.publishing`;

export interface PublishedCopy {
  path: string;
  method: 'file-copy' | 'copy-from-database';
  bytes: number;
  seconds: number;
}

/**
 * Publishes the read copy of the warehouse attached as `alias` on `connection`, which must hold no open
 * transaction and no appender (a CHECKPOINT needs that). Throws a StoreSyncError naming the copy's path.
 *
 * Two methods, chosen by what the copy must be (docs/performance.md, "Issue 28: publishing the read copy"):
 * - the warehouse's own format: CHECKPOINT, then copy the file (a reflink where the file system has them,
 *   else a byte copy). After a checkpoint the file holds every commit and the write-ahead log is empty, and
 *   nothing writes it until this returns, as the caller runs this alone on the connection.
 * - an older storage format (`storageCompatibility`): DuckDB writes the copy itself, ATTACHing the new file
 *   with that STORAGE_VERSION and running COPY FROM DATABASE into it; a file copy would keep the newer format.
 */
export async function publishReadCopy(
  connection: DuckDBConnection,
  warehouse: string,
  alias: string,
  settings: ReadCopySettings,
): Promise<PublishedCopy> {
  const started = performance.now();
  const copy = readCopyPath(warehouse, settings);
  const temporary = publishingPath(copy);
  const failed = (what: string, cause: unknown) =>
    new StoreSyncError(
      ERROR_CODES.WAREHOUSE,
      `publishing the read copy ${copy} failed while ${what}: ${cause instanceof Error ? cause.message : String(cause)} (the previous copy, if any, is unchanged; set readCopy.path to a writable place or readCopy.enabled to false)`,
      { cause, details: { field: 'readCopy.path' } },
    );
  if (path.resolve(copy) === path.resolve(warehouse))
    throw new StoreSyncError(
      ERROR_CODES.CONFIG_INVALID,
      `readCopy.path is the warehouse itself (${copy}): expected another file, e.g. the default beside it`,
      { details: { field: 'readCopy.path' } },
    );
  await removeIfPresent(temporary);
  await removeIfPresent(`${temporary}.wal`);
  let method: PublishedCopy['method'];
  if (settings.storageCompatibility === null) {
    method = 'file-copy';
    try {
      await connection.run('CHECKPOINT');
    } catch (cause) {
      throw failed('checkpointing the warehouse', cause);
    }
    // A write-ahead log left after the checkpoint would hold commits the file lacks: a copy of the file
    // alone would miss them, so DuckDB copies the database instead.
    const wal = `${warehouse}.wal`;
    if (existsSync(wal) && statSync(wal).size > 0) method = 'copy-from-database';
  } else method = 'copy-from-database';
  try {
    if (method === 'file-copy') {
      // COPYFILE_FICLONE: a reflink (btrfs, XFS, APFS) shares the blocks and takes no time; elsewhere a copy.
      await fs.copyFile(warehouse, temporary, constants.COPYFILE_FICLONE);
    } else {
      const version = settings.storageCompatibility
        ? ` (STORAGE_VERSION ${literal(settings.storageCompatibility)})`
        : '';
      await connection.run(`ATTACH ${literal(temporary)} AS store_sync_read_copy${version}`);
      try {
        await connection.run(`COPY FROM DATABASE ${alias} TO store_sync_read_copy`);
      } finally {
        await connection.run('DETACH store_sync_read_copy');
      }
    }
    // On disk before the rename, so a crash of the machine cannot leave the new name over an empty file.
    const handle = await fs.open(temporary, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch (cause) {
    await removeIfPresent(temporary);
    throw failed(method === 'file-copy' ? `copying ${warehouse}` : 'copying the database', cause);
  }
  try {
    // A write-ahead log beside the copy is what a client that opened the copy for writing and crashed left:
    // DuckDB would replay it onto the new copy. The copy is for reading; what was written to it goes.
    await removeIfPresent(`${copy}.wal`);
    await fs.rename(temporary, copy);
  } catch (cause) {
    await removeIfPresent(temporary);
    throw failed(`renaming ${temporary} into place`, cause);
  }
  return {
    path: copy,
    method,
    bytes: statSync(copy).size,
    seconds: (performance.now() - started) / 1000,
  };
}

async function removeIfPresent(file: string): Promise<void> {
  await fs.rm(file, { force: true });
}

/** Logs a publish, or its failure, which leaves the run's outcome as it was (its data is committed). */
export function logPublish(logger: Logger, result: PublishedCopy | StoreSyncError): void {
  if (result instanceof StoreSyncError)
    logger.error('read_copy.failed', { code: result.code, message: result.message });
  else
    logger.info('read_copy.published', {
      path: result.path,
      method: result.method,
      bytes: result.bytes,
      seconds: Number(result.seconds.toFixed(3)),
    });
}

/** When the read copy at `file` was published (its file's modification time); null when there is none. */
export function readCopyPublishedAt(file: string): Date | null {
  try {
    return statSync(file).mtime;
  } catch {
    return null;
  }
}

/** "2 min ago", "5 h ago": the age of a copy as a person reads it. */
export function ageText(publishedAt: Date, now: number = Date.now()): string {
  const seconds = Math.max(0, Math.round((now - publishedAt.getTime()) / 1000));
  if (seconds < 90) return `${seconds} s ago`;
  const minutes = Math.round(seconds / 60);
  if (minutes < 90) return `${minutes} min ago`;
  const hours = Math.round(minutes / 60);
  if (hours < 48) return `${hours} h ago`;
  return `${Math.round(hours / 24)} days ago`;
}
