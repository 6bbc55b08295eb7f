import { ERROR_CODES, StoreSyncError } from '../src/errors.js';
import { KIND, loadDocument, loadRecord } from '../src/load/documents.js';
import type { Batch, BatchCounts, Transaction, Warehouse } from '../src/load/index.js';
import { decodeBlock, type LandedRecord } from '../src/load/landing.js';
import { literal } from '../src/load/sql.js';
import type { Logger } from '../src/log.js';
import { dataTables } from '../src/normalize/index.js';

/**
 * `store-sync rebuild`: every data table re-derived from the raw landing, with no API call. Blocks are
 * replayed in arrival order with their original store, `_synced_at` and run, through the same code the
 * original load took, so the tables come out as they were (or as the current normalize rules make them).
 * Normalization and parse rejections are re-derived too; API validation rejections, which were never
 * landed, are kept. It all happens in one transaction: a failed rebuild leaves the warehouse untouched.
 */

export interface RebuildOptions {
  logger: Logger;
}

export interface RebuildSummary {
  blocks: number;
  records: number;
  rows: number;
  rejections: number;
  tables: number;
}

interface BlockRow {
  firstSeq: number;
  store: string;
  codec: string;
  payload: Uint8Array;
  syncedAtMs: number;
  runId: string;
}

async function blockSeqs(tx: Transaction): Promise<number[]> {
  const reader = await tx.read((c) =>
    c.runAndReadAll('SELECT first_seq FROM _raw_landing ORDER BY first_seq'),
  );
  return reader.getRows().map(([seq]) => Number(seq));
}

async function readBlock(tx: Transaction, firstSeq: number): Promise<BlockRow> {
  const reader = await tx.read((c) =>
    c.runAndReadAll(
      `SELECT first_seq, _store, codec, payload, epoch_ms(_synced_at), _run_id FROM _raw_landing WHERE first_seq = ${firstSeq}`,
    ),
  );
  const [seq, store, codec, payload, synced, runId] = reader.getRows()[0]!;
  return {
    firstSeq: Number(seq),
    store: String(store),
    codec: String(codec),
    payload: (payload as { bytes: Uint8Array }).bytes,
    syncedAtMs: Number(synced),
    runId: String(runId),
  };
}

function replay(batch: Batch, record: LandedRecord, warehouse: Warehouse, store: string): void {
  if (record.kind === KIND.fullScan) {
    const { entity, passStartedAt } = JSON.parse(record.text) as { entity: never; passStartedAt: string };
    batch.after.push(warehouse.fullScanSql(store, entity, passStartedAt));
  } else if (record.kind === KIND.record) {
    loadRecord(batch, record, record.text, JSON.parse(record.text) as Record<string, unknown>);
  } else {
    loadDocument(batch, record, record.text);
  }
}

export async function rebuildWarehouse(
  warehouse: Warehouse,
  options: RebuildOptions,
): Promise<RebuildSummary> {
  const tables = dataTables();
  const summary: RebuildSummary = { blocks: 0, records: 0, rows: 0, rejections: 0, tables: tables.length };
  const tx = await warehouse.begin();
  try {
    await warehouse.recreateDataTables(tx);
    await tx.run(
      `DELETE FROM _rejected_records WHERE stage IN (${literal('parse')}, ${literal('normalize')})`,
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
    const seqs = await blockSeqs(tx);
    // Block i is decoded and normalized while block i-1 merges; the connection reads block i+1 between.
    let next = seqs.length ? await readBlock(tx, seqs[0]!) : null;
    for (let i = 0; next; i++) {
      const block = next;
      const records = await decodeBlock(block.codec, block.payload);
      const batch = warehouse.newBatch({
        store: block.store,
        runId: block.runId,
        syncedAtMs: block.syncedAtMs,
      });
      try {
        for (const record of records) replay(batch, record, warehouse, block.store);
        await settle();
        next = i + 1 < seqs.length ? await readBlock(tx, seqs[i + 1]!) : null;
      } catch (error) {
        warehouse.discard(batch);
        throw error;
      }
      pending = tx.write(batch);
      pending.catch(() => undefined);
      summary.blocks++;
      if (summary.blocks % 50 === 0)
        options.logger.debug('rebuild_progress', { blocks: summary.blocks, rows: summary.rows });
    }
    await settle();
    await tx.commit();
  } catch (error) {
    await tx.rollback();
    await warehouse.reopenTables();
    if (error instanceof StoreSyncError) throw error;
    throw new StoreSyncError(
      ERROR_CODES.WAREHOUSE,
      `rebuild failed, nothing changed: ${(error as Error).message}`,
      { cause: error },
    );
  }
  options.logger.info('rebuild_done', { ...summary });
  return summary;
}
