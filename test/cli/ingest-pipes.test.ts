import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { closeSync, constants, createWriteStream, openSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { finished } from 'node:stream/promises';
import { after, before, describe, it } from 'node:test';
import { orderDoc } from '../warehouse/helpers.js';
import {
  assertCleanError,
  assertExit,
  BIN,
  type CliResult,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
  waitForStderr,
} from './helpers.js';

/**
 * Ingest from pipes (docs/reliability.md, "Hardening"): an input that is not a regular file (`<(…)`, a named
 * pipe) must not be read as an empty file (its size is 0), which would exit 0 with no documents and record
 * `/dev/fd/63` as complete. It is read like stdin: streamed on the main thread, its ledger entry named by its
 * content hash. With it, `--max-document-bytes`.
 */

interface IngestJson {
  files: { path: string; status: string; documents: number }[];
  documents: number;
  rejections: number;
}

const DOCUMENTS = 10_000;

describe('store-sync ingest from pipes', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let orders: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    orders = path.join(dir, 'orders.ndjson');
    const lines: string[] = [];
    for (let n = 1; n <= DOCUMENTS; n++) lines.push(JSON.stringify(orderDoc(n)));
    await writeFile(orders, `${lines.join('\n')}\n`);
  });

  after(async () => {
    killChildren();
    await cleanup();
  });

  const loaded = async (warehouse: string) => {
    const [row] = await readWarehouse<{ n: bigint }>(warehouse, 'SELECT count(*) AS n FROM orders');
    return Number(row!.n);
  };
  const ledger = (warehouse: string) =>
    readWarehouse<{ path: string; status: string; documents: bigint; size: bigint }>(
      warehouse,
      'SELECT path, status, documents, size FROM _ingested_files ORDER BY path',
    );

  it('reads a process substitution <(cat file) whole', async () => {
    const warehouse = path.join(dir, 'substitution.duckdb');
    const script = `exec "${process.execPath}" "${BIN}" ingest --json <(cat "${orders}") --warehouse "${warehouse}"`;
    const child = spawn('bash', ['-c', script], {
      cwd: REPO_ROOT,
      env: { PATH: process.env.PATH, HOME: process.env.HOME },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    const result: CliResult = {
      args: ['ingest', '<(cat orders.ndjson)'],
      code,
      signal: null,
      stdout,
      stderr,
    };
    assertExit(result, 0);
    const summary = JSON.parse(stdout) as IngestJson;
    assert.equal(summary.documents, DOCUMENTS);
    assert.match(summary.files[0]!.path, /^\/dev\/fd\/\d+$/);
    assert.equal(await loaded(warehouse), DOCUMENTS);
    const [entry] = await ledger(warehouse);
    const sha = execFileSync('sha256sum', [orders]).toString().split(' ')[0];
    assert.equal(entry!.path, `stream:${sha}:${summary.files[0]!.path}`);
    assert.equal(entry!.status, 'complete');
    assert.equal(Number(entry!.documents), DOCUMENTS);
  });

  it('reads a named pipe whole, and again when it is fed again', async () => {
    const warehouse = path.join(dir, 'fifo.duckdb');
    const fifo = path.join(dir, 'orders.fifo');
    execFileSync('mkfifo', [fifo]);
    for (const round of [1, 2]) {
      const run = startCli(['ingest', '--json', fifo, '--warehouse', warehouse]);
      // Opening the pipe for writing waits for the command to open it for reading.
      const writer = createWriteStream(fifo);
      const written = finished(writer).catch((error: Error) => error);
      writer.end(await readFile(orders));
      const result = await run.done;
      // A command that never opens the pipe (it once took it for an empty file) leaves the writer waiting in
      // its open: this releases it (into EPIPE), so the test fails instead of hanging.
      try {
        closeSync(openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK));
      } catch {
        // Nobody was waiting.
      }
      assert.equal(await written, undefined, 'the command read all that was written');
      assertExit(result, 0);
      const summary = JSON.parse(result.stdout) as IngestJson;
      assert.deepEqual(summary.files, [
        { path: fifo, status: 'loaded', documents: DOCUMENTS, rejections: 0 },
      ]);
      assert.equal(await loaded(warehouse), DOCUMENTS, `round ${round}`);
    }
    // Named by content: the second reading replaced the first's entry.
    const entries = await ledger(warehouse);
    assert.equal(entries.length, 1);
    assert.match(entries[0]!.path, new RegExp(`^stream:[0-9a-f]{64}:${fifo}$`));
  });

  it('a stop while a named pipe has no writer yet ends the run (exit 1) instead of waiting for one', async () => {
    const warehouse = path.join(dir, 'waiting.duckdb');
    const fifo = path.join(dir, 'nobody.fifo');
    execFileSync('mkfifo', [fifo]);
    const run = startCli(['ingest', '--json', fifo, '--warehouse', warehouse, '--verbose'], {
      timeoutMs: 30_000,
    });
    await waitForStderr(run, /ingest_planned/);
    // Then it opens the pipe, and waits there.
    await new Promise((resolve) => setTimeout(resolve, 500));
    run.child.kill('SIGINT');
    const result = await run.done;
    assertExit(result, 1);
    assert.match(result.stderr, /interrupted by SIGINT after 0 documents.*pipes are not remembered/);
    const summary = JSON.parse(result.stdout) as IngestJson;
    assert.equal(summary.files[0]!.status, 'not_started');
  });

  it('--max-document-bytes rejects a larger document with its size and loads the rest (exit 3)', async () => {
    const warehouse = path.join(dir, 'limit.duckdb');
    const file = path.join(dir, 'mixed.ndjson');
    const big = JSON.stringify({ ...orderDoc(2), note: 'n'.repeat(5000) });
    await writeFile(file, `${JSON.stringify(orderDoc(1))}\n${big}\n${JSON.stringify(orderDoc(3))}\n`);
    const result = await runCli([
      'ingest',
      '--json',
      file,
      '--warehouse',
      warehouse,
      '--max-document-bytes',
      '4096',
    ]);
    assertExit(result, 3);
    assert.equal(await loaded(warehouse), 2);
    const [rejected] = await readWarehouse<{ reason: string }>(
      warehouse,
      'SELECT reason FROM _rejected_records',
    );
    assert.match(
      rejected!.reason,
      new RegExp(`^document too large: ${big.length} bytes from byte \\d+, over the limit of 4096 bytes`),
    );
    const bad = await runCli(['ingest', file, '--warehouse', warehouse, '--max-document-bytes', '0']);
    assertCleanError(bad, 2, /max-document-bytes/);
  });
});
