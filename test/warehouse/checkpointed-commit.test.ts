import assert from 'node:assert/strict';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { openWarehouse } from '../../src/load/index.js';
import { CHECKPOINTED_COMMIT_ROWS } from '../../src/load/transaction.js';
import { productRecord, tempDir } from './helpers.js';

/**
 * Which commits go through a checkpoint (src/load/transaction.ts, CHECKPOINTED_COMMIT_ROWS): those that
 * append half a row group or more to one table, where DuckDB writes rows to the file ahead of the commit.
 * Many rows spread over tables keep the write-ahead log, which is several times cheaper for a sync's group.
 */

const walBytes = (file: string) => (existsSync(`${file}.wal`) ? statSync(`${file}.wal`).size : 0);

describe('commits through a checkpoint', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  /** The log's size before and after a commit of `count` products into a new warehouse. */
  async function commitProducts(name: string, count: number): Promise<[number, number]> {
    const file = path.join(dir, name);
    const warehouse = await openWarehouse(file);
    try {
      const before = walBytes(file);
      await warehouse.commitPage({
        store: 'shop',
        stream: 'products',
        entity: 'product',
        runId: 'run-1',
        records: Array.from({ length: count }, (_, i) => productRecord(i + 1)),
        rejections: [],
        state: emptyStreamState(),
      });
      return [before, walBytes(file)];
    } finally {
      await warehouse.close();
    }
  }

  it('rows spread over tables, none near a row group, keep the log', async () => {
    // 2,500 products, each with a variant, a price and a stock record, and a version of each: 20,000 rows
    // in eight tables, 2,500 in the largest (and 10,000 through the Appender, which a count of the
    // transaction's rows, whatever their table, sent through a checkpoint).
    const count = 2_500;
    assert.ok(count * 4 >= CHECKPOINTED_COMMIT_ROWS && count < CHECKPOINTED_COMMIT_ROWS);
    const [before, after] = await commitProducts('spread.duckdb', count);
    assert.ok(after > before, `the commit was written to the log (${before} → ${after} bytes)`);
  });

  it('half a row group in one table goes through a checkpoint, leaving the log empty', async () => {
    const [before, after] = await commitProducts('one-table.duckdb', CHECKPOINTED_COMMIT_ROWS);
    assert.ok(before > 0, 'the new warehouse had its tables in the log');
    assert.equal(after, 0);
  });
});
