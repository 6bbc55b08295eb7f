import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { drainAfterSync, drainStoreRun } from '../../pipelines/drain.js';
import { openWarehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { deliverThroughReceiver } from '../../src/receive/loopback.js';
import { spoolFileName } from '../../src/receive/spool-files.js';
import { assertExit, killChildren, readWarehouse, runCli, startCli, waitForStderr } from '../cli/helpers.js';
import { orderEvent, tempDir } from './helpers.js';

/**
 * Draining: the hook a sync calls (drainAfterSync) on the warehouse it has open, and `ingest --spool` killed
 * in the middle of a drain and run again.
 */

/** Closed spool files, `perFile` order events each, numbered from `first`; returns the numbers. */
async function writeSpool(dir: string, files: number, perFile: number, first: number): Promise<number[]> {
  await mkdir(dir, { recursive: true });
  const numbers: number[] = [];
  for (let f = 0; f < files; f++) {
    const lines: string[] = [];
    for (let i = 0; i < perFile; i++) {
      const n = first + f * perFile + i;
      numbers.push(n);
      lines.push(JSON.stringify(orderEvent(n)));
    }
    await writeFile(path.join(dir, spoolFileName(Date.UTC(2024, 0, 1, 0, 0, f))), `${lines.join('\n')}\n`);
  }
  return numbers;
}

const orderNumbers = async (warehouse: string) =>
  (await readWarehouse<{ number: string }>(warehouse, 'SELECT number FROM orders ORDER BY number::INT')).map(
    (r) => Number(r.number),
  );

describe('draining the spool', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    killChildren();
    for (const cleanup of cleanups) await cleanup();
  });

  it('the sync hook drains into the open warehouse, records an ingest run, and reports a failure instead of throwing', async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const numbers = await writeSpool(spoolDir, 2, 5, 1);
    const file = path.join(dir, 'w.duckdb');
    const warehouse = await openWarehouse(file, { logger: silentLogger });
    try {
      const config = { receiver: undefined };
      const store = { name: 'main', receiver: null };
      assert.equal(await drainAfterSync(warehouse, config, store, { logger: silentLogger }), null);
      const receiver = {
        secretEnv: 'X',
        previousSecretEnv: null,
        signatureHeader: 'X-Platform-Signature',
        spoolDir,
        path: '/webhooks/main',
      };
      const result = await drainAfterSync(
        warehouse,
        config,
        { name: 'main', receiver },
        { logger: silentLogger },
      );
      assert.ok(result && 'drain' in result, JSON.stringify(result));
      assert.equal(result.drain.documents, 10);
      assert.deepEqual(
        result.drain.files.map((f) => [f.status, f.then]),
        [
          ['loaded', 'deleted'],
          ['loaded', 'deleted'],
        ],
      );
      assert.deepEqual(await readdir(spoolDir), []);
      // A spool "file" that cannot be removed (a folder by that name): the drain fails, the hook says so.
      await mkdir(path.join(spoolDir, spoolFileName(Date.UTC(2024, 0, 2))));
      const failed = await drainAfterSync(
        warehouse,
        config,
        { name: 'main', receiver },
        { logger: silentLogger },
      );
      assert.ok(failed && 'error' in failed, JSON.stringify(failed));
    } finally {
      await warehouse.close();
    }
    assert.deepEqual(await orderNumbers(file), numbers);
    const runs = await readWarehouse<{ command: string; outcome: string }>(
      file,
      'SELECT command, outcome FROM _sync_runs ORDER BY started_at',
    );
    assert.deepEqual(
      runs.map((r) => [r.command, r.outcome]),
      [
        ['ingest', 'succeeded'],
        ['ingest', 'failed'],
      ],
    );
  });

  it('the demo path: documents delivered as signed webhooks through a loopback receiver, then drained', async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const events = [40, 41, 42, 43, 44].map((n) => orderEvent(n));
    const { delivered } = await deliverThroughReceiver({
      store: 'demo',
      spoolDir,
      documents: events.map((e) => ({ data: e.data, apiVersion: String(e.api_version) })),
    });
    assert.equal(delivered, 5);
    const file = path.join(dir, 'w.duckdb');
    const warehouse = await openWarehouse(file, { logger: silentLogger });
    try {
      const drain = await drainStoreRun(warehouse, {}, { store: 'demo', spoolDir }, { logger: silentLogger });
      assert.equal(drain.documents, 5);
      assert.equal(drain.rejections, 0);
    } finally {
      await warehouse.close();
    }
    assert.deepEqual(await orderNumbers(file), [40, 41, 42, 43, 44]);
  });

  it('a drain killed at a random moment resumes exactly: every event loaded once', async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const spoolDir = path.join(dir, 'spool');
    const numbers = await writeSpool(spoolDir, 8, 150, 10_000);
    const warehouse = path.join(dir, 'w.duckdb');
    const args = ['ingest', '--spool', spoolDir, '--warehouse', warehouse, '--verbose'];
    for (let attempt = 0; attempt < 3; attempt++) {
      const run = startCli(args, { cwd: dir, timeoutMs: 120_000 });
      // Killed once a file or two are in, at a moment that varies.
      await waitForStderr(run, /receive\.drained_file/).catch(() => undefined);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 300));
      run.child.kill('SIGKILL');
      await run.done;
    }
    assertExit(await runCli(args, { cwd: dir }), 0);
    assert.deepEqual(await orderNumbers(warehouse), numbers);
    const [ledger] = await readWarehouse<{ documents: bigint; files: bigint }>(
      warehouse,
      "SELECT sum(documents) AS documents, count(*) AS files FROM _ingested_files WHERE status = 'complete'",
    );
    assert.equal(Number(ledger!.files), 8);
    assert.equal(Number(ledger!.documents), numbers.length, 'each spooled event was read once');
    assert.deepEqual(await readdir(spoolDir), []);
  });
});
