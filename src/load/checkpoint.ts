import type { DuckDBConnection } from '@duckdb/node-api';
import { WRITER_CHECKPOINT_THRESHOLD } from './runtime-profile.js';

/**
 * COMMIT that writes the transaction into the database file by a checkpoint, skipping the write-ahead log.
 *
 * DuckDB (1.5.6) writes a table's appends to the database file before the commit once they fill a row
 * group, and its commit then logs pointers to those blocks in the WAL. A process killed while that WAL entry
 * is being written leaves a torn log, and replaying it brings the pointed-to rows back although the
 * transaction never committed (duckdb/duckdb#25931, open): a cut WAL of a 200,000-document ingest reopens
 * with its landing parts, or its orders, and none of the other tables, nor the ledger, nor the run's state.
 * A checkpoint is atomic (the file's header is written last), so a commit made by one is all or nothing.
 * It costs no more than the WAL for such a transaction (3.1 s either way for 200,000 documents), because
 * the rows are on disk already. Small transactions (a sync's page) keep the WAL, whose torn tail DuckDB
 * does discard, and which a checkpoint per page would make slow.
 */
export async function commitThroughCheckpoint(connection: DuckDBConnection): Promise<void> {
  await connection.run(`SET checkpoint_threshold = '0KB'; SET auto_checkpoint_skip_wal_threshold = 0`);
  try {
    await connection.run('COMMIT');
  } finally {
    await connection.run(
      `SET checkpoint_threshold = '${WRITER_CHECKPOINT_THRESHOLD}'; RESET auto_checkpoint_skip_wal_threshold`,
    );
  }
}
