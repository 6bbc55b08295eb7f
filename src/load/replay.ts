import type { EntityKind, SchemaContract } from '../contracts.js';
import type { Normalizer } from '../normalize/index.js';
import { BatchBuilder, type PreparedBatch } from './batch-builder.js';
import { KIND, loadDocument, loadRecord } from './documents.js';
import { entityFullScanSql } from './full-scan.js';
import { type DecodedBlock, decodeBlock, type LandedRecord } from './landing.js';

/**
 * Rebuild's unit of work, with no DuckDB in it so it runs in the ingest worker threads: one `_raw_landing`
 * block decoded and every record in it replayed through the path its original load took (documents.ts),
 * with the block's own store, `_synced_at` and run, into a prepared batch.
 */

/** A `_raw_landing` row as rebuild reads it. */
export interface StoredBlock {
  store: string;
  codec: string;
  payload: Uint8Array;
  syncedAtMs: number;
  runId: string;
}

/**
 * What rebuild does with fields the model does not map, by store and then by stream (`documents` for
 * ingested ones): the config's `schemaContract` where it names one, `evolve` for the rest.
 */
export type ReplayContracts = ReadonlyMap<string, ReadonlyMap<string, SchemaContract>>;

function replay(
  batch: BatchBuilder,
  record: LandedRecord,
  block: StoredBlock,
  contracts?: ReplayContracts,
): void {
  const contract = contracts?.get(block.store)?.get(record.stream) ?? 'evolve';
  if (record.kind === KIND.fullScan) {
    const { entity, passStartedAt, createdFrom } = JSON.parse(record.bytes.toString('utf8')) as {
      entity: EntityKind;
      passStartedAt: string;
      createdFrom?: string;
    };
    // The marker's block is the completing commit's, so its `_synced_at` is that commit's, and the stream
    // whose rejections count as received is the one the marker was landed under.
    batch.after.push(
      entityFullScanSql({
        store: block.store,
        stream: record.stream,
        entity,
        passStartedAt,
        createdFrom,
        completedAtMs: block.syncedAtMs,
        runId: block.runId,
      }),
    );
  } else if (record.kind === KIND.record) {
    const text = record.bytes.toString('utf8');
    loadRecord(batch, record, text, JSON.parse(text) as Record<string, unknown>, contract);
  } else {
    loadDocument(batch, record, record.bytes, undefined, contract);
  }
}

/**
 * The block's rows as a prepared batch. Nothing is landed again, so the batch starts and ends at `seq`,
 * the warehouse's next landing sequence number.
 */
export async function replayBlock(
  normalizer: Normalizer,
  block: StoredBlock,
  seq: number,
  contracts?: ReplayContracts,
  /** The block's records, when decoding was started ahead (see ingest/worker.ts). */
  decoded: Promise<DecodedBlock> = decodeBlock(block.codec, block.payload),
): Promise<PreparedBatch> {
  const { records, release } = await decoded;
  const batch = new BatchBuilder(
    normalizer,
    { store: block.store, runId: block.runId, syncedAtMs: block.syncedAtMs },
    seq,
  );
  for (const record of records) replay(batch, record, block, contracts);
  // The batch holds copies of everything it read (as ingest's does of its reused read buffers), so the
  // block's decode buffer can take the next block.
  release();
  return batch.prepare();
}
