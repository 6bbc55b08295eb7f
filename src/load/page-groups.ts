import type { PageCommit } from '../contracts.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { PageCounts, PagesBatch, Warehouse } from './warehouse.js';

/**
 * A sync's commits, grouped. Pages handed over while the warehouse commits a group wait, and are committed
 * together in the next transaction (Warehouse.commitPages): when the API answers faster than the warehouse
 * commits, a transaction holds several pages (each with the state that follows it) instead of one, and its
 * fixed costs (merge lookups, appender flushes, the history's statements, the WAL's sync) are paid once for
 * all of them.
 *
 * How a sync's pages flow (docs/performance.md, "Issue 32 point 1"):
 * - A page is built into the open group (normalized, its records landed) just after it is handed over, in
 *   the next turn of the event loop: the stream has asked for its next page by then, and the building is done
 *   while that request is out and while the warehouse commits the group before.
 * - A group is committed once it holds GROUP_READY_RECORDS records, or once a stream has `readyPages` pages
 *   waiting, or GROUP_LINGER_MS after the warehouse became free, whichever comes first; at once when it holds
 *   a stream's last commit (PageCommit.last), which its stream waits for. A group of one page
 *   per transaction would cost a quarter more CPU on the large store. A stream reads on while its pages wait,
 *   up to its window (RunStreamArgs.commitsInFlight, which is far more pages than `readyPages`): it stops
 *   reading only when the warehouse is that far behind, as during a long checkpoint.
 *
 * What a stream's driver may count on (src/extract/run-stream.ts, `commitsInFlight`): pages are committed in
 * the order they were handed over, and once a page of a stream fails, no later page of that stream is
 * committed (its saved cursor would be ahead of the rows that failed). A group that fails, or a page that
 * cannot be built, is tried again one page at a time, so a page that cannot be loaded fails its own stream
 * only, as it did with a transaction per page.
 */

interface Waiting {
  page: PageCommit;
  resolve: (counts: PageCounts) => void;
  reject: (error: unknown) => void;
}

/** The group being built: its pages, and their batch (null once a page could not be built into it). */
interface OpenGroup {
  members: Waiting[];
  batch: PagesBatch | null;
  records: number;
}

/**
 * Records in one group, at most: bounds the memory a group's batch takes (6 pages of 100). On the large store
 * 600 peaked 50 MB lower than 2,000 for the same CPU (docs/performance.md, "Issue 32 point 1").
 */
export const GROUP_RECORDS = 600;
/** Records from which a group is committed without waiting for more (3 pages of 100). */
export const GROUP_READY_RECORDS = 300;
/** The longest a group waits for more pages once the warehouse is free. */
export const GROUP_LINGER_MS = 200;

export interface PageGroupsOptions {
  /**
   * Pages of one stream handed over and not committed that make the open group ready. Without it, a group is
   * committed as soon as the warehouse is free (tests that count groups).
   */
  readyPages?: number;
  /** Records in one group, at most (GROUP_RECORDS). */
  groupRecords?: number;
  readyRecords?: number;
  lingerMs?: number;
}

type GroupsWarehouse = Pick<
  Warehouse,
  'commitPages' | 'openPages' | 'addPage' | 'commitPagesBatch' | 'discardPages'
>;

export class PageGroups {
  /** Pages handed over and not yet built into a group. */
  private queue: Waiting[] = [];
  private open: OpenGroup | null = null;
  private draining: Promise<void> | null = null;
  /** Streams a page of which failed, with its error: their later pages are refused with it. */
  private readonly failed = new Map<string, unknown>();
  private closed = false;
  /** While a failed group's pages are tried one by one, pages handed over wait unbuilt (see commitGroup). */
  private holding = false;
  private buildScheduled = false;
  /** By stream, its pages handed over and not yet committed or failed. */
  private readonly unsettled = new Map<string, number>();
  /** Ends the wait for a group to be ready (see ripen). */
  private wake: (() => void) | null = null;
  private readonly readyPages: number | null;
  private readonly groupRecords: number;
  private readonly readyRecords: number;
  private readonly lingerMs: number;

  constructor(
    private readonly warehouse: GroupsWarehouse,
    options: PageGroupsOptions = {},
  ) {
    this.readyPages = options.readyPages ?? null;
    this.groupRecords = options.groupRecords ?? GROUP_RECORDS;
    this.readyRecords = options.readyRecords ?? GROUP_READY_RECORDS;
    this.lingerMs = options.lingerMs ?? GROUP_LINGER_MS;
  }

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
    const { stream } = page;
    this.unsettled.set(stream, (this.unsettled.get(stream) ?? 0) + 1);
    const settled = () => this.unsettled.set(stream, this.unsettled.get(stream)! - 1);
    return new Promise<PageCounts>((resolve, reject) => {
      this.queue.push({
        page,
        resolve: (counts) => {
          settled();
          resolve(counts);
        },
        reject: (error) => {
          settled();
          reject(error);
        },
      });
      this.buildSoon();
    });
  }

  /** Refuses pages from now on and waits for those handed over to be committed or failed. */
  async close(): Promise<void> {
    this.closed = true;
    this.build();
    this.wake?.();
    while (this.draining) await this.draining;
  }

  /** Builds the waiting pages in the next turn of the event loop (see the flow above). */
  private buildSoon(): void {
    if (this.buildScheduled) return;
    this.buildScheduled = true;
    setImmediate(() => {
      this.buildScheduled = false;
      this.build();
    });
  }

  /**
   * Builds waiting pages into the open group, oldest first, while they fit: the pages of one store's run, up
   * to the group's size (one page at least). Then starts draining, or wakes the drain if the group is ready.
   */
  private build(): void {
    while (!this.holding && this.queue.length > 0) {
      const next = this.queue[0]!;
      const failed = this.failed.get(next.page.stream);
      if (failed !== undefined) {
        this.queue.shift();
        next.reject(failed);
        continue;
      }
      const open = this.open;
      if (open) {
        const first = open.members[0]!.page;
        if (next.page.store !== first.store || next.page.runId !== first.runId) break;
        if (open.records + next.page.records.length > this.groupRecords) break;
        // A group one of whose pages could not be built takes no more: it is committed page by page.
        if (!open.batch) break;
      }
      this.queue.shift();
      const group = open ?? {
        members: [],
        batch: this.warehouse.openPages(next.page.store, next.page.runId),
        records: 0,
      };
      this.open = group;
      group.members.push(next);
      group.records += next.page.records.length;
      try {
        this.warehouse.addPage(group.batch!, next.page);
      } catch {
        // Built again alone when the group commits, where its own error fails its own stream.
        this.warehouse.discardPages(group.batch!);
        group.batch = null;
      }
    }
    if (this.wake && this.ready()) this.wake();
    this.kick();
  }

  /** Whether the open group should be committed now (see the flow above). */
  private ready(): boolean {
    const open = this.open;
    if (!open) return false;
    if (this.readyPages === null || this.closed || !open.batch || this.queue.length > 0) return true;
    if (open.members.some((member) => member.page.last)) return true;
    if (open.records >= this.readyRecords) return true;
    for (const pages of this.unsettled.values()) if (pages >= this.readyPages) return true;
    return false;
  }

  /** Waits until the open group is ready, or GROUP_LINGER_MS. */
  private async ripen(): Promise<void> {
    if (this.ready()) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        this.wake = null;
        resolve();
      };
      const timer = setTimeout(done, this.lingerMs);
      this.wake = done;
    });
  }

  /** Starts draining the open group unless it is being drained. */
  private kick(): void {
    if (this.draining || !this.open) return;
    this.draining = this.drain().finally(() => {
      this.draining = null;
      // A page built after the drain's last look.
      this.kick();
    });
  }

  private async drain(): Promise<void> {
    while (this.open) {
      await this.ripen();
      const group = this.open;
      if (!group) break;
      this.open = null;
      if (group.members.some((w) => this.failed.has(w.page.stream))) {
        // A stream failed while the group was built: build it again without that stream's pages.
        this.reopen(group);
        continue;
      }
      const committed = this.commitGroup(group);
      // Pages that waited for room are built into the next group while this one commits.
      this.build();
      await committed;
    }
  }

  /** Puts a group's pages back at the head of the queue, its batch given back, and builds them again. */
  private reopen(group: OpenGroup): void {
    if (group.batch) this.warehouse.discardPages(group.batch);
    this.queue.unshift(...group.members);
    this.build();
  }

  private async commitGroup(group: OpenGroup): Promise<void> {
    if (group.batch) {
      try {
        const counts = await this.warehouse.commitPagesBatch(group.batch);
        group.members.forEach((w, i) => {
          w.resolve(counts[i]!);
        });
        return;
      } catch (error) {
        if (group.members.length === 1) {
          this.fail(group.members[0]!, error);
          // The group built meanwhile landed after this one, which the rollback lost: built again.
          const next = this.open;
          this.open = null;
          if (next) this.reopen(next);
          return;
        }
      }
    }
    // Nothing of the group was committed: each page alone, in order, finds the one that cannot be. The
    // group built meanwhile came after them, so it is built again after them.
    const next = this.open;
    this.open = null;
    if (next?.batch) this.warehouse.discardPages(next.batch);
    this.holding = true;
    try {
      for (const waiting of group.members) {
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
    } finally {
      this.holding = false;
    }
    if (next) this.queue.unshift(...next.members);
    this.build();
  }

  private fail(waiting: Waiting, error: unknown): void {
    this.failed.set(waiting.page.stream, error);
    waiting.reject(error);
  }
}
