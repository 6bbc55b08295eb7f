import { access, constants, type FileHandle, mkdir, open, rename, unlink } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import {
  ARCHIVE_DIR,
  archivedFiles,
  closedFiles,
  lockSpool,
  OPEN_SUFFIX,
  openFiles,
  recentEventIds,
  recoverOpenFile,
  spoolFileName,
  syncDir,
} from './spool-files.js';

/**
 * One store's spool: appends events (one per line) to the open file and resolves each append only once its
 * bytes are on disk (fdatasync). Group commit: the appends that arrive while a flush runs are written and
 * synced together by the next one, so concurrent requests share one disk flush instead of queueing for one
 * each. Writes, syncs, rotation and closing run one at a time, in order.
 */

export interface SpoolOptions {
  dir: string;
  rotateBytes: number;
  rotateMs: number;
  logger: Logger;
  /** false: one write and sync per event (the benchmark's comparison). Default true. */
  groupCommit?: boolean;
  /** How many of the newest event ids to read back from the spool's files on start. */
  recentIds?: number;
  now?: () => number;
}

interface Pending {
  line: Buffer;
  resolve: () => void;
  reject: (error: unknown) => void;
}

interface OpenFile {
  handle: FileHandle;
  /** The open name; the closed one drops OPEN_SUFFIX. */
  path: string;
  openedAt: number;
  /** Bytes written and synced: what the file must hold (anything after it is a failed write's rest). */
  size: number;
  /** The file's bytes up to here are written and synced (zeros after `size`): see `extend`. */
  allocated: number;
  extending: Promise<void> | null;
}

/**
 * Zeros written ahead of the events, so that appending an event overwrites blocks the file already has: a
 * disk sync then flushes data alone, where growing the file also commits the file system's journal (about
 * half the time per sync on ext4). The zeros are cut off when the file is closed, and after a
 * crash (they are no whole line).
 */
const PREALLOCATE_BYTES = 2 * 1024 * 1024;
const ZEROS = Buffer.alloc(PREALLOCATE_BYTES);

export class Spool {
  private queue: Pending[] = [];
  private flushQueued = false;
  private writing = 0;
  private tail: Promise<unknown> = Promise.resolve();
  private file: OpenFile | null = null;
  /** A write or sync failed and the file may hold its partial bytes: cut back to `size` before the next. */
  private damaged = false;
  private closed = false;
  private timer: NodeJS.Timeout | null = null;
  /** The error of the last failed flush, until a flush succeeds. */
  lastError: Error | null = null;
  /** Since start: successful flushes (one write and disk sync each), the events in them, their time. */
  readonly stats = { flushes: 0, events: 0, flushMs: 0 };
  readonly now: () => number;

  private constructor(
    private readonly options: SpoolOptions,
    private readonly unlock: () => Promise<void>,
    /** Ids of the newest events already in the spool, oldest first. */
    readonly recentIds: string[],
  ) {
    this.now = options.now ?? Date.now;
  }

  /**
   * Takes the spool folder (creating it), closes whatever a killed receiver left open (dropping a torn last
   * line), and reads back the newest event ids.
   */
  static async open(options: SpoolOptions): Promise<Spool> {
    await mkdir(options.dir, { recursive: true });
    const unlock = await lockSpool(options.dir);
    try {
      for (const file of await openFiles(options.dir)) await recoverOpenFile(file, options.logger);
      const files = [...(await archivedFiles(options.dir)), ...(await closedFiles(options.dir))].sort(
        (a, b) => (path.basename(a) < path.basename(b) ? -1 : 1),
      );
      const ids = options.recentIds ? await recentEventIds(files, options.recentIds) : [];
      const spool = new Spool(options, unlock, ids);
      spool.startTimer();
      return spool;
    } catch (error) {
      await unlock();
      throw error;
    }
  }

  get dir(): string {
    return this.options.dir;
  }

  /** Events waiting to be written, or being written and synced. */
  get depth(): number {
    return this.queue.length + this.writing;
  }

  /** Resolves once `line` (one event, ending in a newline) is written and synced. */
  append(line: Buffer): Promise<void> {
    if (this.closed) return Promise.reject(new Error('the spool is closed'));
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ line, resolve, reject });
      if (!this.flushQueued) {
        this.flushQueued = true;
        void this.exclusive(() => this.flush());
      }
    });
  }

  /** Whether an event could be spooled now: the folder is writable and the last flush did not fail. */
  async writable(): Promise<boolean> {
    if (this.closed || this.lastError) return false;
    return access(this.options.dir, constants.W_OK).then(
      () => true,
      () => false,
    );
  }

  /**
   * Writes what is queued, syncs, then closes the open file under its final name: a drain can take every
   * event. Further appends are refused.
   */
  async close(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    try {
      await this.exclusive(async () => {
        while (this.queue.length) await this.flush();
        this.closed = true;
        await this.closeFile();
      });
    } finally {
      await this.unlock();
    }
  }

  /** Runs file work one step at a time, in order. */
  private exclusive<T>(step: () => Promise<T>): Promise<T> {
    const run = this.tail.then(step, step);
    this.tail = run.catch(() => undefined);
    return run;
  }

  private async flush(): Promise<void> {
    this.flushQueued = false;
    const batch = this.options.groupCommit === false ? this.queue.splice(0, 1) : this.queue.splice(0);
    // Per-event mode: the rest waits for its own flush.
    if (this.queue.length && !this.flushQueued) {
      this.flushQueued = true;
      void this.exclusive(() => this.flush());
    }
    if (batch.length === 0) return;
    this.writing = batch.length;
    const started = performance.now();
    try {
      await this.write(batch.length === 1 ? batch[0]!.line : Buffer.concat(batch.map((p) => p.line)));
      this.lastError = null;
      this.stats.flushes++;
      this.stats.events += batch.length;
      this.stats.flushMs += performance.now() - started;
      for (const p of batch) p.resolve();
    } catch (error) {
      this.lastError = error as Error;
      this.options.logger.error('receive.spool_write_failed', {
        dir: this.options.dir,
        events: batch.length,
        message: (error as Error).message,
      });
      for (const p of batch) p.reject(error);
    } finally {
      this.writing = 0;
    }
  }

  private async write(bytes: Buffer): Promise<void> {
    const file = this.file ?? (await this.openFile());
    if (this.damaged) await this.repair(file);
    // Zeros being written where this batch goes would land over it: wait for them.
    if (file.extending && file.size + bytes.length > file.allocated) await file.extending;
    try {
      let done = 0;
      while (done < bytes.length) {
        const { bytesWritten } = await file.handle.write(bytes, done, bytes.length - done, file.size + done);
        done += bytesWritten;
      }
      await file.handle.datasync();
    } catch (error) {
      // A full disk, a quota, a file-size limit, an I/O error: part of the batch may be in the file. None of
      // it is acknowledged, so it is cut away (now, or before the next write if that fails too).
      this.damaged = true;
      await this.repair(file).catch(() => undefined);
      throw error;
    }
    file.size += bytes.length;
    file.allocated = Math.max(file.allocated, file.size);
    // The batch is on disk and is acknowledged whatever becomes of the rename.
    if (file.size >= this.options.rotateBytes)
      await this.closeFile().catch((error: Error) => this.closeFailed(error));
    else this.extend(file);
  }

  /**
   * Writes and syncs zeros past the allocated end, beside the flushes (they write below it), once less than
   * half a chunk is left and while the file is meant to grow.
   */
  private extend(file: OpenFile): void {
    if (file.extending || this.damaged || file.allocated - file.size > PREALLOCATE_BYTES / 2) return;
    if (file.allocated >= this.options.rotateBytes + PREALLOCATE_BYTES) return;
    const from = file.allocated;
    file.extending = (async () => {
      // A short write (a file-size limit, say) allocates what it wrote.
      const { bytesWritten } = await file.handle.write(ZEROS, 0, PREALLOCATE_BYTES, from);
      await file.handle.datasync();
      if (this.file === file && !this.damaged) file.allocated = Math.max(file.allocated, from + bytesWritten);
    })()
      .catch((error: Error) => {
        // Only an optimisation: appends go on without it (a full disk is met by the next flush).
        this.options.logger.debug('receive.spool_preallocate_failed', { message: error.message });
      })
      .finally(() => {
        file.extending = null;
      });
  }

  private closeFailed(error: Error): void {
    this.options.logger.error('receive.spool_rotate_failed', {
      dir: this.options.dir,
      message: `${error.message}; the file stays open-named until the receiver restarts and closes it`,
    });
  }

  /** Cuts the file back to its synced events: a failed write's rest, and the zeros ahead, go. */
  private async repair(file: OpenFile): Promise<void> {
    await file.extending;
    await file.handle.truncate(file.size);
    await file.handle.datasync();
    file.allocated = file.size;
    this.damaged = false;
  }

  private async openFile(): Promise<OpenFile> {
    const openedAt = this.now();
    const name = path.join(this.options.dir, `${spoolFileName(openedAt)}${OPEN_SUFFIX}`);
    const handle = await open(name, 'wx');
    try {
      // The file's name must survive a crash as its synced bytes do.
      await syncDir(this.options.dir);
    } catch (error) {
      await handle.close();
      await unlink(name).catch(() => undefined);
      throw error;
    }
    this.file = { handle, path: name, openedAt, size: 0, allocated: 0, extending: null };
    this.damaged = false;
    // The first batch is appended; the zeros follow it (written at the same place, it would wait for them).
    return this.file;
  }

  /**
   * The open file cut to its events and renamed to its final name (drainable), or removed when it holds
   * none. When it cannot be cut, it is left open-named: the next start cuts and closes it.
   */
  private async closeFile(): Promise<void> {
    const file = this.file;
    if (!file) return;
    this.file = null;
    try {
      await this.repair(file);
    } finally {
      this.damaged = false;
      await file.handle.close();
    }
    if (file.size === 0) {
      await unlink(file.path).catch(() => undefined);
      return;
    }
    const closed = file.path.slice(0, -OPEN_SUFFIX.length);
    await rename(file.path, closed);
    await syncDir(this.options.dir);
    this.options.logger.debug('receive.spool_file_closed', { file: closed, bytes: file.size });
  }

  /** Closes the open file once it is rotateMs old, also when no event comes to trigger it. */
  private startTimer(): void {
    const every = Math.max(50, Math.min(1000, this.options.rotateMs / 4));
    this.timer = setInterval(() => {
      const file = this.file;
      if (!file || this.now() - file.openedAt < this.options.rotateMs) return;
      void this.exclusive(async () => {
        if (this.file === file) await this.closeFile();
      }).catch((error: Error) => this.closeFailed(error));
    }, every);
    this.timer.unref();
  }
}

/** Where afterDrain: archive puts drained files. */
export const archiveDir = (dir: string): string => path.join(dir, ARCHIVE_DIR);
