import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { type ExpiringProxy, startExpiringProxy } from '../extract/expiring-cursors.js';
import { sendJson, startServer, type TestServer } from '../extract/helpers.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Expired cursors (docs/reliability.md, "Hardening"), as the operator meets it. A sync stops with cursors
 * saved; by the next night the API has expired them and answers 400: that sync drops them, says so, reads
 * those slices again from their start and exits 0 with the warehouse equal to the store. And a `next` link of
 * 8 MB fails its stream with a message that gives its length: stderr stays small (quoting the link would make
 * it tens of MB).
 */

const STREAMS = ['products', 'subscriptions'] as const;
const RESOURCE = { products: 'products', subscriptions: 'subscriptions' } as const;

describe('store-sync sync with expiring cursors', () => {
  let sandbox: Sandbox;
  let proxy: ExpiringProxy;
  let dir: string;
  let cleanup: () => Promise<void>;
  const servers: TestServer[] = [];

  before(async () => {
    sandbox = await testSandbox({ scale: 40, pageSize: 5 });
    proxy = await startExpiringProxy(sandbox);
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await proxy?.close();
    await Promise.all(servers.map((s) => s.close()));
    await sandbox?.close();
    await cleanup?.();
    assertNoSecretsOrEscapes();
  });

  it('the next sync restarts the refused slices, completes, exits 0 and equals the store', async () => {
    const warehouse = path.join(dir, 'expiry.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      maxRetries: 0,
      stores: [{ name: 'shop', baseUrl: proxy.baseUrl }],
      streams: { subscriptions: { startDate: '2023-06-01', windowDays: 120, fullRefreshDays: null } },
    });
    const args = ['sync', '--config', config, '--streams', STREAMS.join(','), '--log-format', 'json'];

    // Every page after a chain's first fails: the run stops with each chain's second page saved.
    proxy.failCursorPages = true;
    const stopped = await runCli(args);
    assertExit(stopped, 1);
    const saved = await readWarehouse<{ stream: string; cursor: string }>(
      warehouse,
      'SELECT stream, cursor_in_progress AS cursor FROM _sync_state WHERE cursor_in_progress IS NOT NULL ORDER BY stream',
    );
    assert.deepEqual(
      saved.map((s) => s.stream),
      [...STREAMS],
      'each stream stopped with a cursor saved',
    );
    const cursors = saved.map((s) => new URL(s.cursor).searchParams.get('cursor')!);

    // Overnight the API expires its cursors; it is healthy otherwise.
    proxy.failCursorPages = false;
    proxy.expire();
    const next = await runCli(args);
    assertExit(next, 0);
    const events = jsonLines(next.stderr);
    const expired = events.filter((e) => e['event'] === 'cursor.expired');
    assert.deepEqual([...new Set(expired.map((e) => e['stream']))].sort(), [...STREAMS]);
    for (const e of expired) {
      assert.equal(e['level'], 'warn');
      assert.equal(e['status'], 400);
      assert.equal(typeof e['slice'], 'string');
    }
    for (const cursor of cursors) {
      assert.ok(!next.stderr.includes(cursor), 'the cursor is never logged');
      assert.ok(!next.stdout.includes(cursor));
    }
    assert.match(next.stdout, /expired; restarted from the first page/, 'the summary says why');

    // The warehouse equals the store: every record, once, none deleted.
    for (const stream of STREAMS) {
      const truth = (sandbox.store.snapshot(RESOURCE[stream]) as { id: number }[])
        .map((r) => r.id)
        .sort((a, b) => a - b);
      const rows = await readWarehouse<{ id: bigint }>(
        warehouse,
        `SELECT id FROM ${stream} WHERE _deleted_at IS NULL ORDER BY id`,
      );
      assert.deepEqual(
        rows.map((r) => Number(r.id)),
        truth,
        stream,
      );
    }
    const state = await readWarehouse<{ n: bigint }>(
      warehouse,
      'SELECT count(*) AS n FROM _sync_state WHERE cursor_in_progress IS NOT NULL OR last_success_at IS NULL',
    );
    assert.equal(Number(state[0]!.n), 0, 'every pass completed');
  });

  it('an 8 MB next link fails the stream with a short message; stderr stays small', async () => {
    const size = 8 * 1024 * 1024;
    const link = `/api/locations/?cursor=${'c'.repeat(size)}`;
    const server = await startServer((_req, res) =>
      sendJson(res, 200, { next: link, previous: null, results: [{ id: 1, name: 'only' }] }),
    );
    servers.push(server);
    const warehouse = path.join(dir, 'long.duckdb');
    const config = await writeConfig(
      dir,
      { warehouse, stores: [{ name: 'shop', baseUrl: `${server.origin}/api/` }] },
      'long.config.json',
    );
    for (const format of ['human', 'json']) {
      const result = await runCli([
        'sync',
        '--config',
        config,
        '--streams',
        'locations',
        '--log-format',
        format,
      ]);
      assertExit(result, 1);
      assert.ok(result.stderr.length < 10_000, `stderr is ${result.stderr.length} characters`);
      assert.ok(result.stdout.length < 10_000, `stdout is ${result.stdout.length} characters`);
      assert.match(
        result.stderr,
        new RegExp(`next link of ${Buffer.byteLength(link)} bytes, longer than the 4096 bytes`),
      );
      assert.ok(
        !`${result.stderr}${result.stdout}`.includes('c'.repeat(100)),
        'no piece of the cursor is printed',
      );
    }
    assert.ok(
      server.hits.every((h) => h.url === '/api/locations/'),
      'the long link was never requested',
    );
    const [saved] = await readWarehouse<{ n: bigint }>(
      warehouse,
      'SELECT count(*) AS n FROM _sync_state WHERE length(state::VARCHAR) > 4096',
    );
    assert.equal(Number(saved!.n), 0, 'the long link was not saved');
  });
});
