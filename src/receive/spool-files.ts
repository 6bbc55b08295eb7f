import { randomBytes } from 'node:crypto';
import { open, readdir, readFile, rename, stat, truncate, unlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { Logger } from '../log.js';
import { processAlive } from '../processes.js';

/**
 * The spool's files. Events are appended to one open file, `events-<opened at>-<seq>-<rand>.ndjson.open`,
 * which ingest never reads (the name does not end in .ndjson); once closed it is renamed to the same name
 * without `.open`, and from then on it never changes: a drain reads it whole. Names sort in the order the
 * files were opened, and a file is opened for its first event, so a name also dates its oldest event.
 */

export const OPEN_SUFFIX = '.open';
export const ARCHIVE_DIR = 'archive';
export const LOCK_FILE = 'receiver.lock';
const CLOSED_FILE = /^events-(\d{8}T\d{9}Z)-\d+-[0-9a-f]+\.ndjson$/;

let sequence = 0;

/** A new file's closed name (the open file adds OPEN_SUFFIX). */
export function spoolFileName(nowMs: number): string {
  const stamp = new Date(nowMs).toISOString().replace(/[-:.]/g, '');
  sequence = (sequence + 1) % 1_000_000;
  return `events-${stamp}-${String(sequence).padStart(6, '0')}-${randomBytes(3).toString('hex')}.ndjson`;
}

/** When a spool file was opened, from its name (null for a name that is not a spool file's). */
export function openedAt(file: string): number | null {
  const name = path.basename(file).replace(OPEN_SUFFIX, '');
  const m = CLOSED_FILE.exec(name);
  if (!m) return null;
  const s = m[1]!;
  return Date.parse(
    `${s.slice(0, 4)}-${s.slice(4, 6)}-${s.slice(6, 8)}T${s.slice(9, 11)}:${s.slice(11, 13)}:${s.slice(13, 15)}.${s.slice(15, 18)}Z`,
  );
}

async function names(dir: string): Promise<string[]> {
  try {
    return (await readdir(dir)).sort();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw error;
  }
}

/** Closed files of the spool (what a drain reads), oldest first, as absolute paths. */
export async function closedFiles(dir: string): Promise<string[]> {
  return (await names(dir)).filter((n) => CLOSED_FILE.test(n)).map((n) => path.join(dir, n));
}

/** Open files: one while a receiver runs, or what a killed one left. */
export async function openFiles(dir: string): Promise<string[]> {
  return (await names(dir))
    .filter((n) => n.endsWith(OPEN_SUFFIX) && CLOSED_FILE.test(n.slice(0, -OPEN_SUFFIX.length)))
    .map((n) => path.join(dir, n));
}

/** Archived files (afterDrain: archive), oldest first. */
export async function archivedFiles(dir: string): Promise<string[]> {
  return closedFiles(path.join(dir, ARCHIVE_DIR));
}

/** Makes a rename, creation or removal in `dir` durable: without it a crash can undo them. */
export async function syncDir(dir: string): Promise<void> {
  const handle = await open(dir, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/** The key an envelope is deduplicated by: its `event_id` (a string or a number), or null without one. */
export function eventIdOf(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const id = (value as { event_id?: unknown }).event_id;
  if (typeof id === 'string' && id !== '') return `s:${id}`;
  if (typeof id === 'number' && Number.isFinite(id)) return `n:${id}`;
  return null;
}

/**
 * The length of the longest prefix of `bytes` made of whole lines that each hold a JSON value: what a
 * spool file held once every acknowledged event was written. A crash can leave a line cut short, or (after
 * a power loss) bytes never written, only after the last flush: nothing after them was acknowledged.
 */
export function validPrefix(bytes: Buffer): { length: number; lines: number } {
  let start = 0;
  let lines = 0;
  while (start < bytes.length) {
    const end = bytes.indexOf(0x0a, start);
    if (end < 0) break;
    try {
      JSON.parse(bytes.toString('utf8', start, end));
    } catch {
      break;
    }
    start = end + 1;
    lines++;
  }
  return { length: start, lines };
}

/**
 * A file a killed receiver left open: cut back to its valid prefix (a torn last line, never acknowledged,
 * is dropped), then closed under its final name, or removed when nothing is left. Returns the closed path.
 */
export async function recoverOpenFile(file: string, logger: Logger): Promise<string | null> {
  const bytes = await readFile(file);
  const { length, lines } = validPrefix(bytes);
  if (length < bytes.length) {
    await truncate(file, length);
    const handle = await open(file, 'r+');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    logger.warn('receive.torn_tail_dropped', {
      file,
      bytes: bytes.length - length,
      message:
        'the end of a spool file left by a stopped receiver was not a whole event; it was never acknowledged',
    });
  }
  const dir = path.dirname(file);
  if (lines === 0) {
    await unlink(file);
    await syncDir(dir);
    return null;
  }
  const closed = file.slice(0, -OPEN_SUFFIX.length);
  await rename(file, closed);
  await syncDir(dir);
  logger.info('receive.recovered', { file: closed, events: lines });
  return closed;
}

/**
 * The event ids of the newest `max` events in these files (newest file last in `files`), oldest first: a
 * restarted receiver recognises redeliveries of what it spooled before. A file removed meanwhile (a drain
 * deleted it) is skipped.
 */
export async function recentEventIds(files: string[], max: number): Promise<string[]> {
  const found: string[][] = [];
  let count = 0;
  for (let i = files.length - 1; i >= 0 && count < max; i--) {
    const bytes = await readFile(files[i]!).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return null;
      throw error;
    });
    if (!bytes) continue;
    const ids: string[] = [];
    for (const line of bytes.toString('utf8').split('\n')) {
      if (!line) continue;
      try {
        const id = eventIdOf(JSON.parse(line));
        if (id !== null) ids.push(id);
      } catch {
        // A closed file holds whole lines only; a hand-edited one is ingest's to judge.
      }
    }
    found.unshift(ids);
    count += ids.length;
  }
  return found.flat().slice(-max);
}

/**
 * Makes this process the spool's only receiver: two appending to one spool would recover each other's open
 * file. A lock left by a receiver that was killed (its process is gone) is taken over.
 */
export async function lockSpool(dir: string): Promise<() => Promise<void>> {
  const file = path.join(dir, LOCK_FILE);
  const taken = () =>
    new StoreSyncError(
      ERROR_CODES.USAGE,
      `another store-sync receive (pid ${process.pid}) is writing the spool ${dir}; one receiver per spool folder.`,
    );
  if (held.has(file)) throw taken();
  for (let attempt = 0; ; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      held.add(file);
      return async () => {
        held.delete(file);
        await unlink(file).catch(() => undefined);
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw error;
    }
    const pid = Number.parseInt(await readFile(file, 'utf8').catch(() => ''), 10);
    // In a container a restarted receiver can get its predecessor's pid: that one is not a rival.
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && processAlive(pid))
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `another store-sync receive (pid ${pid}) is writing the spool ${dir}; one receiver per spool folder.`,
      );
    await unlink(file).catch(() => undefined);
  }
}

/** Lock files this process holds (its own pid in a lock file is not enough: it may be a predecessor's). */
const held = new Set<string>();

/** Bytes and newline count of a file (events in a closed spool file), reading it a megabyte at a time. */
export async function countLines(file: string): Promise<{ bytes: number; lines: number } | null> {
  let handle: Awaited<ReturnType<typeof open>>;
  try {
    handle = await open(file, 'r');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
  try {
    const buffer = Buffer.allocUnsafe(1 << 20);
    let bytes = 0;
    let lines = 0;
    for (;;) {
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, bytes);
      if (bytesRead === 0) break;
      for (let i = buffer.indexOf(0x0a); i >= 0 && i < bytesRead; i = buffer.indexOf(0x0a, i + 1)) lines++;
      bytes += bytesRead;
    }
    return { bytes, lines };
  } finally {
    await handle.close();
  }
}

export async function exists(file: string): Promise<boolean> {
  return stat(file).then(
    () => true,
    () => false,
  );
}
