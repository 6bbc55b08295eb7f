import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyStreamState, type StreamState } from '../../src/contracts.js';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient, runStream, STREAMS } from '../../src/extract/index.js';
import { MAX_CURSOR_BYTES } from '../../src/extract/url-safety.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions, type StreamName } from '../../src/streams.js';
import { type ExpiringProxy, startExpiringProxy } from './expiring-cursors.js';
import { captureLogger, MemoryWarehouse, sendJson, startServer, type TestServer } from './helpers.js';
import { SANDBOX_TOKEN, truth } from './sandbox-helpers.js';

/**
 * Expired cursors (docs/reliability.md, "Hardening"): a saved cursor the API no longer accepts (cursors
 * expire) must not fail every later run. A 400, 404 or 410 to the first request of a resumed slice (its saved
 * `next`) drops the cursor with a warning that never quotes it, and the slice is read again from its first
 * page in the same run. A 400 anywhere else (a fresh first page, a later page) stays an error. A `next`
 * longer than 4 KB is neither requested nor saved: the stream fails with its length (an 8 MB one would be
 * saved, then quoted in tens of MB of stderr).
 */

const { logger, lines } = captureLogger();
const sandboxes: Sandbox[] = [];
const proxies: ExpiringProxy[] = [];
const servers: TestServer[] = [];
const clients: ApiClient[] = [];
const NOW = new Date('2026-01-01T12:00:00Z');

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(proxies.map((p) => p.close()));
  await Promise.all(servers.map((s) => s.close()));
  await Promise.all(sandboxes.map((s) => s.close()));
  for (const line of lines) assert.ok(!line.includes(SANDBOX_TOKEN), `token leaked: ${line}`);
});

function client(baseUrl: string): ApiClient {
  const api = new ApiClient({
    baseUrl,
    token: SANDBOX_TOKEN,
    rateLimit: 0,
    logger,
    retry: { maxRetries: 0, baseDelayMs: 1, maxDelayMs: 2 },
  });
  clients.push(api);
  return api;
}

/** Log lines of one event, parsed. */
const events = (name: string, from = 0) =>
  lines
    .slice(from)
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((e) => e['event'] === name);

describe('an expired saved cursor', () => {
  const cases: { stream: StreamName; options: Record<string, unknown>; kind: RegExp }[] = [
    { stream: 'products', options: {}, kind: /^full\// },
    {
      stream: 'subscriptions',
      options: { startDate: '2023-06-01', windowDays: 120, fullRefreshDays: null, concurrency: 3 },
      kind: /^windows\//,
    },
  ];
  for (const { stream, options, kind } of cases) {
    it(`${stream}: a run stopped with saved cursors, then the API refuses them: the pass restarts and completes`, async () => {
      const s = await startSandbox({ seed: 7, scale: 40, pageSize: 5, rateLimit: 0 });
      sandboxes.push(s);
      const proxy = await startExpiringProxy(s);
      proxies.push(proxy);
      const api = client(proxy.baseUrl);
      const warehouse = new MemoryWarehouse();
      const args = {
        stream: STREAMS[stream],
        client: api,
        mode: 'incremental' as const,
        options: { ...defaultStreamOptions(stream), ...options },
        now: NOW,
        commit: warehouse.commit,
        logger,
      };
      // The first run stops after its first pages (every later page fails), leaving cursors saved.
      proxy.failCursorPages = true;
      const stopped = await runStream({ ...args, state: emptyStreamState() }).catch((e: unknown) => e);
      assert.ok(stopped instanceof StoreSyncError, String(stopped));
      const saved = warehouse.state!;
      assert.match(saved.pass!.id, kind);
      const savedCursors = Object.values(saved.pass!.slices).flatMap((slice) =>
        slice.nextUrl && !slice.done ? [new URL(slice.nextUrl).searchParams.get('cursor')!] : [],
      );
      assert.ok(savedCursors.length > 0, 'the run stopped with a cursor saved');

      // The cursors expire; the API is healthy again.
      proxy.failCursorPages = false;
      proxy.expire();
      const from = lines.length;
      const hitsBefore = proxy.hits.length;
      const summary = await runStream({ ...args, state: saved });
      assert.equal(summary.resumed, true, 'the saved pass is the one finished');
      assert.equal(summary.passId, saved.pass!.id);
      assert.equal(
        summary.cursorsDropped,
        savedCursors.length,
        'each refused cursor restarted its slice once',
      );
      assert.equal(summary.state.pass, null, 'the pass completed');

      // No saved cursor was ever accepted: each slice holding one started again from its first page (once: see
      // cursorsDropped above). Hits are not counted per run, since a prefetch the first run aborted can reach
      // the proxy after it.
      const refused = proxy.hits.slice(hitsBefore).filter((h) => h.status === 400);
      for (const cursor of savedCursors) {
        assert.ok(
          refused.some((h) => h.cursor === cursor),
          'the saved cursor was tried and refused',
        );
        assert.ok(!proxy.hits.some((h) => h.cursor === cursor && h.status === 200), 'and never accepted');
      }
      // The warehouse equals the truth.
      const expected = truth(s, stream);
      assert.deepEqual(
        warehouse.keys(),
        [...expected.keys()].map(Number).sort((a, b) => a - b),
      );
      for (const [key, record] of expected) assert.deepEqual(warehouse.rows.get(key), record, key);

      // One warning per dropped cursor, naming stream and slice, never the cursor.
      const warnings = events('cursor.expired', from);
      assert.equal(warnings.length, savedCursors.length);
      for (const warning of warnings) {
        assert.equal(warning['level'], 'warn');
        assert.equal(warning['stream'], stream);
        assert.ok(Object.hasOwn(saved.pass!.slices, String(warning['slice'])), String(warning['slice']));
        assert.equal(warning['status'], 400);
      }
      for (const line of lines.slice(from)) {
        for (const cursor of savedCursors) assert.ok(!line.includes(cursor), `a cursor was logged: ${line}`);
      }
    });
  }

  /** A list of locations under /api/, cursor = last id; `refuse` answers a status to some requests first. */
  async function locationServer(refuse: (url: URL) => number | null, total = 6) {
    let origin = '';
    const server = await startServer((req, res) => {
      const url = new URL(req.url ?? '/', origin);
      const status = refuse(url);
      if (status !== null) return sendJson(res, status, { detail: 'Invalid cursor.' });
      const after = Number(url.searchParams.get('cursor') ?? 0);
      const results = [];
      for (let id = after + 1; id <= Math.min(total, after + 2); id++) results.push({ id, name: `L${id}` });
      const last = after + results.length;
      sendJson(res, 200, {
        next: last < total ? `${origin}/api/locations/?cursor=${last}` : null,
        previous: null,
        results,
      });
    });
    origin = server.origin;
    servers.push(server);
    return server;
  }

  const resumedState = (nextUrl: string): StreamState => ({
    ...emptyStreamState(),
    pass: {
      id: 'full/incremental/-/2026-01-01T00:00:00.000Z',
      mode: 'incremental',
      startedAt: '2026-01-01T00:00:00.000Z',
      slices: { all: { nextUrl, done: false, params: {} } },
    },
  });

  const runLocations = (api: ApiClient, state: StreamState, warehouse = new MemoryWarehouse()) =>
    runStream({
      stream: STREAMS.locations,
      client: api,
      state,
      mode: 'incremental',
      options: defaultStreamOptions('locations'),
      now: NOW,
      commit: warehouse.commit,
      logger,
    });

  for (const status of [404, 410]) {
    it(`a ${status} to the saved cursor restarts the slice too`, async () => {
      // Only the saved cursor is refused: the fresh chain's own cursor 2 is a new one.
      let refused = false;
      const server = await locationServer((url) => {
        if (refused || url.searchParams.get('cursor') !== '2') return null;
        refused = true;
        return status;
      });
      const warehouse = new MemoryWarehouse();
      const summary = await runLocations(
        client(`${server.origin}/api/`),
        resumedState(`${server.origin}/api/locations/?cursor=2`),
        warehouse,
      );
      assert.equal(summary.cursorsDropped, 1);
      assert.deepEqual(warehouse.keys(), [1, 2, 3, 4, 5, 6]);
      assert.deepEqual(
        server.hits.map((h) => h.url),
        [
          '/api/locations/?cursor=2',
          '/api/locations/',
          '/api/locations/?cursor=2',
          '/api/locations/?cursor=4',
        ],
      );
    });
  }

  it('a 400 on a fresh first page stays an error (one request, no restart)', async () => {
    const server = await locationServer(() => 400);
    const error = await runLocations(client(`${server.origin}/api/`), emptyStreamState()).catch(
      (e: unknown) => e,
    );
    assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.HTTP_BAD_REQUEST, String(error));
    assert.equal(server.hits.length, 1);
  });

  it('a 400 after the saved cursor was accepted stays an error', async () => {
    const server = await locationServer((url) => (url.searchParams.get('cursor') === '4' ? 400 : null));
    const from = lines.length;
    const error = await runLocations(
      client(`${server.origin}/api/`),
      resumedState(`${server.origin}/api/locations/?cursor=2`),
    ).catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.HTTP_BAD_REQUEST, String(error));
    assert.deepEqual(
      server.hits.map((h) => h.url),
      ['/api/locations/?cursor=2', '/api/locations/?cursor=4'],
      'no restart from the first page',
    );
    assert.equal(events('cursor.expired', from).length, 0);
  });

  it('a refused saved cursor whose first page is refused too fails (restarted once, not in a loop)', async () => {
    const server = await locationServer(() => 400);
    const error = await runLocations(
      client(`${server.origin}/api/`),
      resumedState(`${server.origin}/api/locations/?cursor=2`),
    ).catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.HTTP_BAD_REQUEST, String(error));
    assert.deepEqual(
      server.hits.map((h) => h.url),
      ['/api/locations/?cursor=2', '/api/locations/'],
    );
  });

  it('a saved cursor over 4 KB (saved by an older version) is dropped unrequested, and the slice restarts', async () => {
    const server = await locationServer(() => null);
    const long = `${server.origin}/api/locations/?cursor=${'x'.repeat(MAX_CURSOR_BYTES)}`;
    const warehouse = new MemoryWarehouse();
    const from = lines.length;
    const summary = await runLocations(client(`${server.origin}/api/`), resumedState(long), warehouse);
    assert.equal(summary.cursorsDropped, 1);
    assert.deepEqual(warehouse.keys(), [1, 2, 3, 4, 5, 6]);
    assert.equal(server.hits[0]!.url, '/api/locations/', 'the long cursor was never requested');
    const dropped = events('cursor.dropped', from);
    assert.equal(dropped.length, 1);
    assert.match(String(dropped[0]!['message']), /\d+ bytes long/);
    for (const line of lines.slice(from)) assert.ok(!line.includes('x'.repeat(200)), 'the cursor was logged');
  });

  it('a saved cursor outside the base URL (the base URL changed) is dropped unrequested', async () => {
    const server = await locationServer(() => null);
    const warehouse = new MemoryWarehouse();
    const summary = await runLocations(
      client(`${server.origin}/api/`),
      resumedState(`${server.origin}/old-api/locations/?cursor=2`),
      warehouse,
    );
    assert.equal(summary.cursorsDropped, 1);
    assert.deepEqual(warehouse.keys(), [1, 2, 3, 4, 5, 6]);
    assert.ok(!server.hits.some((h) => h.url.startsWith('/old-api/')));
  });
});

describe('a next link longer than 4 KB', () => {
  for (const size of [MAX_CURSOR_BYTES + 1, 8 * 1024 * 1024]) {
    it(`${size} bytes: the stream fails with a short message giving its length; the link is neither requested nor saved`, async () => {
      const next = `/api/locations/?cursor=${'c'.repeat(size - '/api/locations/?cursor='.length)}`;
      assert.equal(Buffer.byteLength(next), size);
      const server = await startServer((_req, res) =>
        sendJson(res, 200, { next, previous: null, results: [{ id: 1, name: 'a' }] }),
      );
      servers.push(server);
      const warehouse = new MemoryWarehouse();
      const from = lines.length;
      const error = await runStream({
        stream: STREAMS.locations,
        client: client(`${server.origin}/api/`),
        state: emptyStreamState(),
        mode: 'incremental',
        options: defaultStreamOptions('locations'),
        now: NOW,
        commit: warehouse.commit,
        logger,
      }).catch((e: unknown) => e);
      assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.BAD_RESPONSE, String(error));
      assert.match(
        error.message,
        new RegExp(`next link of ${size} bytes, longer than the ${MAX_CURSOR_BYTES} bytes`),
      );
      assert.ok(error.message.length < 400, `a short message: ${error.message.length} characters`);
      assert.ok(JSON.stringify(error.details).length < 400);
      assert.equal(server.hits.length, 1, 'the long link was never requested');
      assert.equal(warehouse.commits.length, 0, 'the page was not committed with it');
      const logged = lines.slice(from).join('\n');
      assert.ok(logged.length < 10_000, `${logged.length} characters logged`);
      assert.ok(!logged.includes('c'.repeat(200)));
    });
  }
});
