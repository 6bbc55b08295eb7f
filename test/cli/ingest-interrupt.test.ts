import assert from 'node:assert/strict';
import { appendFile, copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { INGEST_BATCH_DOCUMENTS } from '../../src/load/runtime-profile.js';
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

/**
 * Ctrl-C and SIGTERM during `store-sync ingest`: the run stops at the next batch boundary, commits what it
 * read with each file's position, records the run as interrupted, prints its summary and exits 1; the same
 * command then resumes, and the tables equal those of a run that was never stopped. A producer that keeps
 * stdin open does not keep a stopped run waiting.
 */

interface IngestJson {
  files: { path: string; status: string; documents: number }[];
  documents: number;
  interrupted: boolean;
}

const FILES = 4;
const PER_FILE = 20_000;

describe('store-sync ingest, interrupted', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let inbox: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    inbox = path.join(dir, 'inbox');
    await mkdir(inbox);
    // 80,000 small orders, about 40 MB: read by worker threads, in 16 batches of 5,000.
    for (let f = 0; f < FILES; f++) {
      const lines: string[] = [];
      for (let n = f * PER_FILE + 1; n <= (f + 1) * PER_FILE; n++) lines.push(JSON.stringify(orderDoc(n)));
      await writeFile(path.join(inbox, `orders-${f}.ndjson`), `${lines.join('\n')}\n`);
    }
  });

  after(async () => {
    killChildren();
    await cleanup();
  });

  const runs = (warehouse: string) =>
    readWarehouse<{ outcome: string }>(warehouse, 'SELECT outcome FROM _sync_runs ORDER BY started_at');

  it('SIGINT commits what was read and exits 1; the same command resumes to the tables of an unbroken run', async () => {
    const warehouse = path.join(dir, 'stopped.duckdb');
    const args = ['ingest', '--json', inbox, '--warehouse', warehouse];
    const ingest = startCli([...args, '--verbose']);
    // The first batch has been accepted: it is written, and the stop commits it.
    await waitForStderr(
      ingest,
      new RegExp(`^DEBUG ingest_batch batch=0 documents=${INGEST_BATCH_DOCUMENTS}$`, 'm'),
    );
    ingest.child.kill('SIGINT');
    const stopped = await ingest.done;
    assertExit(stopped, 1);
    assert.match(stopped.stderr, /^WARN ingest\.stopping: stopping after the batch being written/m);
    const summary = JSON.parse(stopped.stdout) as IngestJson;
    assert.equal(summary.interrupted, true);
    assert.ok(
      summary.documents >= INGEST_BATCH_DOCUMENTS && summary.documents < FILES * PER_FILE,
      stopped.stdout,
    );
    assert.match(
      stopped.stderr,
      new RegExp(
        `^error: interrupted by SIGINT after ${summary.documents} documents, which are committed\\. Run the same command again: it resumes where this one stopped\\.$`,
        'm',
      ),
    );
    const statuses = summary.files.map((f) => f.status);
    assert.ok(statuses.includes('interrupted') || statuses.includes('not_started'), stopped.stdout);
    assert.equal(
      summary.files.reduce((n, f) => n + f.documents, 0),
      summary.documents,
      'the files add up to the run',
    );
    // What the summary says was committed is what the warehouse holds, and the run is recorded as stopped.
    const [{ n }] = (await readWarehouse(warehouse, 'SELECT count(*) AS n FROM orders')) as [{ n: number }];
    assert.equal(Number(n), summary.documents);
    assert.deepEqual(await runs(warehouse), [{ outcome: 'interrupted' }]);

    const resumed = await runCli(args);
    assertExit(resumed, 0);
    const rest = JSON.parse(resumed.stdout) as IngestJson;
    assert.equal(rest.interrupted, false);
    assert.equal(summary.documents + rest.documents, FILES * PER_FILE, 'nothing is read twice');
    for (const [i, file] of rest.files.entries()) {
      const before = summary.files[i]!.status;
      const expected = before === 'loaded' ? 'unchanged' : before === 'interrupted' ? 'resumed' : 'loaded';
      assert.equal(file.status, expected, `${file.path} was ${before}`);
    }
    assert.deepEqual(await runs(warehouse), [{ outcome: 'interrupted' }, { outcome: 'succeeded' }]);

    const reference = path.join(dir, 'reference.duckdb');
    assertExit(await runCli(['ingest', inbox, '--warehouse', reference]), 0);
    assertSameTables(await compareWarehouses(warehouse, reference), 'stopped, then resumed');
  });

  it('a file the stopped run was inside, appended to since, is resumed where the run stopped', async () => {
    // A capture still being written: the stop keeps the hash of what was read of each file it was inside, so
    // the next run reads only the rest and what was appended, rather than the whole file again.
    const growing = path.join(dir, 'growing');
    await mkdir(growing);
    const sizes = [12_345, 12_345, 12_345];
    let next = 1;
    for (const [f, size] of sizes.entries()) {
      const lines = Array.from({ length: size }, () => JSON.stringify(orderDoc(next++)));
      await writeFile(path.join(growing, `capture-${f}.ndjson`), `${lines.join('\n')}\n`);
    }
    const warehouse = path.join(dir, 'growing.duckdb');
    const args = ['ingest', '--json', growing, '--warehouse', warehouse];
    const ingest = startCli([...args, '--verbose']);
    await waitForStderr(
      ingest,
      new RegExp(`^DEBUG ingest_batch batch=0 documents=${INGEST_BATCH_DOCUMENTS}$`, 'm'),
    );
    ingest.child.kill('SIGTERM');
    const stopped = await ingest.done;
    assertExit(stopped, 1);
    const summary = JSON.parse(stopped.stdout) as IngestJson;
    const inside = summary.files.findIndex((f) => f.status === 'interrupted');
    assert.ok(inside >= 0, `the run stopped inside a file: ${stopped.stdout}`);
    const [{ sha256 }] = (await readWarehouse(
      warehouse,
      `SELECT sha256 FROM _ingested_files WHERE status = 'partial'`,
    )) as [{ sha256: string | null }];
    assert.match(String(sha256), /^[0-9a-f]{64}$/, 'the stopped file keeps the hash of what was read');
    const stoppedCopy = path.join(dir, 'growing-copy.duckdb');
    await copyFile(warehouse, stoppedCopy);

    const appended = Array.from({ length: 1000 }, () => JSON.stringify(orderDoc(next++)));
    await appendFile(summary.files[inside]!.path, `${appended.join('\n')}\n`);
    const resumed = await runCli(args);
    assertExit(resumed, 0);
    const rest = JSON.parse(resumed.stdout) as IngestJson;
    assert.equal(rest.files[inside]!.status, 'resumed');
    assert.equal(
      rest.files[inside]!.documents,
      sizes[inside]! - summary.files[inside]!.documents + 1000,
      'only the unread documents and the appended ones are read',
    );
    assert.equal(summary.documents + rest.documents, next - 1, 'nothing is read twice');

    const reference = path.join(dir, 'growing-reference.duckdb');
    assertExit(await runCli(['ingest', growing, '--warehouse', reference]), 0);
    assertSameTables(await compareWarehouses(warehouse, reference), 'stopped, appended to, then resumed');

    // Changed before the point the stopped run reached, the file is read again whole.
    const capture = summary.files[inside]!.path;
    const [, ...others] = (await readFile(capture, 'utf8')).split('\n');
    await writeFile(capture, [JSON.stringify(orderDoc(next++)), ...others].join('\n'));
    const again = await runCli(['ingest', '--json', growing, '--warehouse', stoppedCopy]);
    assertExit(again, 0);
    const whole = JSON.parse(again.stdout) as IngestJson;
    assert.equal(whole.files[inside]!.status, 'loaded');
    assert.equal(whole.files[inside]!.documents, sizes[inside]! + 1000);
  });

  it('SIGTERM stops a run whose stdin stays open, committing every document it read', async () => {
    const warehouse = path.join(dir, 'stdin.duckdb');
    const documents = Array.from({ length: 6000 }, (_, i) => JSON.stringify(orderDoc(i + 1))).join('\n');
    // The producer has written 6,000 documents and neither writes more nor closes the pipe.
    const ingest = startCli(['ingest', '--json', '-', '--warehouse', warehouse, '--verbose'], {
      input: `${documents}\n`,
      holdStdin: true,
      timeoutMs: 60_000,
    });
    await waitForStderr(
      ingest,
      new RegExp(`^DEBUG ingest_batch batch=0 documents=${INGEST_BATCH_DOCUMENTS}$`, 'm'),
    );
    // Every document has been handed to the pipe. How many of them the run has read when the signal comes is
    // up to the machine (the pipe holds 64 KB it may not have taken yet): what it read is what it reports
    // and commits.
    await new Promise<void>((resolve) => ingest.child.stdin!.write('', () => resolve()));
    ingest.child.kill('SIGTERM');
    const stopped = await ingest.done;
    assertExit(stopped, 1);
    const summary = JSON.parse(stopped.stdout) as IngestJson;
    const read = summary.documents;
    // The batch being read when the signal came (after batch 0) is committed too: stdin cannot be read again
    // (a file's would be dropped, and the next run would resume it).
    assert.ok(read > INGEST_BATCH_DOCUMENTS && read <= 6000, stopped.stdout);
    assert.match(
      stopped.stderr,
      new RegExp(
        `^error: interrupted by SIGTERM after ${read} documents, which are committed\\. stdin is not remembered: piping it again reads it from the start\\.$`,
        'm',
      ),
    );
    assert.deepEqual(
      { interrupted: summary.interrupted, files: summary.files },
      { interrupted: true, files: [{ path: '-', status: 'interrupted', documents: read, rejections: 0 }] },
    );
    const [{ n }] = (await readWarehouse(warehouse, 'SELECT count(*) AS n FROM orders')) as [{ n: number }];
    assert.equal(Number(n), read);
    assert.deepEqual(await runs(warehouse), [{ outcome: 'interrupted' }]);
  });

  it('a signal that comes once every batch is written stops nothing: the ingest completes, says so, and exits 0', async () => {
    const warehouse = path.join(dir, 'committing.duckdb');
    const ingest = startCli(['ingest', '--json', inbox, '--warehouse', warehouse, '--verbose']);
    await waitForStderr(ingest, /^DEBUG ingest_committing /m);
    ingest.child.kill('SIGTERM');
    const done = await ingest.done;
    assertExit(done, 0);
    assert.match(done.stderr, /^WARN ingest\.stopping: /m);
    assert.match(
      done.stderr,
      /^WARN ingest\.not_stopped: the ingest had read every input when the signal came, and completed signal=SIGTERM$/m,
    );
    const summary = JSON.parse(done.stdout) as IngestJson;
    assert.equal(summary.interrupted, false);
    assert.equal(summary.documents, FILES * PER_FILE);
    assert.deepEqual(await runs(warehouse), [{ outcome: 'succeeded' }]);
  });
});
