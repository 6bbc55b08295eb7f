import { setFlagsFromString } from 'node:v8';
import type { DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from '../log.js';
import { literal } from '../model/sql.js';

/**
 * How a run tunes its runtime, in one place: the Node flags and glibc's allocator (the same for every
 * command, set when the process starts), a writer's DuckDB settings, and the profile each command runs its
 * work under (DuckDB's memory limit and threads, and when the warehouse file is re-attached). A pipeline
 * names its profile and runs inside `Warehouse.withProfile`, which applies it and sets everything back on
 * the way out; nothing else changes these settings. The measurements behind each value are in
 * docs/performance.md, "Settings and the measurements behind them".
 *
 * One setting lives elsewhere: DuckDB's allocator (`DUCKDB_JE_MALLOC_CONF`, by command), in allocator.ts.
 * jemalloc reads it once, when DuckDB's library loads, so that module is evaluated before anything imports
 * DuckDB and imports nothing itself; and this one does not import it, because a process that only reads
 * these settings (a benchmark's parent) must not set it in the environment the programs it starts (DuckDB
 * alone, with DuckDB's defaults) inherit.
 */

/**
 * Node's flags for every run of the command, read by V8 only when it starts: they are on bin/store-sync.js's
 * `#!` line (test/cli/runtime-profile.test.ts keeps that line equal to this list), and the benchmarks start
 * their measured steps with them (bench/warehouse-lib.ts).
 * - A 2 MB young generation semi-space instead of up to 16 MB. The main thread of a load holds only some
 *   15 MB of live objects, and a larger young generation grown around them is memory held for no time saved.
 * - The old generation may grow to twice what the last full collection kept before the next one
 *   (`--heap-growing-percent=100`), where V8 otherwise lets it grow up to fourfold. A sync's pages live long
 *   enough to be promoted and are garbage soon after: at the start of a large sync, with three streams
 *   reading, the heap reached 150 to 220 MB, against 45 to 100 MB later in the run. With the sync's 40-page
 *   window (pipelines/sync.ts) the large store's sync peaked 470 to 520 MB with this flag and 635 to 675 MB
 *   without it, and a 100,000-document ingest 5 to 15 MB lower for the same time; at 1.3, full collections ran
 *   so often that the sync took a sixth more CPU and longer (docs/performance.md, "Issue 32 point 1").
 */
export const NODE_FLAGS: readonly string[] = ['--max-semi-space-size=2', '--heap-growing-percent=100'];

/**
 * glibc's allocator settings for every run of the command, also on its `#!` line (before `node`; glibc
 * reads them when the process starts). Node's own allocations (response bodies, Buffers, undici's, V8's
 * off-heap memory) go through glibc's malloc from several threads (the main one, libuv's pool, the ingest
 * workers), and by default glibc gives each thread an arena of its own and, once a large block has been
 * freed, keeps blocks of up to 32 MB in its arenas rather than returning them. Two arenas, and blocks from
 * 128 KB always mapped and unmapped on their own, held the large store's sync 20 to 50 MB lower at its peak
 * (491–526 MB against 531–578, three runs each, taken in turn) and a 200,000-document ingest 10 to 20 MB
 * lower, for the same wall time (docs/performance.md, "Issue 32 point 1"). DuckDB's own memory is
 * jemalloc's (allocator.ts), which these do not touch; other C libraries (musl) ignore them.
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = {
  MALLOC_ARENA_MAX: '2',
  MALLOC_MMAP_THRESHOLD_: '131072',
};

/** The `#!` line of bin/store-sync.js: MALLOC_ENV, then node with NODE_FLAGS. */
export const SHEBANG = `#!/usr/bin/env -S ${Object.entries(MALLOC_ENV)
  .map(([name, value]) => `${name}=${value}`)
  .join(' ')} node ${NODE_FLAGS.join(' ')}`;

/**
 * The young generation of the worker threads that read and normalize (ingest) or replay (rebuild).
 * Documents read by the fast path (normalize/fast.ts) leave little garbage, so a small one costs no time
 * and saves memory; V8's default would be 48 MB per worker.
 */
export const WORKER_YOUNG_GENERATION_MB = 16;

/**
 * Documents per batch of an ingest (`IngestOptions.batchDocuments`; a batch also ends at 32 MB of input).
 * The reading side holds a few batches' buffers at once (the one being written, the one waiting for credit,
 * the one being filled: BUFFER_SETS in ingest/worker.ts), so a batch's size multiplies the memory that grows
 * with it. 3,500 documents (about 20 MB of input) hold some 40 MB less than 5,000 for the same CPU;
 * 2,500 hold no less than 3,500 and cost about a tenth more CPU in per-batch work (the merge's lookups, an
 * Appender flush per table, the ledger rows): docs/performance.md, "Issue 31 point 3".
 */
export const INGEST_BATCH_DOCUMENTS = 3500;

/**
 * A writer's DuckDB memory (set when it opens; `OpenOptions.memoryLimit` overrides it). What it must hold at
 * once is a checkpoint's work plus a block for every column of every table's row group in progress, so it
 * goes with the checkpoint threshold below and the row-group and block sizes of open.ts: with those, 256 MB
 * carries a large ingest as fast as more memory would, and less fails. Many small loads into one warehouse
 * (a sync commits page by page) slow down sharply below it. Readers keep DuckDB's default (80 % of the
 * memory), for analysts.
 */
export const WRITER_MEMORY_LIMIT = '256MB';

/**
 * WAL size at which a writer's commit also checkpoints. Each checkpoint then writes at most one large
 * transaction (an ingest commits every 200,000 documents) plus this much, which is what bounds the memory
 * it needs. A higher threshold saves checkpoints (each rewrites the tables' last, partly filled row groups)
 * only when commits are small; with 200,000-document commits it saves no time and costs memory. DuckDB's
 * own default (16 MB) would checkpoint after nearly every page of a sync. Every commit is durable in the WAL
 * either way, and closing the warehouse checkpoints.
 */
export const WRITER_CHECKPOINT_THRESHOLD = '64MB';

/**
 * DuckDB's memory while an ingest streams a large input through worker threads (ingest/parallel.ts,
 * WORKERS_FROM_BYTES): a few large commits, which read back little of what they wrote. Because such an ingest
 * re-attaches the file after each commit (Warehouse.reattach), DuckDB holds little besides the rows in
 * progress, and 160 MB loads a fresh warehouse or merges into a large one in the same time as the writer's
 * limit, with a lower peak; 128 MB spills and is slower. Small ingests and syncs, many small commits, keep
 * the writer's limit (above).
 */
export const STREAMING_INGEST_MEMORY_LIMIT = '160MB';

/**
 * DuckDB's memory while export writes Parquet (pipelines/export.ts), from a reader or a writer. A partitioned
 * COPY keeps a Parquet row group in progress for every month at once; with DuckDB's default memory (80 % of
 * the machine's) a 1M-document warehouse's export held 2 GB. Under this limit, with the row groups of a
 * partitioned COPY capped at EXPORT_ROW_GROUP_BYTES and insertion order not preserved (each COPY's rows
 * need no order: readers of the files sort what they need), it stays within the command's budget
 * (docs/performance.md, "Export memory").
 */
export const EXPORT_MEMORY_LIMIT = '256MB';

/**
 * DuckDB's memory while a sync runs (RUNTIME_PROFILES.sync), unless the writer was opened with a limit of its
 * own. A sync commits groups of pages (page-groups.ts) of at most GROUP_RECORDS records, a few MB of rows
 * each, and reads back only the merge's version lookups; but every table a run writes holds a block per
 * column of its row group in progress until the next checkpoint, and history (src/load/history.ts) adds a
 * table as wide as each versioned one. With 160 MB DuckDB spilled those blocks to disk and read them back:
 * the large store's sync took 2.4× the bare download against 1.8× with 200 MB, and a nightly run's history
 * statements twice as long, for the same peak RSS (510–570 MB either way), which is mostly not DuckDB's
 * buffers; 256 MB was a little faster again but peaked at 580–590 MB (docs/performance.md, "Issue 32
 * point 1" and "Issue 27").
 */
export const SYNC_MEMORY_LIMIT = '200MB';

/** A partitioned COPY's row group size in bytes (COPY's ROW_GROUP_SIZE_BYTES), see EXPORT_MEMORY_LIMIT. */
export const EXPORT_ROW_GROUP_BYTES = '4MB';

/** What a profile changes once worker threads read or replay beside DuckDB (`WarehouseRuntime.useWorkers`). */
export interface WithWorkers {
  /**
   * DuckDB runs on the cores the workers leave, at least one. On a small machine DuckDB's extra threads only
   * compete with the workers, and the thread waiting on a query spins while they run (on 2 cores, a tenth
   * of an ingest's CPU: docs/ingest.md, "Threads").
   */
  readonly shareCores: boolean;
  /** DuckDB's memory limit while they run, unless the writer was opened with a limit of its own. */
  readonly memoryLimit: string | null;
  /**
   * Detach the warehouse file and attach it again after each commit (Warehouse.reattach): DuckDB otherwise
   * keeps the storage metadata of every row group written, about 60 MB per million documents.
   */
  readonly reattachAfterCommit: boolean;
  /**
   * V8's `--heap-growing-percent` while they run, for every thread of the process (V8's flags are the
   * process's): 0 is V8's own growth, which adapts to how fast the collector runs; null keeps the command's
   * (NODE_FLAGS). A streaming ingest's threads hold little and allocate at a steady rate, and with the old
   * generation collected whenever it has doubled, its main thread and its worker each ran a full collection
   * per batch: 200,000 documents took 11.3 to 11.7 s with V8's own growth against 11.9 to 12.0 s, a CPU-second
   * less, and a million documents peaked at 480 MB against 460 (docs/performance.md, "Issue 31: the worker
   * never waits").
   */
  readonly heapGrowingPercent: number | null;
}

export interface RuntimeProfile {
  readonly name: 'sync' | 'ingest' | 'rebuild' | 'bulk-copy';
  /**
   * DuckDB's memory limit for the whole profile: the writer's as opened, or DuckDB's own default (80 % of
   * the machine's or container's memory), for work a writer's limit is too small for, or a size of its own
   * (kept only when the writer was not opened with a limit). A reader has DuckDB's default already.
   */
  readonly memoryLimit: 'writer' | 'duckdb-default' | { readonly size: string };
  /** Null: the profile's work never runs beside worker threads. */
  readonly withWorkers: WithWorkers | null;
  /**
   * Cores the profile's own JavaScript keeps for the whole of it, DuckDB getting the others (at least one):
   * a sync builds its pages on the main thread while DuckDB commits the group before (Warehouse.shareCores).
   */
  readonly coresForJavaScript?: number;
}

/**
 * The profiles, by the work that chooses them. Readers (query, status, export, doctor) open read-only with
 * DuckDB's defaults and no profile.
 */
export const RUNTIME_PROFILES = {
  /** sync, schedule, the demo's sync: commits of page groups, under SYNC_MEMORY_LIMIT. */
  sync: { name: 'sync', memoryLimit: { size: SYNC_MEMORY_LIMIT }, withWorkers: null, coresForJavaScript: 1 },
  /** ingest (pipelines/ingest.ts): a large input streams through workers, DuckDB gets less of everything. */
  ingest: {
    name: 'ingest',
    memoryLimit: 'writer',
    withWorkers: {
      shareCores: true,
      memoryLimit: STREAMING_INGEST_MEMORY_LIMIT,
      reattachAfterCommit: true,
      heapGrowingPercent: 0,
    },
  },
  /** rebuild (pipelines/rebuild.ts): one transaction; workers replay blocks while DuckDB writes them. */
  rebuild: {
    name: 'rebuild',
    memoryLimit: 'writer',
    withWorkers: {
      shareCores: true,
      memoryLimit: null,
      reattachAfterCommit: false,
      heapGrowingPercent: null,
    },
  },
  /**
   * A COPY to Parquet (pipelines/export.ts) or the one-off move of an old landing (ddl.ts): a partitioned
   * COPY holds a Parquet row group per month, and moving a landing pins every old blob of the vector it
   * reads, which a writer's limit cannot carry (at 256 MB the orders of a two-million-document warehouse
   * cannot be exported, and a large landing in the old layout needs far more to move).
   */
  bulkCopy: { name: 'bulk-copy', memoryLimit: 'duckdb-default', withWorkers: null },
} as const satisfies Record<string, RuntimeProfile>;

/**
 * The `--heap-growing-percent` the process started with (NODE_FLAGS on the `#!` line; NODE_OPTIONS may not
 * carry it), else V8's own (0).
 */
function startingHeapGrowingPercent(): number {
  const values = process.execArgv.map((flag) => /^--heap[-_]growing[-_]percent=(\d+)$/.exec(flag)?.[1]);
  return Number(values.findLast((value) => value !== undefined) ?? 0);
}

/**
 * Sets V8's `--heap-growing-percent` for the whole process (see WithWorkers.heapGrowingPercent), says so at
 * debug level, and returns what sets back the one it started with. V8 reads the flag each time it sizes the
 * old generation after a collection, so the change applies from the next one, on every thread.
 */
export function useHeapGrowingPercent(percent: number, logger: Logger): () => Promise<void> {
  setFlagsFromString(`--heap-growing-percent=${percent}`);
  logger.debug('v8_heap_growing_percent', { percent });
  return async () => setFlagsFromString(`--heap-growing-percent=${startingHeapGrowingPercent()}`);
}

/** A writer's DuckDB memory limit: the one asked for at open, or WRITER_MEMORY_LIMIT. */
export const writerMemoryLimit = (opened: { memoryLimit?: string | undefined }): string =>
  opened.memoryLimit ?? WRITER_MEMORY_LIMIT;

/**
 * Sets DuckDB's memory limit to `limit` and returns what sets the writer's back (`opened` are the writer's
 * open options). Call both between statements, never beside one, and outside a transaction that may abort.
 */
export async function setMemoryLimit(
  connection: DuckDBConnection,
  opened: { memoryLimit?: string | undefined },
  limit: string,
): Promise<() => Promise<void>> {
  await connection.run(`SET memory_limit = ${literal(limit)}`);
  // The limit as configured: DuckDB shows it rounded (15.2 MiB for 16MB), and setting what it shows would
  // lower it a little at every round.
  return async () => {
    await connection.run(`SET memory_limit = ${literal(writerMemoryLimit(opened))}`);
  };
}

/**
 * Gives a writer's connection DuckDB's default memory limit (80 % of the machine's or container's memory), as
 * a read-only open has; returns what restores the writer's. DuckDB 1.5.6's RESET changes the setting it
 * reports but not its buffer pool's limit, so RESET only serves to learn the default, which is then SET.
 */
async function useDuckDBDefaultMemory(
  connection: DuckDBConnection,
  opened: { memoryLimit?: string | undefined },
): Promise<() => Promise<void>> {
  await connection.run('RESET memory_limit');
  const reader = await connection.runAndReadAll("SELECT current_setting('memory_limit')");
  return setMemoryLimit(connection, opened, String(reader.getRows()[0]![0]));
}

/**
 * Runs `fn` with the profile's DuckDB memory limit on a writer's connection, then restores the writer's
 * (Warehouse.withProfile does this and more; ddl.ts, which runs before a Warehouse exists, uses it alone).
 * When `fn` fails, a restore that fails too is let go: an aborted transaction refuses even SET, and `fn`'s
 * error is the one that explains.
 */
export async function withProfileMemory<T>(
  connection: DuckDBConnection,
  opened: { memoryLimit?: string | undefined },
  profile: RuntimeProfile,
  fn: () => Promise<T>,
): Promise<T> {
  const setting = profile.memoryLimit;
  if (setting === 'writer' || (typeof setting === 'object' && opened.memoryLimit !== undefined)) return fn();
  const restore =
    setting === 'duckdb-default'
      ? await useDuckDBDefaultMemory(connection, opened)
      : await setMemoryLimit(connection, opened, setting.size);
  return thenRestore(fn, restore);
}

/**
 * Runs `fn`, then `restore`. When `fn` fails, a restore that fails too is let go: an aborted transaction
 * refuses even SET, and `fn`'s error is the one that explains.
 */
export async function thenRestore<T>(fn: () => Promise<T>, restore: () => Promise<unknown>): Promise<T> {
  let result: T;
  try {
    result = await fn();
  } catch (error) {
    await restore().catch(() => undefined);
    throw error;
  }
  await restore();
  return result;
}
