import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { exportLockFile, versionsFolder } from '../../pipelines/export.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  type SandboxProxy,
  startBreakingProxy,
  startCli,
  startTokenEchoServer,
  TOKEN,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * When things go wrong: a query while a sync writes, an API that keeps failing (with --verbose and with
 * JSON logs), and a hostile server that echoes the bearer token back in its error bodies. The token must
 * not appear in any output, and every JSON log line must parse.
 */

describe('store-sync under failure', () => {
  let slow: Sandbox;
  let failing: Sandbox;
  let hostile: SandboxProxy;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    [slow, failing] = await Promise.all([
      testSandbox({ scale: 40, pageSize: 5 }),
      testSandbox({ scale: 5, faults: '500:1' }),
    ]);
    hostile = await startTokenEchoServer();
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await Promise.all([slow?.close(), failing?.close()]);
    await hostile?.close();
    await cleanup?.();
  });

  it('query while a sync is writing: answers, or says why not with exit 1, and never hangs', async () => {
    // Paced at 3 requests a second, the sync holds the warehouse for several seconds.
    const config = await writeConfig(
      dir,
      { warehouse: 'busy.duckdb', rateLimit: 3, stores: [{ name: 'shop', baseUrl: slow.baseUrl }] },
      'busy.json',
    );
    const sync = startCli(['sync', '--config', config]);
    await waitForStderr(sync, /^stream\.start /m);
    const query = await runCli(['query', 'SELECT count(*) AS n FROM locations', '--config', config], {
      timeoutMs: 30_000,
    });
    assert.equal(sync.child.exitCode, null, 'the query ran while the sync was still writing');
    if (query.code === 0) {
      assert.match(query.stdout, /^n\n-+\n\s*\d+$/);
    } else {
      assertExit(query, 1);
      assert.match(
        query.stderr,
        /^error: cannot read \S+busy\.duckdb while another store-sync process \(pid \d+\) is writing to it: .*retry when that run finishes; no read copy to read instead \(\S+busy\.read\.duckdb does not exist yet/m,
      );
      assert.doesNotMatch(query.stderr, /^\s+at /m, 'no stack trace');
    }
    const status = await runCli(['status', '--config', config], { timeoutMs: 30_000 });
    assert.ok(status.code === 0 || status.code === 1, `status exited ${status.code}: ${status.stderr}`);
    // export reads too: the same answer, the same exit code, when the writer is still there.
    const exported = await runCli(['export', '--out', path.join(dir, 'busy-parquet'), '--config', config], {
      timeoutMs: 30_000,
    });
    if (sync.child.exitCode === null && exported.code !== 0) {
      assertExit(exported, 1);
      assert.match(exported.stderr, /^error: cannot read \S+busy\.duckdb while another store-sync process/m);
    }
    const done = await sync.done;
    assertExit(done, 0);
    const [{ n }] = (await readWarehouse<{ n: number }>(
      path.join(dir, 'busy.duckdb'),
      'SELECT count(*) AS n FROM subscriptions',
    )) as [{ n: number }];
    assert.equal(n, slow.store.counts.subscriptions, 'the sync was not disturbed');
  });

  it('SIGTERM stops the whole command; status shows the cursor in progress; the same command resumes', async () => {
    const config = await writeConfig(
      dir,
      {
        warehouse: 'interrupted.duckdb',
        rateLimit: 3,
        stores: [
          { name: 'first', baseUrl: slow.baseUrl },
          { name: 'second', baseUrl: slow.baseUrl },
        ],
      },
      'interrupted.json',
    );
    const args = ['sync', '--config', config, '--streams', 'subscriptions', '--verbose'];
    const sync = startCli(args);
    // Two pages read: by the third request at least one page has been committed.
    await waitForStderr(sync, /(http\.request .*path=\/api\/subscriptions\/[\s\S]*){3}/);
    sync.child.kill('SIGTERM');
    const stopped = await sync.done;
    assertExit(stopped, 1);
    assert.match(
      stopped.stderr,
      /^error: interrupted by SIGTERM; store second not started\. Run the same command again: it resumes from the last committed page\.$/m,
    );
    assert.doesNotMatch(stopped.stderr, /store=second/);
    // The signal is acknowledged when it arrives, with what stopping does, like ingest's and rebuild's.
    assert.match(
      stopped.stderr,
      /^WARN sync\.stopping: stopping at the next page boundary; no further store starts; signal again to stop at once signal=SIGTERM$/m,
    );
    // The requests in flight are aborted: that is the interrupt, not a network failure.
    assert.match(
      stopped.stderr,
      /^WARN stream\.interrupted: interrupted; .*store=first stream=subscriptions/m,
    );
    assert.doesNotMatch(stopped.stderr, /stream\.failed|operation was aborted|code=network/);
    assert.match(stopped.stdout, /^first: interrupted in /m);
    const line = /^first\s+subscriptions\s+interrupted\s+(\d+)\s+(\d+)\s/m.exec(stopped.stdout);
    assert.ok(line, stopped.stdout);
    const [pages, records] = [Number(line[1]), Number(line[2])];
    assert.ok(pages >= 1 && records === pages * 5, 'the summary counts what was committed');

    const status = await runCli(['status', '--json', '--config', config]);
    assertExit(status, 3);
    const streams = (JSON.parse(status.stdout) as { streams: Record<string, unknown>[] }).streams;
    const row = streams.find((s) => s.store === 'first' && s.stream === 'subscriptions');
    assert.equal(row!.store, 'first');
    assert.equal(row!.rows, records);
    assert.equal(row!.lastSuccessAt, null);
    assert.match(String(row!.cursorInProgress), /^http:\/\/127\.0\.0\.1:\d+\/api\/subscriptions\/\?/);

    const resumed = await runCli(args);
    assertExit(resumed, 0);
    assert.match(resumed.stderr, /^stream\.resume runId=\S+ store=first stream=subscriptions/m);
    assert.match(resumed.stdout, /^first\s+subscriptions\s+ok\s+\d+\s+\d+\s+0\s+\d+\s+resumed$/m);
    assert.deepEqual(
      await readWarehouse(
        path.join(dir, 'interrupted.duckdb'),
        'SELECT _store, count(*) AS n, count(DISTINCT id) AS ids FROM subscriptions GROUP BY ALL ORDER BY _store',
      ),
      ['first', 'second'].map((store) => ({
        _store: store,
        n: slow.store.counts.subscriptions,
        ids: slow.store.counts.subscriptions,
      })),
    );
  });

  it('SIGTERM while the first requests wait is recorded as interrupted, not failed', async () => {
    // A server that accepts and never answers: the streams still wait for their first pages when the signal comes.
    const silent = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const config = await writeConfig(
        dir,
        {
          warehouse: 'probe-interrupted.duckdb',
          stores: [
            { name: 'shop', baseUrl: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/api/` },
          ],
        },
        'probe-interrupted.json',
      );
      const sync = startCli(['sync', '--config', config, '--streams', 'locations,products']);
      await waitForStderr(sync, /^sync\.start /m);
      sync.child.kill('SIGTERM');
      const stopped = await sync.done;
      assertExit(stopped, 1);
      // The store did start (its run is recorded): the message and the summary say it was interrupted,
      // not that it never started, and name the streams it stopped.
      assert.match(
        stopped.stderr,
        /^error: interrupted by SIGTERM\. Run the same command again: it resumes from the last committed page\.$/m,
      );
      assert.doesNotMatch(stopped.stderr, /not started/);
      for (const stream of ['locations', 'products'])
        assert.match(stopped.stdout, new RegExp(`^shop\\s+${stream}\\s+interrupted\\s+0\\s+0\\s`, 'm'));
      assert.match(stopped.stdout, /^shop: interrupted in \S+ s, \d+ requests, 0 retries \(run \S+\)$/m);
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'probe-interrupted.duckdb'),
          "SELECT outcome, json_extract_string(counts, '$.locations.status') AS locations FROM _sync_runs",
        ),
        [{ outcome: 'interrupted', locations: 'interrupted' }],
      );
    } finally {
      silent.closeAllConnections();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('a stream whose first request fails (a 404, a 500 after the retries) fails alone: the others go on, exit 3', async () => {
    // One store whose subscriptions endpoint answers 404 and whose products endpoint keeps failing, the
    // rest healthy. The first request of each stream is the scope check before the run: a failure there is
    // the stream's, as it would be on any later page.
    const proxy = await startBreakingProxy(slow, [
      { path: /\/subscriptions\//, status: 404 },
      { path: /\/products\//, status: 500 },
    ]);
    try {
      const config = await writeConfig(
        dir,
        {
          warehouse: 'one-endpoint.duckdb',
          maxRetries: 0,
          stores: [{ name: 'shop', baseUrl: proxy.baseUrl }],
        },
        'one-endpoint.json',
      );
      const result = await runCli(['sync', '--config', config]);
      assertExit(result, 3);
      assert.doesNotMatch(result.stderr, /^error: /m);
      assert.match(
        result.stdout,
        /^shop\s+subscriptions\s+failed\s+0\s+0\s+0\s+1\s+GET \/api\/subscriptions\/ was not found \(404\)/m,
      );
      assert.match(
        result.stdout,
        /^shop\s+products\s+failed\s+0\s+0\s+0\s+1\s+GET \/api\/products\/ failed after 1 attempts/m,
      );
      for (const stream of ['locations', 'metadata_definitions', 'fulfillment_orders'])
        assert.match(result.stdout, new RegExp(`^shop\\s+${stream}\\s+ok\\s`, 'm'));
      assert.match(result.stdout, /^shop: partial in /m);
      // The 404 on its first list is logged once, with the base URL advice the summary gives.
      assert.deepEqual(
        result.stderr.match(/^ERROR stream\.failed: .* stream=subscriptions .*$/gm)?.length,
        1,
        result.stderr,
      );
      assert.match(
        result.stderr,
        /^ERROR stream\.failed: GET \/api\/subscriptions\/ was not found \(404\), the first list request of stream subscriptions \(\S+\): check that \S+ is the store's administration API root, and set baseUrl .* stream=subscriptions code=http_not_found/m,
      );
      assert.match(result.stderr, /^ERROR stream\.failed: .* stream=products code=retries_exhausted/m);
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'one-endpoint.duckdb'),
          `SELECT outcome, json_extract_string(counts, '$.subscriptions.status') AS subscriptions,
             json_extract_string(counts, '$.locations.status') AS locations,
             (SELECT count(*) FROM fulfillment_orders) > 0 AS others_synced FROM _sync_runs`,
        ),
        [{ outcome: 'partial', subscriptions: 'failed', locations: 'ok', others_synced: true }],
      );
      // doctor makes the same check: the store answers, and each failing stream gets its own FAIL line.
      const doctor = await runCli(['doctor', '--config', config]);
      assertExit(doctor, 1);
      assert.match(doctor.stdout, /^\[ok\] {3}store shop: reachable and token accepted/m);
      assert.match(doctor.stdout, /^\[ok\] {3}store shop: stream locations: scope .+ granted$/m);
      assert.match(
        doctor.stdout,
        /^\[FAIL\] store shop: stream subscriptions: GET \/api\/subscriptions\/ was not found \(404\)/m,
      );
      assert.match(
        doctor.stdout,
        /^\[FAIL\] store shop: stream products: GET \/api\/products\/ failed after/m,
      );
    } finally {
      await proxy.close();
    }
  });

  it('several stores: one that fails (a wrong token, a failed export) stops none of the others; exit 1 names it', async () => {
    const limitedEnv = 'STORE_SYNC_CLI_TEST_LIMITED';
    const badEnv = 'STORE_SYNC_CLI_TEST_WRONG';
    const shop = await testSandbox({
      scale: 5,
      tokens: [TOKEN, 'limited-4Hk8:catalogue:read,locations:read'],
    });
    try {
      const env = { [limitedEnv]: 'limited-4Hk8', [badEnv]: 'not-a-token-of-this-store' };
      const config = await writeConfig(
        dir,
        {
          warehouse: 'stores.duckdb',
          stores: [
            { name: 'bad', baseUrl: shop.baseUrl, tokenEnv: badEnv },
            { name: 'lim', baseUrl: shop.baseUrl, tokenEnv: limitedEnv },
            { name: 'full', baseUrl: shop.baseUrl },
          ],
        },
        'stores.json',
      );
      const result = await runCli(['sync', '--config', config], { env });
      assertCleanError(
        result,
        1,
        /^error: 1 of 3 stores failed; the others ran \(see the summary\)\. bad: GET \/api\/\S+ was refused \(401\)/m,
      );
      assert.match(result.stdout, /^bad\s+-\s+failed\s+0\s+0\s+0\s+0\s+GET \/api\/\S+ was refused \(401\)/m);
      assert.match(result.stdout, /^bad: failed: GET \/api\/\S+ was refused \(401\)/m);
      assert.match(result.stdout, /^lim\s+products\s+ok\s/m);
      assert.match(result.stdout, /^lim\s+subscriptions\s+skipped\s/m);
      assert.match(result.stdout, /^lim: partial in /m);
      assert.match(result.stdout, /^full\s+subscriptions\s+ok\s/m);
      assert.match(result.stdout, /^full: succeeded in /m);
      // The failed store's run is named, so the log line leads to its _sync_runs row.
      const failedRun = /^ERROR store\.failed: .*store=bad runId=(\S+) code=http_unauthorized/m.exec(
        result.stderr,
      );
      assert.ok(failedRun, result.stderr);
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'stores.duckdb'),
          `SELECT _store AS store, outcome FROM _sync_runs WHERE _run_id = '${failedRun[1]}'`,
        ),
        [{ store: 'bad', outcome: 'failed' }],
      );
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'stores.duckdb'),
          'SELECT _store AS store, outcome FROM _sync_runs ORDER BY started_at',
        ),
        [
          { store: 'bad', outcome: 'failed' },
          { store: 'lim', outcome: 'partial' },
          { store: 'full', outcome: 'succeeded' },
        ],
      );

      // The export after each store's sync fails (another export holds the folder): every store still syncs.
      const busy = path.join(dir, 'stores-parquet');
      await mkdir(versionsFolder(busy), { recursive: true });
      const exportLock = await DuckDBInstance.create(exportLockFile(busy));
      const exporting = await writeConfig(
        dir,
        {
          warehouse: 'stores-export.duckdb',
          parquetDir: 'stores-parquet',
          exportAfterSync: true,
          stores: [
            { name: 'first', baseUrl: shop.baseUrl },
            { name: 'second', baseUrl: shop.baseUrl },
          ],
        },
        'stores-export.json',
      );
      const exported = await runCli(['sync', '--config', exporting, '--streams', 'locations']).finally(() =>
        exportLock.closeSync(),
      );
      assertCleanError(
        exported,
        1,
        /^error: all 2 stores failed \(see the summary\)\. first: store "first" synced \(succeeded, run \S+\), but the Parquet export/m,
      );
      assert.match(
        exported.stdout,
        /^second: failed: store "second" synced \(succeeded, run \S+\), but the Parquet export/m,
      );
      // Each store's summary keeps what its sync did, then the export's failure.
      for (const store of ['first', 'second']) {
        assert.match(exported.stdout, new RegExp(`^${store}\\s+locations\\s+ok\\s+1\\s`, 'm'));
        assert.match(
          exported.stdout,
          new RegExp(`^${store}\\s+export\\s+failed\\s+0\\s+0\\s+0\\s+0\\s+store "${store}" synced`, 'm'),
        );
        assert.match(
          exported.stderr,
          new RegExp(`^ERROR store\\.failed: .*store=${store} runId=\\S+ code=warehouse`, 'm'),
        );
      }
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'stores-export.duckdb'),
          'SELECT _store, count(*) > 0 AS synced FROM locations GROUP BY ALL ORDER BY _store',
        ),
        [
          { _store: 'first', synced: true },
          { _store: 'second', synced: true },
        ],
      );
    } finally {
      await shop.close();
    }
  });

  it('exportAfterSync: a Parquet folder that cannot be made stops the sync first; an export that fails after it keeps its outcome', async () => {
    await writeFile(path.join(dir, 'a-file'), 'not a folder');
    const exportingConfig = (parquetDir: string, name: string) =>
      writeConfig(
        dir,
        {
          warehouse: 'export-after.duckdb',
          parquetDir,
          exportAfterSync: true,
          stores: [{ name: 'shop', baseUrl: slow.baseUrl }],
        },
        name,
      );
    const unusable = await exportingConfig('a-file/parquet', 'export-unusable.json');
    const refused = await runCli(['sync', '--config', unusable, '--streams', 'locations']);
    assertCleanError(
      refused,
      2,
      /cannot create the Parquet folder \S+a-file\/parquet: creating \S+ failed \(ENOTDIR\)/,
    );
    assert.equal(existsSync(path.join(dir, 'export-after.duckdb')), false, 'nothing was synced');

    // Another export holds the folder (this test's process holds its lock, as an export does): the sync has
    // committed by then.
    const busy = path.join(dir, 'busy-parquet');
    await mkdir(versionsFolder(busy), { recursive: true });
    const exportLock = await DuckDBInstance.create(exportLockFile(busy));
    const locked = await exportingConfig('busy-parquet', 'export-locked.json');
    const synced = await runCli(['sync', '--config', locked, '--streams', 'locations']).finally(() =>
      exportLock.closeSync(),
    );
    assertCleanError(
      synced,
      1,
      new RegExp(
        `store "shop" synced \\(succeeded, run \\S+\\), but the Parquet export to \\S+busy-parquet failed: another store-sync export \\(pid ${process.pid}\\) is writing`,
      ),
    );
    // The summary says what the sync did before the error says what the export did not.
    assert.match(synced.stdout, /^shop\s+locations\s+ok\s+1\s/m);
    assert.match(synced.stdout, /^shop\s+export\s+failed\s/m);
    assert.equal(synced.stdout.match(/^shop\s+locations\s/gm)?.length, 1, 'the summary is printed once');
    assert.deepEqual(
      await readWarehouse(
        path.join(dir, 'export-after.duckdb'),
        "SELECT outcome, error LIKE 'the Parquet export to %' AS export_error, (SELECT count(*) FROM locations) > 0 AS synced FROM _sync_runs",
      ),
      [{ outcome: 'succeeded', export_error: true, synced: true }],
    );
  });

  it('a persistent 500 with --verbose: one error paragraph and a stack trace, never the token', async () => {
    const config = await writeConfig(
      dir,
      { warehouse: 'failing.duckdb', maxRetries: 1, stores: [{ name: 'shop', baseUrl: failing.baseUrl }] },
      'failing.json',
    );
    const result = await runCli(['sync', '--config', config, '--verbose']);
    assertExit(result, 1);
    assert.match(
      result.stderr,
      /^DEBUG http\.request runId=\S+ store=shop method=GET path=\/api\/\S+ status=500/m,
    );
    assert.match(result.stderr, /^WARN http\.retry .*status=500 attempt=1/m);
    assert.match(result.stderr, /^error: GET \/api\/\S+ failed after 2 attempts/m);
    assert.match(result.stderr, /^\s+at .+\.ts:\d+:\d+\)?$/m, '--verbose shows the stack');
  });

  it('--log-format json: every stderr line is JSON with an event, failures included', async () => {
    const config = path.join(dir, 'failing.json');
    const result = await runCli(['sync', '--config', config, '--verbose', '--log-format', 'json']);
    assertExit(result, 1);
    const events = jsonLines(result.stderr);
    for (const event of events) assert.equal(typeof event.event, 'string');
    const runId = events.find((e) => e.event === 'sync.start')!.runId;
    for (const event of events.filter((e) => /^(http|sync|stream)\./.test(String(e.event)))) {
      assert.equal(event.runId, runId, JSON.stringify(event));
      assert.equal(event.store, 'shop', JSON.stringify(event));
    }
    const failed = events.at(-1)!;
    assert.equal(failed.event, 'command.failed');
    assert.equal(failed.level, 'error');
    assert.equal(failed.code, 'retries_exhausted');
    assert.match(String(failed.stack), /StoreSyncError/);

    const usage = await runCli(['sync', '--config', config, '--log-format', 'json', '--streams', 'orders']);
    assertExit(usage, 2);
    assert.deepEqual(
      jsonLines(usage.stderr).map((e) => [e.event, e.code]),
      [['command.failed', 'usage']],
    );
  });

  it('a server that echoes the token in its errors: masked in the summary, the logs and the error', async () => {
    const config = await writeConfig(
      dir,
      { warehouse: 'hostile.duckdb', maxRetries: 1, stores: [{ name: 'shop', baseUrl: hostile.baseUrl }] },
      'hostile.json',
    );
    const result = await runCli(['sync', '--config', config, '--streams', 'locations', '--verbose']);
    assertExit(result, 1);
    assert.match(result.stderr, /cannot serve Bearer \*\*\*/);
    assert.ok(!result.stderr.includes(TOKEN) && !result.stdout.includes(TOKEN));
    const runs = await readWarehouse<{ error: string }>(
      path.join(dir, 'hostile.duckdb'),
      'SELECT error FROM _sync_runs',
    );
    assert.equal(runs.length, 1);
    assert.match(runs[0]!.error, /Bearer \*\*\*/);
    assert.ok(!runs[0]!.error.includes(TOKEN), 'nor in the warehouse');
  });

  it('a record that holds the token (the server echoed it) is stored masked: not in any table, the landing or the file', async () => {
    const echo = await testSandbox({ scale: 3 });
    try {
      // A location named after the Authorization header, created through the API itself.
      const created = await fetch(`${echo.baseUrl}locations/`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${TOKEN}`,
          'content-type': 'application/json',
          'x-platform-api-version': '2024-04-01',
        },
        body: JSON.stringify({
          name: `Bearer ${TOKEN}`,
          address: { country: 'US', line1: '1 Main St', line4: 'Springfield' },
        }),
      });
      assert.equal(created.status, 201, await created.text());
      const config = await writeConfig(
        dir,
        { warehouse: 'echo.duckdb', stores: [{ name: 'shop', baseUrl: echo.baseUrl }] },
        'echo.json',
      );
      assertExit(await runCli(['sync', '--config', config, '--streams', 'locations']), 0);
      const names = await readWarehouse<{ name: string }>(
        path.join(dir, 'echo.duckdb'),
        "SELECT name FROM locations WHERE name LIKE 'Bearer%'",
      );
      assert.deepEqual(names, [{ name: 'Bearer ***' }]);
      assertExit(await runCli(['export', '--config', config, '--out', path.join(dir, 'echo-parquet')]), 0);
      // Not in the database file either. (The raw landing is compressed, so this alone would not see it
      // there; a rebuild re-derives the masked name from it.)
      assertExit(await runCli(['rebuild', '--config', config]), 0);
      assert.deepEqual(
        await readWarehouse(
          path.join(dir, 'echo.duckdb'),
          "SELECT name FROM locations WHERE name LIKE 'Bearer%'",
        ),
        [{ name: 'Bearer ***' }],
      );
      const file = await readFile(path.join(dir, 'echo.duckdb'));
      assert.equal(file.includes(TOKEN), false, 'the token is not in the warehouse file');
      const exported = await readFile(path.join(dir, 'echo-parquet', 'locations', 'data.parquet'));
      assert.ok(exported.includes('Bearer ***'), 'the masked name is exported');
      assert.equal(exported.includes(TOKEN), false, 'the token is not in the Parquet export');
    } finally {
      await echo.close();
    }
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
