import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, watch } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { openWarehouse } from '../../src/load/index.js';
import { publishingPath } from '../../src/load/read-copy.js';
import type { Logger } from '../../src/log.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  killChildren,
  REPO_ROOT,
  runCli,
  startCli,
  startGatedProxy,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * Issue 28, the published read copy and --wait-for-lock, through the CLI against the embedded sandbox: every
 * run publishes `<warehouse>.read.duckdb`; readers holding it open are never in a writer's way; `query` and
 * `status` read it (and say so) while a sync holds the warehouse; a writer killed while publishing leaves the
 * previous copy whole; a writer waits for another with --wait-for-lock.
 */

const sha256 = async (file: string) =>
  createHash('sha256')
    .update(await readFile(file))
    .digest('hex');

/** One value of a read-only query on a DuckDB file, opened and closed here. */
async function scalar(file: string, sql: string): Promise<string> {
  const instance = await DuckDBInstance.create(file, { access_mode: 'READ_ONLY' });
  try {
    const connection = await instance.connect();
    const reader = await connection.runAndReadAll(sql);
    connection.closeSync();
    return String(reader.getRows()[0]![0]);
  } finally {
    instance.closeSync();
  }
}

describe('store-sync: the published read copy (issue 28)', () => {
  let sandbox: Sandbox;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    sandbox = await testSandbox();
  });
  after(async () => {
    killChildren();
    await sandbox.close();
    for (const cleanup of cleanups) await cleanup();
  });

  /** A folder with a config for the sandbox (or `baseUrl`) and `extra` settings; the warehouse is w.duckdb. */
  async function job(extra: Record<string, unknown> = {}, baseUrl = sandbox.baseUrl) {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const warehouse = path.join(dir, 'w.duckdb');
    const config = await writeConfig(dir, { warehouse, stores: [{ name: 'shop', baseUrl }], ...extra });
    return { dir, warehouse, copy: path.join(dir, 'w.read.duckdb'), config };
  }

  it('a sync publishes the copy beside the warehouse, with the same rows; --read-copy reads it and says so', async () => {
    const { warehouse, copy, config } = await job();
    const sync = await runCli(['sync', '--config', config, '--log-format', 'json']);
    assertExit(sync, 0);
    assert.match(sync.stderr, /"event":"read_copy\.published".*"method":"file-copy"/);
    assert.equal(existsSync(publishingPath(copy)), false, 'no temporary file is left');
    const sql = 'SELECT count(*) FROM subscriptions';
    const inWarehouse = await scalar(warehouse, sql);
    assert.ok(Number(inWarehouse) > 0);
    assert.equal(await scalar(copy, sql), inWarehouse);
    // The last run is in the copy too: the snapshot is taken after it is recorded.
    assert.equal(
      await scalar(copy, "SELECT count(*) FROM _sync_runs WHERE outcome = 'succeeded'"),
      await scalar(warehouse, "SELECT count(*) FROM _sync_runs WHERE outcome = 'succeeded'"),
    );
    const query = await runCli(['query', sql, '--format', 'csv', '--config', config, '--read-copy']);
    assertExit(query, 0);
    assert.equal(query.stdout.trim().split('\n')[1], inWarehouse);
    assert.match(query.stderr, new RegExp(`reading the read copy ${copy}, published \\d+ s ago`));
  });

  it('readCopy.enabled false publishes nothing, and --read-copy says there is no copy', async () => {
    const { copy, config } = await job({ readCopy: { enabled: false } });
    assertExit(await runCli(['sync', '--config', config]), 0);
    assert.equal(existsSync(copy), false);
    assertCleanError(
      await runCli(['status', '--config', config, '--read-copy']),
      2,
      /--read-copy: there is no read copy at .*w\.read\.duckdb yet/,
    );
  });

  it('query and status during a running sync read the copy, exit 0 and say how old it is', async () => {
    const gate = await startGatedProxy(sandbox);
    try {
      const { config } = await job({}, gate.baseUrl);
      assertExit(await runCli(['sync', '--config', config]), 0);
      gate.shut();
      const running = startCli(['sync', '--config', config, '--log-format', 'json']);
      // The run has opened the warehouse and recorded itself; its first request waits at the gate.
      await waitForStderr(running, /"event":"sync\.start"/);
      const writer = running.child.pid!;
      const note = new RegExp(
        `reading the read copy .*w\\.read\\.duckdb, published \\d+ (s|min) ago \\(the warehouse is being written by pid ${writer}\\)`,
      );
      const query = await runCli(['query', 'SELECT count(*) AS n FROM subscriptions', '--config', config]);
      assertExit(query, 0);
      assert.match(query.stderr, note);
      assert.match(query.stdout, /\b[1-9]\d*\b/);
      const status = await runCli(['status', '--config', config]);
      assertExit(status, 0);
      assert.match(status.stderr, note);
      assert.match(status.stdout, /subscriptions/);
      const exported = await runCli([
        'export',
        '--config',
        config,
        '--out',
        path.join(path.dirname(config), 'pq'),
      ]);
      assertExit(exported, 0);
      assert.match(exported.stderr, note);
      const report = await runCli(['report', '--config', config]);
      assertExit(report, 0);
      assert.match(report.stderr, note);
      const html = await readFile(report.stdout.trim(), 'utf8');
      assert.ok(html.includes('w.read.duckdb'), 'the report names the read copy it was made from');
      assert.ok(gate.waiting() > 0, 'the sync was still held at the gate while the readers ran');
      gate.open();
      assertExit(await running.done, 0);
    } finally {
      gate.open();
      await gate.close();
    }
  });

  it('a reader holding the copy open sees one snapshot while three syncs run and publish back to back', async () => {
    const { warehouse, copy, config } = await job();
    assertExit(await runCli(['sync', '--config', config]), 0);
    // A DuckDB client of an analyst, in another process, left open on the copy.
    const reader = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         const instance = await DuckDBInstance.create(${JSON.stringify(copy)}, { access_mode: 'READ_ONLY' });
         const connection = await instance.connect();
         const count = async () => String((await connection.runAndReadAll('SELECT count(*) FROM subscriptions')).getRows()[0][0]);
         process.stdout.write(await count() + '\\n');
         process.stdin.on('data', async () => process.stdout.write(await count() + '\\n'));`,
      ],
      { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    const answers: string[] = [];
    let pending: (() => void) | null = null;
    reader.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      answers.push(...chunk.trim().split('\n'));
      pending?.();
    });
    const nextAnswer = async () => {
      const seen = answers.length;
      if (seen > 0) reader.stdin.write('again\n');
      while (answers.length === seen) await new Promise<void>((resolve) => (pending = resolve));
      return answers.at(-1)!;
    };
    try {
      const first = await nextAnswer();
      // A replaced file's inode is freed when nothing holds it, so a later copy may reuse the number: what
      // proves a new file is that each differs from the one it replaced (which still existed when it was made).
      let previous = (await stat(copy)).ino;
      let published = 0;
      for (let round = 1; round <= 3; round += 1) {
        // Each run has something new to load, so each copy differs from the one the reader holds.
        sandbox.store.mutate({ createSubscriptions: 2, seed: 100 + round });
        assertExit(await runCli(['sync', '--config', config]), 0);
        assert.equal(await nextAnswer(), first, `the reader's snapshot after sync ${round}`);
        const now = (await stat(copy)).ino;
        if (now !== previous) published += 1;
        previous = now;
        assert.equal(
          await scalar(copy, 'SELECT count(*) FROM subscriptions'),
          await scalar(warehouse, 'SELECT count(*) FROM subscriptions'),
          `the copy published by sync ${round} is the warehouse's state`,
        );
      }
      assert.equal(published, 3, 'each run published a new file');
      assert.equal(
        Number(await scalar(copy, 'SELECT count(*) FROM subscriptions')),
        Number(first) + 6,
        'the newest copy has the six subscriptions created meanwhile',
      );
    } finally {
      reader.kill();
    }
  });

  it('a write-ahead log a crashed client left beside the copy is not replayed onto the next copy', async () => {
    const { warehouse, copy, config } = await job();
    assertExit(await runCli(['sync', '--config', config]), 0);
    // A client opened the copy for writing, changed it, and was killed before its checkpoint: its WAL stays.
    const crashed = await new Promise<NodeJS.Signals | null>((resolve) => {
      const child = spawn(
        process.execPath,
        [
          '--input-type=module',
          '-e',
          `import { DuckDBInstance } from '@duckdb/node-api';
           const instance = await DuckDBInstance.create(${JSON.stringify(copy)}, { checkpoint_threshold: '1GB' });
           const connection = await instance.connect();
           await connection.run('CREATE TABLE scribbles AS SELECT 1 AS x');
           await connection.run('DELETE FROM subscriptions');
           process.kill(process.pid, 'SIGKILL');`,
        ],
        { cwd: REPO_ROOT, stdio: 'inherit' },
      );
      child.on('close', (_code, signal) => resolve(signal));
    });
    assert.equal(crashed, 'SIGKILL');
    assert.ok(existsSync(`${copy}.wal`), 'the killed client left its write-ahead log');
    assertExit(await runCli(['sync', '--config', config]), 0);
    assert.equal(existsSync(`${copy}.wal`), false);
    assert.equal(
      await scalar(copy, 'SELECT count(*) FROM subscriptions'),
      await scalar(warehouse, 'SELECT count(*) FROM subscriptions'),
    );
    assert.equal(
      await scalar(copy, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'scribbles'"),
      '0',
    );
  });

  it('readCopy.storageCompatibility writes the copy in DuckDB 1.0 storage, which opens', async () => {
    const { copy, config } = await job({ readCopy: { storageCompatibility: 'v1.0.0' } });
    const sync = await runCli(['sync', '--config', config, '--log-format', 'json']);
    assertExit(sync, 0);
    assert.match(sync.stderr, /"event":"read_copy\.published".*"method":"copy-from-database"/);
    assert.equal(
      await scalar(copy, "SELECT tags['storage_version'] FROM duckdb_databases() WHERE path IS NOT NULL"),
      'v1.0.0+',
    );
    // The header's storage version number: 64 is the format DuckDB 1.0 to 1.1 write (the warehouse's is newer).
    const header = await readFile(copy);
    assert.equal(header.toString('latin1', 8, 12), 'DUCK');
    assert.equal(header.readBigUInt64LE(12), 64n);
    const query = await runCli([
      'query',
      'SELECT count(*) FROM subscriptions',
      '--config',
      config,
      '--read-copy',
    ]);
    assertExit(query, 0);
  });

  it('a writer killed while publishing leaves the previous copy whole, and the next run publishes', async () => {
    // Written by COPY FROM DATABASE (an older format), a publish takes long enough to be caught midway.
    const { dir, copy, config } = await job({ readCopy: { storageCompatibility: 'v1.0.0' } });
    assertExit(await runCli(['sync', '--config', config]), 0);
    const before = await sha256(copy);
    const count = await scalar(copy, 'SELECT count(*) FROM subscriptions');
    sandbox.store.mutate({ createSubscriptions: 5, seed: 7 });
    const run = startCli(['sync', '--config', config]);
    const temporary = path.basename(publishingPath(copy));
    // Killed the moment the temporary copy appears.
    await new Promise<void>((resolve) => {
      const watcher = watch(dir, (_event, name) => {
        if (name === temporary && existsSync(publishingPath(copy))) {
          run.child.kill('SIGKILL');
          watcher.close();
          resolve();
        }
      });
    });
    const killed = await run.done;
    assert.equal(killed.signal, 'SIGKILL');
    assert.ok(existsSync(publishingPath(copy)), 'the kill came while the copy was being written');
    assert.equal(await sha256(copy), before, 'the previous copy is unchanged');
    assert.equal(await scalar(copy, 'SELECT count(*) FROM subscriptions'), count);
    const next = await runCli(['sync', '--config', config, '--log-format', 'json']);
    assertExit(next, 0);
    assert.match(next.stderr, /"event":"read_copy\.published"/);
    assert.equal(existsSync(publishingPath(copy)), false, 'the half-written file is gone');
    assert.notEqual(await sha256(copy), before);
    assert.equal(Number(await scalar(copy, 'SELECT count(*) FROM subscriptions')), Number(count) + 5);
  });

  it('--wait-for-lock waits for the writer that holds the warehouse and then runs', async () => {
    const { warehouse, config } = await job();
    assertExit(await runCli(['sync', '--config', config]), 0);
    // Another writer: this test process holds the warehouse's lock.
    const holder = await openWarehouse(warehouse);
    let released = false;
    try {
      const refused = await runCli(['sync', '--config', config]);
      assertCleanError(
        refused,
        2,
        new RegExp(`another store-sync process \\(pid ${process.pid}\\) is writing`),
      );
      const waiting = startCli(['sync', '--config', config, '--wait-for-lock', '60', '--log-format', 'json']);
      await waitForStderr(waiting, /"event":"warehouse\.waiting_for_lock"/);
      await holder.close();
      released = true;
      const done = await waiting.done;
      assertExit(done, 0);
      assert.match(done.stderr, /"event":"sync\.done"/);
    } finally {
      if (!released) await holder.close();
    }
  });

  it('a writer gives up when --wait-for-lock runs out, saying how long it waited', async () => {
    const { warehouse, config } = await job();
    assertExit(await runCli(['sync', '--config', config]), 0);
    // A writer in another process holds the lock: a child that opens the warehouse and waits on stdin.
    const child = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import { DuckDBInstance } from '@duckdb/node-api';
         const instance = await DuckDBInstance.create(${JSON.stringify(warehouse)});
         process.stdout.write('holding\\n');
         process.stdin.on('data', () => { instance.closeSync(); process.exit(0); });`,
      ],
      { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'inherit'] },
    );
    try {
      await new Promise<void>((resolve) => child.stdout.once('data', () => resolve()));
      const lines: Record<string, unknown>[] = [];
      const logger = {
        info: (event: string, fields: Record<string, unknown>) => lines.push({ event, ...fields }),
      } as unknown as Logger;
      const started = Date.now();
      await assert.rejects(
        openWarehouse(warehouse, { waitForLockSeconds: 2.5, lockWaitLogMs: 1000, logger }),
        new RegExp(
          `another store-sync process \\(pid ${child.pid}\\) is writing .*waited \\d s of --wait-for-lock 2\\.5`,
        ),
      );
      const waited = Date.now() - started;
      assert.ok(waited >= 2500, `gave up after ${waited} ms`);
      // Told at once, then at every interval while it waited (the 2.5 s hold at least the ones at 1 s and 2 s).
      assert.ok(lines.length >= 3 && lines.length <= Math.ceil(waited / 1000), JSON.stringify(lines));
      assert.ok(lines.every((line) => line.event === 'warehouse.waiting_for_lock'));
    } finally {
      child.stdin.write('done\n');
    }
  });
});
