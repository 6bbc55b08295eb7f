import type { DuckDBConnection } from '@duckdb/node-api';
import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { ReplayWorkers, workersFor } from '../src/ingest/parallel.js';
import type { PreparedBatch } from '../src/load/batch-builder.js';
import { historyTables } from '../src/load/history.js';
import type { BatchCounts, Transaction, Warehouse } from '../src/load/index.js';
import { storedBlocks } from '../src/load/landing.js';
import type { ReplayContracts, StoredBlock } from '../src/load/replay.js';
import { RUNTIME_PROFILES } from '../src/load/runtime-profile.js';
import type { Logger } from '../src/log.js';
import { dataTables, ident, literal } from '../src/model/index.js';

/**
 * `store-sync rebuild`: every data table re-derived from the raw landing, with no API call. Blocks are
 * replayed in arrival order with their original store, `_synced_at` and run, through the same code the
 * original load took, so the tables come out as they were (or as the current normalize rules make them).
 * Normalization and parse rejections are re-derived too, and so is `_schema_changes`; API validation
 * rejections, which were never landed, are kept. It all happens in one transaction: a failed or stopped rebuild leaves the warehouse
 * untouched. Blocks are decoded, parsed and normalized in worker threads (src/load/replay.ts), as ingest's
 * files are. The run itself is recorded in `_sync_runs` by the caller, outside this transaction, so that its
 * row survives a rollback and is not touched by the tables being re-derived.
 */

export interface RebuildOptions {
  logger: Logger;
  /** Worker threads replaying blocks (default: one per core, at most 4; none for a small landing). */
  workers?: number;
  /**
   * Stops the rebuild before the next block (Ctrl-C, SIGTERM): the transaction is rolled back, so the
   * warehouse is as it was, and the summary says `interrupted`. Once the commit has begun it completes.
   */
  signal?: AbortSignal;
  /**
   * What to do with fields the model does not map, by store and stream, as the config says
   * (`schemaContract`); `evolve` for every store and stream it does not name.
   */
  contracts?: ReplayContracts;
  /** Called as the rebuild moves: once the tables are recreated, after each block, and before the commit. */
  onProgress?: (progress: RebuildProgress) => void;
}

/** How far a rebuild is: the landing's blocks replayed into the tables, records and rows so far. */
export interface RebuildProgress {
  /** `committed` once the commit is done: its rows include the customers merged at the commit. */
  phase: 'replaying' | 'committing' | 'committed';
  blocks: number;
  blocksTotal: number;
  records: number;
  /** Rows written into the tables (counted as each block's write completes). */
  rows: number;
  tables: number;
}

export interface RebuildSummary {
  blocks: number;
  records: number;
  rows: number;
  rejections: number;
  tables: number;
  /** Worker threads that replayed the blocks (0: the main thread did). */
  workers: number;
  /**
   * Stopped by `signal` before the commit: everything was rolled back, and the counts say how far the
   * rebuild had got.
   */
  interrupted: boolean;
}

/** Thrown inside the rebuild when its signal stops it: caught below, and the transaction rolled back. */
class RebuildStopped extends Error {}

/** The landing's blocks, by first sequence number, in arrival order. */
async function blockSeqs(tx: Transaction): Promise<number[]> {
  const reader = await tx.read((c) =>
    c.runAndReadAll('SELECT first_seq FROM _raw_landing ORDER BY first_seq'),
  );
  return reader.getRows().map(([seq]) => Number(seq));
}

/** Blocks read per query: a query has a fixed cost, and eight blocks are a few MB. */
const BLOCKS_PER_READ = 8;

/**
 * Landing blocks with their bytes (from _raw_landing_parts), in the order asked. Read on a connection of
 * their own, beside the rebuild's transaction (which never changes the landing): read on the writing one,
 * each read waited for the write before it, and the next write for the read.
 */
async function readBlocks(connection: DuckDBConnection, seqs: number[]): Promise<StoredBlock[]> {
  const reader = await connection.runAndReadAll(
    `SELECT first_seq, _store, codec, epoch_ms(_synced_at), _run_id FROM _raw_landing WHERE first_seq IN (${seqs.join(', ')}) ORDER BY first_seq`,
  );
  const bytes = await storedBlocks(connection, seqs);
  const found = reader.getRows();
  return seqs.map((seq, i) => {
    const [firstSeq, store, codec, synced, runId] = found[i] ?? [];
    if (Number(firstSeq) !== seq) throw new Error(`raw landing block ${seq} moved during the rebuild`);
    return {
      store: String(store),
      codec: String(codec),
      payload: bytes.get(seq)!,
      syncedAtMs: Number(synced),
      runId: String(runId),
    };
  });
}

/** A landed record's typical size, to size rebuild like ingest: API records and documents run 1-6 KB. */
const RECORD_BYTES = 2048;

export async function rebuildWarehouse(
  warehouse: Warehouse,
  options: RebuildOptions,
): Promise<RebuildSummary> {
  const tables = dataTables();
  const summary: RebuildSummary = {
    blocks: 0,
    records: 0,
    rows: 0,
    rejections: 0,
    tables: tables.length,
    workers: 0,
    interrupted: false,
  };
  const stopIfAsked = () => {
    if (options.signal?.aborted) throw new RebuildStopped();
  };
  // The profile is restored after the commit or rollback: nothing of the rebuild is still running then.
  await warehouse.withProfile(RUNTIME_PROFILES.rebuild, options.logger, async (runtime) => {
    const tx = await warehouse.begin({ holdUnits: true });
    let workers: ReplayWorkers | null = null;
    try {
      // The block headers tell how much was landed without reading the payloads (a few KB per record).
      const landed = await tx.read((c) => c.runAndReadAll('SELECT sum(records) FROM _raw_landing'));
      const records = Number(landed.getRows()[0]![0] ?? 0);
      const count = options.workers ?? workersFor(RECORD_BYTES * records);
      summary.workers = count;
      await runtime.useWorkers(count);
      const replay = new ReplayWorkers(count, options.contracts);
      workers = replay;
      stopIfAsked();
      await warehouse.recreateDataTables(tx);
      await tx.run(
        `DELETE FROM _rejected_records WHERE stage IN (${literal('parse')}, ${literal('normalize')})`,
      );
      // Re-derived block by block, with each block's own time and run, as the rows are.
      await tx.run('DELETE FROM _schema_changes');
      // So are the events dating windows gave: their records were landed with their window (window-events.ts).
      await tx.run('DELETE FROM _window_events');
      // History is re-derived as the blocks are replayed, in landing order (src/load/history.ts).
      await tx.run(
        historyTables()
          .map((t) => `DELETE FROM ${ident(t)}`)
          .join(';\n'),
      );
      let pending: Promise<BatchCounts> | null = null;
      const settle = async () => {
        if (!pending) return;
        const counts = await pending;
        pending = null;
        summary.records += counts.records;
        summary.rows += counts.rows;
        summary.rejections += counts.rejections;
      };
      const blocks = await blockSeqs(tx);
      options.logger.info('rebuild_start', { blocks: blocks.length, records, workers: count });
      const report = (phase: RebuildProgress['phase']) =>
        options.onProgress?.({
          phase,
          blocks: summary.blocks,
          blocksTotal: blocks.length,
          records: summary.records,
          rows: summary.rows,
          tables: summary.tables,
        });
      report('replaying');
      const seq = warehouse.nextSeq();
      // Blocks are decoded and normalized in worker threads, a few ahead, while this thread writes them in
      // order; the connection reads the next blocks between writes. With two ahead per worker, the worker
      // would sit idle while a write holds up the read of the blocks after it.
      const ahead = 3 * Math.max(1, count);
      const replayed: Promise<PreparedBatch>[] = [];
      // Blocks are read BLOCKS_PER_READ at a time, the next group while this one is replayed.
      const side = await warehouse.sideConnection();
      const groups = new Map<number, Promise<StoredBlock[]>>();
      const group = (g: number) => {
        let read = groups.get(g);
        if (!read && g * BLOCKS_PER_READ < blocks.length) {
          read = readBlocks(side, blocks.slice(g * BLOCKS_PER_READ, (g + 1) * BLOCKS_PER_READ));
          read.catch(() => undefined);
          groups.set(g, read);
        }
        return read;
      };
      const dispatch = async (i: number) => {
        const g = Math.floor(i / BLOCKS_PER_READ);
        const read = await group(g)!;
        group(g + 1);
        // The block is read once and replayed once: its bytes can move to the worker.
        const promise = replay.replay(i, read[i % BLOCKS_PER_READ]!, seq, { handOver: true });
        if (i % BLOCKS_PER_READ === BLOCKS_PER_READ - 1 || i === blocks.length - 1) groups.delete(g);
        promise.catch(() => undefined);
        replayed[i] = promise;
      };
      let dispatched = 0;
      // Documents the fast path read (normalize/fast.ts): none with it turned off.
      let fastPath = 0;
      for (let i = 0; i < blocks.length; i++) {
        stopIfAsked();
        while (dispatched < blocks.length && dispatched < i + ahead) await dispatch(dispatched++);
        const prepared = await replayed[i]!;
        fastPath += prepared.fastPathDocuments;
        const batch = warehouse.adopt(prepared, () => replay.giveBack(i, prepared));
        delete replayed[i];
        await settle();
        pending = tx.write(batch);
        pending.catch(() => undefined);
        summary.blocks++;
        report('replaying');
        if (summary.blocks % 50 === 0)
          options.logger.debug('rebuild_progress', { blocks: summary.blocks, rows: summary.rows });
      }
      await settle();
      // The last moment a stop can still roll everything back.
      stopIfAsked();
      report('committing');
      options.logger.debug('rebuild_committing', {
        blocks: summary.blocks,
        rows: summary.rows,
        fast_path: fastPath,
      });
      summary.rows += await tx.commit();
      report('committed');
    } catch (error) {
      await tx.rollback();
      await warehouse.reopenTables();
      if (error instanceof RebuildStopped) summary.interrupted = true;
      else if (error instanceof StoreSyncError) throw error;
      else
        throw new StoreSyncError(
          ERROR_CODES.WAREHOUSE,
          `rebuild failed, nothing changed: ${(error as Error).message}`,
          { cause: error },
        );
    } finally {
      await workers?.close();
    }
  });
  const { interrupted, ...counts } = summary;
  if (interrupted) options.logger.warn('rebuild_rolled_back', counts);
  else options.logger.info('rebuild_done', counts);
  return summary;
}
