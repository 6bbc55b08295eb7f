import { readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { processAlive } from '../processes.js';
import type { RunStart } from './runs.js';

/**
 * The running file: what a writer's runs have committed so far, beside the warehouse
 * (`<warehouse>.running.json`). DuckDB lets no other process open a file a writer holds, so `status` cannot
 * read `_sync_runs` during a run; it reads the read copy (the state before the run) and this file (the run's
 * progress since). The writer replaces it whole after every commit (a temporary file renamed into place, so a
 * reader never sees half of one) and removes it when its last run finishes or it closes. A file whose process
 * is gone (a writer killed) is stale, and readers ignore it.
 */

/** One stream of a running run, from its committed pages (a sync's streams). */
export interface RunningStream {
  pages: number;
  records: number;
  lastCommitAt: string;
}

/** What one commit held of a run: its records, and the API pages among them (a sync's). */
export interface CommittedProgress {
  records: number;
  pages: readonly { stream: string; records: number }[];
}

/** A run the writer has started and not yet finished. */
export interface RunningRun {
  runId: string;
  command: string;
  store: string | null;
  mode: string | null;
  startedAt: string;
  /** Transactions committed for the run (a sync's page groups, an ingest's or a rebuild's batches). */
  commits: number;
  /** Records those commits held, rejected ones included. */
  records: number;
  lastCommitAt: string | null;
  /** Per stream, when the run commits API pages; empty for an ingest or a rebuild. */
  streams: Record<string, RunningStream>;
}

export interface RunningFile {
  pid: number;
  warehouse: string;
  updatedAt: string;
  runs: RunningRun[];
}

export const runningFilePath = (warehouse: string): string => `${warehouse}.running.json`;

/** The writer's side: its runs in progress, written out on every change. */
export class RunningRuns {
  private readonly runs = new Map<string, RunningRun>();
  private readonly file: string;
  private failed = false;

  constructor(
    private readonly warehouse: string,
    /** Told once, if the file cannot be written: the run goes on, only `status` sees less of it. */
    private readonly onWriteFailure: (error: unknown) => void,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.file = runningFilePath(warehouse);
  }

  started(runId: string, run: RunStart): void {
    this.runs.set(runId, {
      runId,
      command: run.command,
      store: run.store,
      mode: run.mode,
      startedAt: this.now().toISOString(),
      commits: 0,
      records: 0,
      lastCommitAt: null,
      streams: {},
    });
    this.write();
  }

  /** A transaction committed, with what it held of each run (by run id): written out once. */
  committed(progress: ReadonlyMap<string, CommittedProgress>): void {
    const at = this.now().toISOString();
    let changed = false;
    for (const [runId, { records, pages }] of progress) {
      const run = this.runs.get(runId);
      if (!run) continue;
      run.commits += 1;
      run.records += records;
      run.lastCommitAt = at;
      for (const page of pages) {
        run.streams[page.stream] ??= { pages: 0, records: 0, lastCommitAt: at };
        const stream = run.streams[page.stream]!;
        stream.pages += 1;
        stream.records += page.records;
        stream.lastCommitAt = at;
      }
      changed = true;
    }
    if (changed) this.write();
  }

  finished(runId: string): void {
    if (this.runs.delete(runId)) this.write();
  }

  /** The writer closes: no run of it goes on. */
  clear(): void {
    this.runs.clear();
    this.write();
  }

  private write(): void {
    try {
      if (this.runs.size === 0) {
        rmSync(this.file, { force: true });
        return;
      }
      const contents: RunningFile = {
        pid: process.pid,
        warehouse: this.warehouse,
        updatedAt: this.now().toISOString(),
        runs: [...this.runs.values()],
      };
      const temporary = `${this.file}.${process.pid}.tmp`;
      writeFileSync(temporary, `${JSON.stringify(contents, null, 2)}\n`);
      renameSync(temporary, this.file);
    } catch (error) {
      if (!this.failed) this.onWriteFailure(error);
      this.failed = true;
    }
  }
}

/**
 * The reader's side: the runs a live writer of `warehouse` has in progress, or null when none does (no file,
 * a file left by a process that is gone, or one that cannot be read, which `status` can do without).
 */
export function readRunning(warehouse: string): RunningFile | null {
  let contents: RunningFile;
  try {
    contents = JSON.parse(readFileSync(runningFilePath(warehouse), 'utf8')) as RunningFile;
  } catch {
    return null;
  }
  if (!Number.isInteger(contents?.pid) || !Array.isArray(contents.runs)) return null;
  if (contents.pid !== process.pid && !processAlive(contents.pid)) return null;
  return contents;
}
