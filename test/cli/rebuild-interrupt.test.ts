import assert from 'node:assert/strict';
import { copyFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openWarehouse } from '../../src/load/index.js';
import { INGEST_BATCH_DOCUMENTS } from '../../src/load/runtime-profile.js';
import { dataTables, ident } from '../../src/model/index.js';
import { assertSameTables, compareWarehouses } from '../chaos/support/compare.js';
import { orderDoc } from '../warehouse/helpers.js';
import {
  assertExit,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
  waitForStderr,
} from './helpers.js';

/** The landing blocks of the 40,000 documents ingested below: a batch's documents are one block. */
const BLOCKS = Math.ceil(40000 / INGEST_BATCH_DOCUMENTS);

/**
 * `store-sync rebuild` is one transaction over the whole warehouse, and records its run in `_sync_runs` like
 * every command that writes the warehouse. Ctrl-C or SIGTERM rolls it back: the warehouse is exactly as it was,
 * the run is recorded as interrupted, and the command exits 1 saying so. A rebuild killed outright is marked
 * interrupted by the next writer. A failed rebuild's row survives its rollback. The rows re-derived by the
 * rebuild never touch `_sync_runs`, and each rebuild adds exactly one row.
 */

const FILES = 2;
const PER_FILE = 20_000;
/** Orders whose lines are deleted behind the warehouse's back: a completed rebuild brings them back. */
const LOST = 10;

interface Run {
  command: string;
  store: string | null;
  mode: string | null;
  streams: string[];
  outcome: string | null;
  error: string | null;
  finished: boolean;
}

describe('store-sync rebuild, recorded and interrupted', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  /** The warehouse as it was before any rebuild; each test starts from a copy of it. */
  let original: string;
  /** What the ingest that made the original warehouse reported storing. */
  let ingestedRows: number;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    const inbox = path.join(dir, 'inbox');
    const files: string[] = [];
    // 40,000 small orders in landing blocks of INGEST_BATCH_DOCUMENTS: a rebuild of a few seconds.
    for (let f = 0; f < FILES; f++) {
      const lines: string[] = [];
      for (let n = f * PER_FILE + 1; n <= (f + 1) * PER_FILE; n++) lines.push(JSON.stringify(orderDoc(n)));
      const file = `${inbox}-${f}.ndjson`;
      await writeFile(file, `${lines.join('\n')}\n`);
      files.push(file);
    }
    original = path.join(dir, 'original.duckdb');
    const ingest = await runCli(['ingest', ...files, '--warehouse', original, '--json']);
    assertExit(ingest, 0);
    ingestedRows = (JSON.parse(ingest.stdout) as { rows: number }).rows;
    // Lines lost from the tables (the raw landing still has them): a rebuild that completed would restore
    // them, so a warehouse that still lacks them was not rebuilt.
    const warehouse = await openWarehouse(original);
    try {
      const numbers = Array.from({ length: LOST }, (_, i) => `'T-${i + 1}'`).join(', ');
      await warehouse.connection.run(`DELETE FROM order_lines WHERE order_number IN (${numbers})`);
    } finally {
      await warehouse.close();
    }
  });

  after(async () => {
    killChildren();
    await cleanup();
  });

  const copy = async (name: string) => {
    const file = path.join(dir, `${name}.duckdb`);
    await copyFile(original, file);
    return file;
  };

  const runs = async (warehouse: string) =>
    (
      await readWarehouse<Omit<Run, 'streams'> & { streams: { items: string[] } | string[] }>(
        warehouse,
        'SELECT command, _store AS store, mode, streams, outcome, error, finished_at IS NOT NULL AS finished FROM _sync_runs ORDER BY started_at',
      )
    ).map((r) => ({ ...r, streams: Array.isArray(r.streams) ? r.streams : r.streams.items }) as Run);

  const orderLines = async (warehouse: string) => {
    const [{ n }] = (await readWarehouse(warehouse, 'SELECT count(*) AS n FROM order_lines')) as [
      { n: unknown },
    ];
    return Number(n);
  };

  const bookkeeping = (warehouse: string) =>
    readWarehouse(
      warehouse,
      'SELECT (SELECT count(*) FROM _raw_landing) AS blocks, (SELECT count(*) FROM _raw_landing_parts) AS parts, ' +
        '(SELECT count(*) FROM _rejected_records) AS rejections, (SELECT count(*) FROM _ingested_files) AS files',
    );

  /** The tables, the raw landing and the ledger are those of the original warehouse. */
  const assertUnchanged = async (warehouse: string, label: string) => {
    assertSameTables(await compareWarehouses(warehouse, original), label);
    assert.equal(
      await orderLines(warehouse),
      FILES * PER_FILE * 2 - LOST * 2,
      `${label}: lost lines still lost`,
    );
    assert.deepEqual(await bookkeeping(warehouse), await bookkeeping(original), label);
  };

  /** Run again, the rebuild completes, and restores the lines lost behind the warehouse's back. */
  const assertRebuildCompletes = async (warehouse: string) => {
    const again = await runCli(['rebuild', '--warehouse', warehouse]);
    assertExit(again, 0);
    assert.match(again.stdout, /^rebuilt \d+ tables from 40000 landed records: \d+ rows, 0 rejections$/m);
    assert.equal(
      await orderLines(warehouse),
      FILES * PER_FILE * 2,
      'the completed rebuild restored the lines',
    );
  };

  const ingestRun: Run = {
    command: 'ingest',
    store: 'main',
    mode: 'incremental',
    streams: ['documents'],
    outcome: 'succeeded',
    error: null,
    finished: true,
  };
  const rebuildRun = (outcome: string, error: string | null): Run => ({
    command: 'rebuild',
    store: null,
    mode: null,
    streams: ['documents'],
    outcome,
    error,
    finished: true,
  });

  it('a rebuild killed outright changes nothing, and the next writer marks its run interrupted', async () => {
    const warehouse = await copy('killed');
    const rebuild = startCli(['rebuild', '--warehouse', warehouse]);
    await waitForStderr(rebuild, /^rebuild_start /m);
    rebuild.child.kill('SIGKILL');
    const killed = await rebuild.done;
    assert.equal(killed.signal, 'SIGKILL');
    await assertUnchanged(warehouse, 'after the killed rebuild');
    assert.deepEqual(await runs(warehouse), [
      ingestRun,
      { ...rebuildRun('interrupted', null), outcome: null, finished: false },
    ]);

    await assertRebuildCompletes(warehouse);
    // One row for each rebuild, the killed one closed; the rebuild re-derived the tables, not the runs.
    assert.deepEqual(await runs(warehouse), [
      ingestRun,
      {
        ...rebuildRun(
          'interrupted',
          'the process ended before it recorded an outcome (killed, or stopped by a signal)',
        ),
        finished: false,
      },
      rebuildRun('succeeded', null),
    ]);
    const [{ counts }] = (await readWarehouse(
      warehouse,
      "SELECT counts::VARCHAR AS counts FROM _sync_runs WHERE command = 'rebuild' AND outcome = 'succeeded'",
    )) as [{ counts: string }];
    const { blocks, records, rows, rejections } = JSON.parse(counts) as Record<string, unknown>;
    // Rows are counted as they are stored. The ingest stores a customer seen in two batches twice; the
    // rebuild holds customers until its one commit (src/load/held-units.ts) and stores each once, so what it
    // reports is exactly what its tables hold, and at most what the ingest reported.
    assert.ok(ingestedRows > 40000, `the records made rows in several tables (${ingestedRows})`);
    assert.deepEqual({ blocks, records, rejections }, { blocks: BLOCKS, records: 40000, rejections: 0 });
    const tables = dataTables().map((def) => `(SELECT count(*) FROM ${ident(def.name)})`);
    const [{ held }] = (await readWarehouse(warehouse, `SELECT ${tables.join(' + ')} AS held`)) as [
      { held: unknown },
    ];
    assert.equal(rows, Number(held), 'the rebuild reports the rows its tables hold');
    assert.ok(Number(held) <= ingestedRows, `the rebuild stored ${held} rows, the ingest ${ingestedRows}`);
  });

  it('a failed rebuild is rolled back and its run recorded as failed, with the reason', async () => {
    const warehouse = await copy('failed');
    const tampered = await openWarehouse(warehouse);
    try {
      // The last block in a codec this version cannot read: the rebuild fails after replaying the others.
      await tampered.connection.run(
        "UPDATE _raw_landing SET codec = 'brotli-99' WHERE first_seq = (SELECT max(first_seq) FROM _raw_landing)",
      );
    } finally {
      await tampered.close();
    }
    const failed = await runCli(['rebuild', '--warehouse', warehouse]);
    assertExit(failed, 1);
    const reason =
      'rebuild failed, nothing changed: raw landing block uses codec brotli-99, which this version cannot read';
    assert.match(failed.stderr, new RegExp(`^error: ${reason}$`, 'm'));
    assertSameTables(await compareWarehouses(warehouse, original), 'after the failed rebuild');
    assert.equal(await orderLines(warehouse), FILES * PER_FILE * 2 - LOST * 2, 'lost lines still lost');
    assert.deepEqual(await runs(warehouse), [ingestRun, rebuildRun('failed', reason)]);
  });

  it('SIGINT rolls the rebuild back, records it as interrupted and exits 1; run again, it completes', async () => {
    const warehouse = await copy('sigint');
    const rebuild = startCli(['rebuild', '--warehouse', warehouse]);
    // The data tables have been dropped and recreated inside the transaction: the rollback must undo that.
    await waitForStderr(rebuild, new RegExp(`^rebuild_start blocks=${BLOCKS} records=40000 `, 'm'));
    rebuild.child.kill('SIGINT');
    const stopped = await rebuild.done;
    assertExit(stopped, 1);
    assert.match(
      stopped.stderr,
      /^WARN rebuild\.stopping: stopping and rolling the rebuild back, which leaves the warehouse as it was .*signal=SIGINT$/m,
    );
    assert.match(
      stopped.stderr,
      /^error: interrupted by SIGINT; the rebuild was rolled back and the warehouse is unchanged\. Run it again: a rebuild starts over from the raw landing\.$/m,
    );
    assert.doesNotMatch(stopped.stderr, /rebuild_done/);
    assert.equal(stopped.stdout, '', 'no "rebuilt" line for a rebuild that was rolled back');
    await assertUnchanged(warehouse, 'after the stopped rebuild');
    assert.deepEqual(await runs(warehouse), [
      ingestRun,
      rebuildRun('interrupted', 'stopped by SIGINT; the rebuild was rolled back'),
    ]);

    await assertRebuildCompletes(warehouse);
    assert.deepEqual(await runs(warehouse), [
      ingestRun,
      rebuildRun('interrupted', 'stopped by SIGINT; the rebuild was rolled back'),
      rebuildRun('succeeded', null),
    ]);
  });

  it('SIGTERM part-way through the blocks rolls back the blocks already written', async () => {
    const warehouse = await copy('sigterm');
    const rebuild = startCli(['rebuild', '--warehouse', warehouse]);
    await waitForStderr(rebuild, /^rebuild_start /m);
    // A few blocks into the replay (each takes a few hundred milliseconds).
    await new Promise((resolve) => setTimeout(resolve, 200));
    rebuild.child.kill('SIGTERM');
    const stopped = await rebuild.done;
    assertExit(stopped, 1);
    assert.match(stopped.stderr, /^WARN rebuild_rolled_back blocks=\d+ /m);
    assert.match(stopped.stderr, /^error: interrupted by SIGTERM; the rebuild was rolled back/m);
    await assertUnchanged(warehouse, 'after the rebuild stopped by SIGTERM');
    assert.deepEqual(await runs(warehouse), [
      ingestRun,
      rebuildRun('interrupted', 'stopped by SIGTERM; the rebuild was rolled back'),
    ]);
  });

  it('a signal that comes once the rebuild is committing stops nothing: it completes, says so, and exits 0', async () => {
    const warehouse = await copy('committing');
    const rebuild = startCli(['rebuild', '--warehouse', warehouse, '--verbose']);
    await waitForStderr(rebuild, /^DEBUG rebuild_committing /m);
    rebuild.child.kill('SIGTERM');
    const done = await rebuild.done;
    assertExit(done, 0);
    assert.match(done.stderr, /^WARN rebuild\.stopping: /m);
    assert.match(
      done.stderr,
      /^WARN rebuild\.not_stopped: the rebuild was already committing when the signal came, and completed signal=SIGTERM$/m,
    );
    assert.match(done.stdout, /^rebuilt \d+ tables from 40000 landed records: \d+ rows, 0 rejections$/m);
    assert.equal(await orderLines(warehouse), FILES * PER_FILE * 2, 'the rebuild was committed');
    assert.deepEqual(await runs(warehouse), [ingestRun, rebuildRun('succeeded', null)]);
  });
});
