import type { PageCommit } from '../contracts.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { PageCounts, Warehouse } from './warehouse.js';

/**
 * A sync's commits, grouped. Pages handed over while the warehouse commits a group wait, and are committed
 * together in the next transaction (Warehouse.commitPages): when the API answers faster than the warehouse
 * commits, a transaction holds several pages (each with the state that follows it) instead of one, and its
 * fixed costs (merge lookups, appender flushes, the WAL's sync) are paid once for all of them. When the
 * warehouse keeps up, a group is one page, as before.
 *
 * What a stream's driver may count on (src/extract/run-stream.ts, `commitsInFlight`): pages are committed in
 * the order they were handed over, and once a page of a stream fails, no later page of that stream is
 * committed (its saved cursor would be ahead of the rows that failed). A group that fails is tried again one
 * page at a time, so a page that cannot be loaded fails its own stream only, as it did with a transaction
 * per page.
 */

interface Waiting {
  page: PageCommit;
  resolve: (counts: PageCounts) => void;
  reject: (error: unknown) => void;
}

/**
 * Records in one group, at most: bounds the memory a group's batch takes (6 pages of 100). On the large store
 * 600 peaked 50 MB lower than 2,000 for the same CPU (docs/performance.md, "Issue 32 point 1").
 */
export const GROUP_RECORDS = 600;

export class PageGroups {
  private queue: Waiting[] = [];
  private draining: Promise<void> | null = null;
  /** Streams a page of which failed, with its error: their later pages are refused with it. */
  private readonly failed = new Map<string, unknown>();
  private closed = false;

  constructor(
    private readonly warehouse: Pick<Warehouse, 'commitPages'>,
    private readonly groupRecords = GROUP_RECORDS,
  ) {}

  /** Resolves once the page is committed (with its group), or rejects with why it was not. */
  commit(page: PageCommit): Promise<PageCounts> {
    const failed = this.failed.get(page.stream);
    if (failed !== undefined) return Promise.reject(failed);
    if (this.closed)
      return Promise.reject(
        new StoreSyncError(
          ERROR_CODES.INTERNAL,
          `a page of stream ${page.stream} came after the run's commits were closed`,
        ),
      );
    return new Promise<PageCounts>((resolve, reject) => {
      this.queue.push({ page, resolve, reject });
      this.kick();
    });
  }

  /** Starts draining the queue unless it is being drained. */
  private kick(): void {
    if (this.draining || this.queue.length === 0) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      // A page handed over after the drain's last look at the queue.
      this.kick();
    });
  }

  /** Refuses pages from now on and waits for those handed over to be committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.draining) await this.draining;
  }

  private async drain(): Promise<void> {
    // Pages handed over in the same turn of the event loop join the first group.
    await new Promise<void>((resolve) => setImmediate(resolve));
    while (this.queue.length > 0) await this.commitGroup(this.take());
  }

  /** The oldest waiting pages of one store's run, up to the group's size (one page at least). */
  private take(): Waiting[] {
    const group: Waiting[] = [];
    let records = 0;
    const first = this.queue[0]!.page;
    while (this.queue.length > 0) {
      const next = this.queue[0]!;
      if (next.page.store !== first.store || next.page.runId !== first.runId) break;
      if (group.length > 0 && records + next.page.records.length > this.groupRecords) break;
      this.queue.shift();
      const failed = this.failed.get(next.page.stream);
      if (failed !== undefined) {
        next.reject(failed);
        continue;
      }
      group.push(next);
      records += next.page.records.length;
    }
    return group;
  }

  private async commitGroup(group: Waiting[]): Promise<void> {
    if (group.length === 0) return;
    try {
      const counts = await this.warehouse.commitPages(group.map((w) => w.page));
      group.forEach((w, i) => {
        w.resolve(counts[i]!);
      });
      return;
    } catch (error) {
      if (group.length === 1) {
        this.fail(group[0]!, error);
        return;
      }
    }
    // Nothing of the group was committed: each page alone, in order, finds the one that cannot be.
    for (const waiting of group) {
      const failed = this.failed.get(waiting.page.stream);
      if (failed !== undefined) {
        waiting.reject(failed);
        continue;
      }
      try {
        const [counts] = await this.warehouse.commitPages([waiting.page]);
        waiting.resolve(counts!);
      } catch (error) {
        this.fail(waiting, error);
      }
    }
  }

  private fail(waiting: Waiting, error: unknown): void {
    this.failed.set(waiting.page.stream, error);
    waiting.reject(error);
  }
}
