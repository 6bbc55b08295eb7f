import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { copyFile, mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { openWarehouse } from '../../src/load/index.js';
import { createLogger } from '../../src/log.js';
import { count, orderDoc, tempDir } from './helpers.js';

/**
 * A commit is all or nothing even when the process dies while the commit is being written. DuckDB 1.5.6
 * writes a large transaction's appends to the database file ahead of the commit and logs only pointers to
 * them; replaying a write-ahead log cut inside such a commit brought those rows back without the rest of the
 * transaction (duckdb/duckdb#25931). The cut is made here by hand, deterministically, at several lengths:
 * after a large ingest the child dies right after the commit, and its log is cut short as a kill in the
 * middle of writing it would leave it.
 */

const CHILD = new URL('./children/ingest-then-die.ts', import.meta.url).pathname;
/**
 * 70 lines per order. 2,000 orders: 140,000 order lines (and as many tax lines), more than one row group of
 * any size. 300 orders: 21,000, more than one of the writer's row groups (16,384 rows) though fewer than
 * DuckDB's default (122,880), which the rows a commit goes through a checkpoint from were once half of. In
 * both, DuckDB has written rows to the file ahead of the commit, which a torn log could bring back alone.
 */
const LINES = 70;

for (const ORDERS of [2_000, 300])
  describe(`a commit of ${ORDERS * LINES} order lines cut short`, () => {
    function bigOrder(n: number): Record<string, unknown> {
      const doc = orderDoc(n);
      const [line] = doc.lines as Record<string, unknown>[];
      doc.lines = Array.from({ length: LINES }, (_, k) => ({ ...line, id: n * 100 + k }));
      return doc;
    }

    let dir: string;
    let cleanup: () => Promise<void>;
    let warehouse: string;

    before(async () => {
      ({ dir, cleanup } = await tempDir());
      const inbox = path.join(dir, 'inbox');
      await mkdir(inbox);
      const lines = Array.from({ length: ORDERS }, (_, i) => JSON.stringify(bigOrder(i + 1)));
      await writeFile(path.join(inbox, 'orders.ndjson'), `${lines.join('\n')}\n`);
      warehouse = path.join(dir, 'crashed.duckdb');
      const child = spawn(process.execPath, ['--import', 'tsx', CHILD, warehouse, inbox], {
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      let out = '';
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString();
      });
      const [, signal] = await once(child, 'exit');
      assert.equal(signal, 'SIGKILL');
      assert.deepEqual(JSON.parse(out), { documents: ORDERS }, 'the ingest committed before the crash');
    });

    after(async () => {
      await cleanup();
    });

    for (const kept of [1, 0.9, 0.5, 0.1]) {
      it(`reopens whole with ${kept * 100} % of the write-ahead log`, async () => {
        const copy = path.join(dir, `cut-${kept}.duckdb`);
        await copyFile(warehouse, copy);
        const wal = await readFile(`${warehouse}.wal`).catch(() => Buffer.alloc(0));
        await writeFile(`${copy}.wal`, wal.subarray(0, Math.floor(wal.length * kept)));
        const opened = await openWarehouse(copy, { readOnly: true });
        try {
          const c = opened.connection;
          const state = {
            orders: await count(c, 'orders'),
            orderLines: await count(c, 'order_lines'),
            ledger: await count(c, '_ingested_files', "status = 'complete'"),
            landingBlocks: await count(c, '_raw_landing'),
            // Parts of a landing block that is not there: rows of a transaction that did not commit.
            orphanParts: await count(
              c,
              '_raw_landing_parts',
              'first_seq NOT IN (SELECT first_seq FROM _raw_landing)',
            ),
          };
          // The commit was made before the crash, by a checkpoint: cutting the log cannot take any of it away.
          assert.deepEqual(state, {
            orders: ORDERS,
            orderLines: LINES * ORDERS,
            ledger: 1,
            landingBlocks: state.landingBlocks,
            orphanParts: 0,
          });
          assert.ok(state.landingBlocks > 0);
        } finally {
          await opened.close();
        }
      });
    }

    it('leaves nothing of the commit to replay in the log', async () => {
      // Through the log, the commit would be there to replay (pointers to 140,000 rows and the other tables'
      // rows, megabytes).
      const size = await stat(`${warehouse}.wal`).then(
        (s) => s.size,
        () => 0,
      );
      assert.ok(size < 64 * 1024, `write-ahead log of ${size} bytes after the commit`);
    });

    it('drops the landing parts a torn commit left behind when a writer opens, so a rebuild still works', async () => {
      // The state a torn commit left before commits went through a checkpoint: parts of a landing block whose
      // row never committed, under the sequence number the next run hands out again.
      const file = path.join(dir, 'orphans.duckdb');
      await copyFile(warehouse, file);
      await copyFile(`${warehouse}.wal`, `${file}.wal`).catch(() => undefined);
      const raw = await DuckDBInstance.create(file);
      const connection = await raw.connect();
      await connection.run(
        'INSERT INTO _raw_landing_parts SELECT (SELECT max(last_seq) + 1 FROM _raw_landing), range, ' +
          "'not a brotli stream'::BLOB FROM range(3)",
      );
      connection.closeSync();
      raw.closeSync();

      const warnings: string[] = [];
      const logger = createLogger({ format: 'human', write: (line: string) => warnings.push(line) });
      const writer = await openWarehouse(file, { logger });
      try {
        assert.equal(
          await count(
            writer.connection,
            '_raw_landing_parts',
            'first_seq NOT IN (SELECT first_seq FROM _raw_landing)',
          ),
          0,
        );
        assert.match(warnings.join('\n'), /warehouse\.orphan_landing_parts: .* deleted=3/);
        const more = path.join(dir, 'more');
        await mkdir(more);
        await writeFile(path.join(more, 'one.json'), JSON.stringify(orderDoc(ORDERS + 1)));
        await ingestPaths(writer, [more], { store: 'shop', runId: 'after', logger });
        // The new block takes the orphans' sequence number: with them still there, its parts and theirs were
        // read as one block and the rebuild failed to decompress it.
        const summary = await rebuildWarehouse(writer, { logger, workers: 0 });
        assert.equal(summary.records, ORDERS + 1);
        assert.equal(await count(writer.connection, 'orders'), ORDERS + 1);
      } finally {
        await writer.close();
      }
    });
  });
