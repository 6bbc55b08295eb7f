import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { type RunningFile, readRunning, runningFilePath } from '../../src/state/index.js';
import {
  assertExit,
  killChildren,
  runCli,
  startCli,
  startGatedProxy,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Issue 28: `status` during a sync shows the running run's progress from the writer's running file
 * (`<warehouse>.running.json`, src/state/running.ts), beside what the read copy holds, and exits 0 while the
 * run is healthy. The sync is held at a gate after its first requests, so its first pages are committed and
 * it waits, with no timing.
 */

/** The running file once a stream of its run has committed a page (polled: the writer replaces it whole). */
async function firstCommittedPage(warehouse: string, done: Promise<unknown>): Promise<RunningFile> {
  let ended = false;
  void done.finally(() => {
    ended = true;
  });
  for (;;) {
    const running = readRunning(warehouse);
    if (running?.runs.some((run) => Object.values(run.streams).some((s) => s.pages > 0))) return running;
    assert.equal(ended, false, 'the sync ended before the test saw a committed page');
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

describe('store-sync status while a run writes the warehouse (issue 28)', () => {
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

  async function job(baseUrl: string) {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const warehouse = path.join(dir, 'w.duckdb');
    const config = await writeConfig(dir, { warehouse, stores: [{ name: 'shop', baseUrl }] });
    return { warehouse, config };
  }

  it('shows the run, its streams’ pages and records and its last commit, and exits 0', async () => {
    const gate = await startGatedProxy(sandbox);
    try {
      const { warehouse, config } = await job(gate.baseUrl);
      assertExit(await runCli(['sync', '--config', config]), 0);
      assert.equal(existsSync(runningFilePath(warehouse)), false, 'a finished run leaves no running file');
      // The next sync's first requests go through, the rest wait at the gate: it has committed pages and waits.
      gate.shutAfter(3);
      const sync = startCli(['sync', '--config', config]);
      const file = await firstCommittedPage(warehouse, sync.done);
      assert.equal(file.pid, sync.child.pid);
      const [run] = file.runs;
      assert.equal(run?.command, 'sync');
      assert.equal(run?.store, 'shop');
      assert.ok(run!.commits > 0 && run!.lastCommitAt !== null);
      // Which of the run's first requests pass the gate varies, and an incremental page of an unchanged stream
      // holds no record, so the count may be 0 (CI once met that). Counted from the batches' loaded records, it
      // must equal the pages' own counts (the test store sends nothing to reject).
      const pageRecords = Object.values(run!.streams).reduce((n, s) => n + s.records, 0);
      assert.equal(run!.records, pageRecords, JSON.stringify(run));

      const json = await runCli(['status', '--config', config, '--json']);
      assertExit(json, 0);
      assert.match(json.stderr, /reading the read copy .*w\.read\.duckdb/);
      const shown = JSON.parse(json.stdout) as { running: RunningFile | null; streams: unknown[] };
      assert.ok(shown.streams.length > 0, 'the read copy’s streams are shown as before');
      assert.equal(shown.running?.pid, sync.child.pid);
      const [shownRun] = shown.running!.runs;
      assert.equal(shownRun?.runId, run!.runId);
      const pages = Object.values(shownRun!.streams).reduce((n, s) => n + s.pages, 0);
      assert.ok(pages > 0, 'pages committed per stream');

      const text = await runCli(['status', '--config', config]);
      assertExit(text, 0);
      assert.match(text.stdout, new RegExp(`running now \\(pid ${sync.child.pid} writes the warehouse\\):`));
      assert.match(
        text.stdout,
        new RegExp(
          `shop sync \\(incremental\\), run ${run!.runId}, started \\d+ s ago: \\d+ commits?, [\\d,]+ records?, last commit \\d+ s ago`,
        ),
      );
      assert.match(text.stdout, /\b\w+ \d+ pages?, [\d,]+ records?/);

      gate.open();
      assertExit(await sync.done, 0);
      assert.equal(existsSync(runningFilePath(warehouse)), false, 'the finished run removed its file');
      const afterwards = await runCli(['status', '--config', config, '--json']);
      assertExit(afterwards, 0);
      assert.equal((JSON.parse(afterwards.stdout) as { running: unknown }).running, null);
    } finally {
      gate.open();
      await gate.close();
    }
  });

  it('during a warehouse’s first run (no read copy yet) tells the run’s progress and exits 0', async () => {
    const gate = await startGatedProxy(sandbox);
    try {
      const { warehouse, config } = await job(gate.baseUrl);
      gate.shutAfter(3);
      const sync = startCli(['sync', '--config', config]);
      await firstCommittedPage(warehouse, sync.done);
      const status = await runCli(['status', '--config', config]);
      assertExit(status, 0);
      assert.match(status.stderr, /no read copy to read instead/);
      assert.match(status.stdout, /nothing published yet: the first run is in progress/);
      assert.match(status.stdout, /shop sync \(incremental\), run \S+, started/);
      gate.open();
      assertExit(await sync.done, 0);
    } finally {
      gate.open();
      await gate.close();
    }
  });

  it('ignores the file a killed writer left behind', async () => {
    const gate = await startGatedProxy(sandbox);
    try {
      const { warehouse, config } = await job(gate.baseUrl);
      assertExit(await runCli(['sync', '--config', config]), 0);
      gate.shutAfter(3);
      const sync = startCli(['sync', '--config', config]);
      await firstCommittedPage(warehouse, sync.done);
      sync.child.kill('SIGKILL');
      await sync.done.catch(() => undefined);
      assert.equal(existsSync(runningFilePath(warehouse)), true, 'a killed writer cannot remove its file');
      assert.equal(readRunning(warehouse), null);
      const status = await runCli(['status', '--config', config, '--json']);
      assert.equal((JSON.parse(status.stdout) as { running: unknown }).running, null);
      // The next writer's runs replace it.
      gate.open();
      assertExit(await runCli(['sync', '--config', config]), 0);
      assert.equal(existsSync(runningFilePath(warehouse)), false);
    } finally {
      gate.open();
      await gate.close();
    }
  });

  it('ignores a file that is not a running file', async () => {
    const { warehouse, config } = await job(sandbox.baseUrl);
    assertExit(await runCli(['sync', '--config', config]), 0);
    await writeFile(runningFilePath(warehouse), '{"pid": "x"');
    const status = await runCli(['status', '--config', config, '--json']);
    assertExit(status, 0);
    assert.equal((JSON.parse(status.stdout) as { running: unknown }).running, null);
  });
});
