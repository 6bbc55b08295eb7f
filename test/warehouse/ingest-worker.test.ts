import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { type IngestSummary, ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { StoreSyncError } from '../../src/errors.js';
import { prepareInWorkers } from '../../src/ingest/parallel.js';
import { DocumentReader } from '../../src/ingest/reader.js';
import { openWarehouse } from '../../src/load/index.js';
import { createLogger, silentLogger } from '../../src/log.js';
import {
  count,
  currentSetting,
  loggedValues,
  ndjson,
  orderDoc,
  snapshot,
  tableRows,
  tempDir,
  wholeFilePlan,
} from './helpers.js';

/**
 * Ingest reads files in worker threads, each taking every n-th batch, and loads on the main thread. The
 * workers must change nothing but where the work happens: the same folder ingested with any number of
 * them, or none, gives the same tables, rejections, raw landing and ledger; and a file a worker cannot
 * read fails the run with its name, leaving what was committed before untouched.
 */

describe('ingest: the worker thread', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let input: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    input = path.join(dir, 'in');
    await mkdir(input, { recursive: true });
    // Small batches, so that the run spans many batches and several commits, and batches span files.
    const docs = Array.from({ length: 240 }, (_, i) => orderDoc(i + 1, `2024-05-0${1 + (i % 9)}T10:00:00Z`));
    await writeFile(path.join(input, 'a.ndjson'), ndjson(docs.slice(0, 100)));
    await writeFile(path.join(input, 'b.ndjson'), `${ndjson(docs.slice(100, 150))}{"number": "broken"\n`);
    await writeFile(path.join(input, 'c.json.gz'), gzipSync(JSON.stringify(docs.slice(150))));
    // Older versions of orders already read: newest wins across batches.
    await writeFile(
      path.join(input, 'd.ndjson'),
      ndjson(docs.slice(0, 30).map((d) => ({ ...d, updated_at: '2024-01-01T00:00:00Z' }))),
    );
  });
  after(() => cleanup());

  async function ingestWith(
    workers: number,
  ): Promise<{ summary: IngestSummary; tables: unknown; bookkeeping: unknown }> {
    const warehouse = await openWarehouse(path.join(dir, `workers-${workers}.duckdb`));
    try {
      const summary = await ingestPaths(warehouse, [input], {
        store: 'shop',
        runId: 'same',
        logger: silentLogger,
        workers,
        batchDocuments: 17,
        commitDocuments: 60,
      });
      const c = warehouse.connection;
      const tables = await snapshot(c);
      // Rebuilding from the landing, with as many workers, gives the same tables again.
      const rebuilt = await rebuildWarehouse(warehouse, { logger: silentLogger, workers });
      assert.equal(rebuilt.workers, workers, 'rebuild used the workers asked for');
      assert.deepEqual(await snapshot(c), tables, `rebuild with ${workers} workers`);
      const bookkeeping = {
        rejected: await tableRows(c, '_rejected_records', { exclude: ['_synced_at', '_run_id'] }),
        landing: await tableRows(c, '_raw_landing', { exclude: ['_synced_at', '_run_id'] }),
        ledger: await tableRows(c, '_ingested_files', { exclude: ['_synced_at', '_run_id', 'mtime'] }),
      };
      return { summary, tables, bookkeeping };
    } finally {
      await warehouse.close();
    }
  }

  it('gives the same tables, rejections, landing and ledger (and rebuild the same tables) with 1, 2 or 3 workers as on the main thread', async () => {
    const inline = await ingestWith(0);
    assert.equal(inline.summary.documents, 271);
    assert.equal(inline.summary.rejections, 1);
    assert.deepEqual(
      inline.summary.files.map((f) => [path.basename(f.path), f.documents, f.rejections]),
      [
        ['a.ndjson', 100, 0],
        ['b.ndjson', 51, 1],
        ['c.json.gz', 90, 0],
        ['d.ndjson', 30, 0],
      ],
    );
    for (const workers of [1, 2, 3]) {
      const shared = await ingestWith(workers);
      assert.equal(shared.summary.workers, workers, 'the files were read by the workers asked for');
      assert.deepEqual({ ...shared.summary, workers: 0 }, inline.summary, `${workers} workers: summary`);
      assert.deepEqual(shared.tables, inline.tables, `${workers} workers: tables`);
      assert.deepEqual(shared.bookkeeping, inline.bookkeeping, `${workers} workers: bookkeeping`);
    }
  });

  it('DuckDB gets the cores the workers leave (at least one) while they run, and its setting back after, also after a failure', async () => {
    const warehouse = await openWarehouse(path.join(dir, 'threads.duckdb'), { threads: 4 });
    const threads = async () => Number(await currentSetting(warehouse.connection, 'threads'));
    // The limit is logged when it is set: what each run set it to, while it ran.
    const { logger, values: limits } = loggedValues('duckdb_threads', 'threads');
    try {
      const restore = await warehouse.shareCores(os.availableParallelism(), logger);
      assert.equal(await threads(), 1, 'as many workers as cores leave DuckDB one thread');
      await restore();
      assert.equal(await threads(), 4);
      await (await warehouse.shareCores(0, logger))();
      assert.equal(await threads(), 4, 'no workers: nothing to share');
      limits.length = 0;
      const workers = os.availableParallelism();
      const options = { store: 'shop', runId: 'r', logger, workers };
      await ingestPaths(warehouse, [input], options);
      assert.equal(await threads(), 4, 'restored after the ingest');
      await rebuildWarehouse(warehouse, { logger, workers });
      assert.equal(await threads(), 4, 'restored after the rebuild');
      assert.deepEqual(limits, [1, 1], 'the ingest and the rebuild each ran DuckDB on one thread');
      // A gzip header followed by garbage: the worker fails part-way through the run.
      const broken = path.join(dir, 'broken.ndjson.gz');
      await writeFile(broken, Buffer.concat([gzipSync('{"x":1}\n').subarray(0, 10), Buffer.alloc(64, 7)]));
      await assert.rejects(
        ingestPaths(warehouse, [path.join(input, 'a.ndjson'), broken], options),
        /cannot read/,
      );
      assert.deepEqual(limits, [1, 1, 1]);
      assert.equal(await threads(), 4, 'restored after a failed ingest');
    } finally {
      await warehouse.close();
    }
  });

  it('a file it cannot read fails the run naming the file; earlier commits stay, the failed run leaves nothing', async () => {
    const { dir: other, cleanup: done } = await tempDir();
    try {
      const first = path.join(other, 'first.ndjson');
      await writeFile(first, ndjson([orderDoc(1), orderDoc(2)]));
      const warehouse = await openWarehouse(path.join(other, 'w.duckdb'));
      try {
        await ingestPaths(warehouse, [first], { store: 'shop', runId: 'one', logger: silentLogger });
        const broken = path.join(other, 'more');
        await mkdir(broken);
        await writeFile(path.join(broken, 'a.ndjson'), ndjson([orderDoc(3)]));
        await writeFile(path.join(broken, 'b.ndjson'), ndjson([orderDoc(4), orderDoc(5)]));
        // A gzip header followed by garbage: gunzip fails part-way.
        await writeFile(
          path.join(broken, 'c.ndjson.gz'),
          Buffer.concat([gzipSync('{"x":1}\n').subarray(0, 10), Buffer.alloc(64, 7)]),
        );
        const lines: string[] = [];
        const logger = createLogger({ write: (line: string) => lines.push(line) });
        // One document per batch: the end of a.ndjson is in a batch written before c.ndjson.gz fails.
        await assert.rejects(
          ingestPaths(warehouse, [broken], { store: 'shop', runId: 'two', logger, batchDocuments: 1 }),
          (error: unknown) =>
            error instanceof StoreSyncError && /cannot read .*c\.ndjson\.gz/.test(error.message),
        );
        // A file is logged as loaded when its documents commit: this run committed nothing.
        assert.deepEqual(
          lines.filter((l) => l.includes('ingest_file')),
          [],
        );
        const c = warehouse.connection;
        assert.equal(
          await count(c, 'orders'),
          2,
          'the first run stays; a.ndjson and b.ndjson of the failed run are rolled back',
        );
        assert.equal(await count(c, '_ingested_files'), 1);
      } finally {
        await warehouse.close();
      }
    } finally {
      await done();
    }
  });

  for (const workers of [0, 2]) {
    it(`a failure while a commit is due rolls back cleanly, and the warehouse stays usable (${workers} workers)`, {
      timeout: 30_000,
    }, async () => {
      const { dir: other, cleanup: done } = await tempDir();
      try {
        const folder = path.join(other, 'in');
        await mkdir(folder);
        await writeFile(
          path.join(folder, 'a.ndjson'),
          ndjson(Array.from({ length: 40 }, (_, i) => orderDoc(i + 1))),
        );
        await writeFile(
          path.join(folder, 'b.ndjson.gz'),
          Buffer.concat([gzipSync('{"x":1}\n').subarray(0, 10), Buffer.alloc(64, 7)]),
        );
        const warehouse = await openWarehouse(path.join(other, 'w.duckdb'));
        try {
          // Commits every other batch: the failure meets a batch that is about to commit.
          await assert.rejects(
            ingestPaths(warehouse, [folder], {
              store: 'shop',
              runId: 'race',
              logger: silentLogger,
              workers,
              batchDocuments: 5,
              commitDocuments: 10,
            }),
            /cannot read .*b\.ndjson\.gz/,
          );
          // A transaction left open by the failure would make this never return.
          const runId = await warehouse.startRun({
            store: 'shop',
            command: 'ingest',
            mode: 'incremental',
            streams: [],
          });
          assert.ok(runId);
          const c = warehouse.connection;
          const ledger = await tableRows(c, '_ingested_files');
          const stored = await count(c, 'orders');
          // Whatever was committed is consistent: the ledger says how far into a.ndjson the orders go.
          assert.equal(stored, ledger.length ? Number(ledger[0]!.documents) : 0);
        } finally {
          await warehouse.close();
        }
      } finally {
        await done();
      }
    });
  }

  it('reads a file only up to the size it had when the run was planned (a growing file reads the same in every worker)', async () => {
    const { dir: other, cleanup: done } = await tempDir();
    try {
      const file = path.join(other, 'growing.ndjson');
      const first = `${JSON.stringify(orderDoc(1))}\n`;
      await writeFile(file, `${first}${JSON.stringify(orderDoc(2))}\n`);
      const reader = new DocumentReader(file, Buffer.byteLength(first));
      const texts: string[] = [];
      for await (const piece of reader.pieces()) texts.push(piece.text);
      assert.deepEqual(
        texts.map((t) => (JSON.parse(t) as { number: string }).number),
        ['T-1'],
      );
      assert.equal(reader.bytesRead, Buffer.byteLength(first));
    } finally {
      await done();
    }
  });

  it("the batch that ends a file carries the digest of the file's planned bytes, also of one that grew after the plan", async () => {
    const { dir: other, cleanup: done } = await tempDir();
    try {
      // Two files; the second grew after the run was planned: its digest is of the planned bytes only.
      const first = path.join(other, 'first.ndjson');
      const growing = path.join(other, 'growing.ndjson');
      const firstBytes = Buffer.from(ndjson([orderDoc(1), orderDoc(2)]));
      const planned = Buffer.from(ndjson([orderDoc(3)]));
      await writeFile(first, firstBytes);
      await writeFile(growing, planned);
      const job = { store: 'shop', runId: 'r', firstSeq: 1, ...(await wholeFilePlan(first, 1)) };
      const second = { ...(await wholeFilePlan(growing, 1)).files[0]!, index: 1 };
      job.files.push(second);
      await writeFile(growing, Buffer.concat([planned, Buffer.from(ndjson([orderDoc(4)]))]));
      const digests = new Map<number, string | null>();
      await prepareInWorkers(job, 1, async (event) => {
        for (const progress of event.files)
          if (progress.done) digests.set(progress.index, progress.done.sha256);
        event.giveBack?.();
      });
      const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
      assert.deepEqual(
        digests,
        new Map([
          [0, sha256(firstBytes)],
          [1, sha256(planned)],
        ]),
      );
    } finally {
      await done();
    }
  });
});
