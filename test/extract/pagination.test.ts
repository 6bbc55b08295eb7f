import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient } from '../../src/extract/client.js';
import { runStream, STREAMS } from '../../src/extract/index.js';
import { followCursor } from '../../src/extract/pagination.js';
import { defaultStreamOptions } from '../../src/streams.js';
import { captureLogger, MemoryWarehouse, sendJson, startServer, type TestServer } from './helpers.js';

const TOKEN = 'pagination-test-token-77ab';
const servers: TestServer[] = [];
const clients: ApiClient[] = [];
const { logger, lines } = captureLogger();
const errorTexts: string[] = [];
const NOW = new Date('2026-01-01T12:00:00Z');

async function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(handler);
  servers.push(server);
  return server;
}

function client(server: TestServer): ApiClient {
  const api = new ApiClient({ baseUrl: `${server.origin}/api/`, token: TOKEN, rateLimit: 0, logger });
  clients.push(api);
  return api;
}

/** A location list of `total` records served `size` at a time, with cursor = last id. */
function locationPages(total: number, size: number, origin: () => string) {
  return (url: URL) => {
    const after = Number(url.searchParams.get('cursor') ?? 0);
    const results = [];
    for (let id = after + 1; id <= Math.min(total, after + size); id++) results.push({ id, name: `L${id}` });
    const last = after + results.length;
    return {
      next: last < total ? `${origin()}/api/locations/?cursor=${last}` : null,
      previous: null,
      results,
    };
  };
}

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
  for (const text of [...lines, ...errorTexts]) assert.ok(!text.includes(TOKEN), `token leaked: ${text}`);
});

describe('cursor chains', () => {
  it('a stream that fails reports the requests and retries it spent, not those of its last committed page', async () => {
    // _sync_runs recorded a stream that failed after exhausting its retries with 0 requests and 0 retries.
    let origin = '';
    const pages = locationPages(4, 2, () => origin);
    const server = await serve((req, res) => {
      const url = new URL(req.url ?? '/', origin);
      if (url.searchParams.has('cursor')) sendJson(res, 500, { detail: 'down' });
      else sendJson(res, 200, pages(url));
    });
    origin = server.origin;
    const api = new ApiClient({
      baseUrl: `${server.origin}/api/`,
      token: TOKEN,
      rateLimit: 0,
      logger,
      retry: { maxRetries: 2, baseDelayMs: 1, maxDelayMs: 2 },
    });
    clients.push(api);
    const progress: { pages: number; requests: number; retries: number }[] = [];
    const error = await runStream({
      stream: STREAMS.locations,
      client: api,
      state: emptyStreamState(),
      mode: 'incremental',
      options: defaultStreamOptions('locations'),
      now: NOW,
      commit: new MemoryWarehouse().commit,
      logger,
      onProgress: (p) => progress.push({ pages: p.pages, requests: p.requests, retries: p.retries }),
    }).catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError);
    errorTexts.push(error.message);
    assert.deepEqual(progress.at(-1), { pages: 1, requests: 4, retries: 2 });
  });

  it('refuses a next link to another origin: the other server receives no request at all', async () => {
    const foreign = await serve((_req, res) => sendJson(res, 200, { next: null, results: [] }));
    const server = await serve((_req, res) =>
      sendJson(res, 200, { next: `${foreign.origin}/api/locations/?cursor=2`, results: [{ id: 1 }] }),
    );
    const warehouse = new MemoryWarehouse();
    const error = await runStream({
      stream: STREAMS.locations,
      client: client(server),
      state: emptyStreamState(),
      mode: 'incremental',
      options: defaultStreamOptions('locations'),
      now: NOW,
      commit: warehouse.commit,
      logger,
    }).catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError);
    errorTexts.push(error.message);
    assert.equal(error.code, ERROR_CODES.FOREIGN_ORIGIN);
    assert.match(error.message, /refusing to send the token/);
    assert.equal(foreign.hits.length, 0);
    assert.equal(server.hits.length, 1);
    assert.equal(warehouse.commits.length, 0, 'nothing is committed past a refused link');
  });

  it('stops with cursor_loop when a next link repeats a page of the chain', async () => {
    const server = await serve((req, res) => {
      const cursor = new URL(req.url!, 'http://x').searchParams.get('cursor');
      // a → b → a → …
      const next = cursor === 'b' ? 'a' : 'b';
      sendJson(res, 200, {
        next: `http://127.0.0.1:${req.socket.localPort}/api/locations/?cursor=${next}`,
        results: [],
      });
    });
    const api = client(server);
    const pages: unknown[] = [];
    const error = await (async () => {
      for await (const page of followCursor({
        client: api,
        operation: 'listLocations',
        startUrl: api.operationUrl('listLocations').href,
      }))
        pages.push(page);
    })().catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError);
    assert.equal(error.code, ERROR_CODES.CURSOR_LOOP);
    assert.ok(pages.length <= 3);
    assert.ok(server.hits.length <= 3);
  });

  it('stops when next points at the page itself', async () => {
    const server = await serve((req, res) =>
      sendJson(res, 200, {
        next: `http://127.0.0.1:${req.socket.localPort}${req.url}`,
        results: [{ id: 1 }],
      }),
    );
    const api = client(server);
    const error = await (async () => {
      for await (const _ of followCursor({
        client: api,
        operation: 'listLocations',
        startUrl: `${server.origin}/api/locations/?cursor=x`,
      }));
    })().catch((e: unknown) => e);
    assert.ok(error instanceof StoreSyncError && error.code === ERROR_CODES.CURSOR_LOOP);
    assert.equal(server.hits.length, 1);
  });

  it('resumes a killed full scan from the saved next link and ends with every record once', async () => {
    let origin = '';
    const pages = locationPages(23, 5, () => origin);
    const server = await serve((req, res) => sendJson(res, 200, pages(new URL(req.url!, origin))));
    origin = server.origin;
    const api = client(server);
    const warehouse = new MemoryWarehouse();
    warehouse.failAfter = 2;
    const args = {
      stream: STREAMS.locations,
      client: api,
      mode: 'incremental' as const,
      options: defaultStreamOptions('locations'),
      now: NOW,
      commit: warehouse.commit,
      logger,
    };
    await assert.rejects(runStream({ ...args, state: emptyStreamState() }), /simulated kill/);
    assert.equal(warehouse.rows.size, 10);
    const saved = warehouse.state!;
    assert.equal(saved.pass?.slices['all']?.nextUrl, `${origin}/api/locations/?cursor=10`);
    const hitsBefore = server.hits.length;
    warehouse.failAfter = Number.POSITIVE_INFINITY;
    const progress: number[] = [];
    const summary = await runStream({ ...args, state: saved, onProgress: (p) => progress.push(p.pages) });
    assert.deepEqual(progress, [1, 2, 3], 'progress is reported after every committed page');
    assert.equal(summary.resumed, true);
    assert.deepEqual(
      warehouse.keys(),
      Array.from({ length: 23 }, (_, i) => i + 1),
    );
    assert.equal(
      server.hits[hitsBefore]?.url,
      '/api/locations/?cursor=10',
      'the resumed run starts at the saved page',
    );
    assert.equal(summary.requests, 3);
    const final = warehouse.commits.at(-1)!;
    assert.deepEqual(final.completedFullScan, { passStartedAt: NOW.toISOString() });
    assert.equal(final.state.pass, null);
    assert.equal(final.state.lastFullScanAt, NOW.toISOString());
  });

  it('hands a record that fails its schema on as a rejection with reason and raw JSON, and keeps the rest', async () => {
    // `address` is not the object the schema promises: the record's structure is wrong, so it is rejected
    // whole. A record whose only problem is a value (`accept_return`, id 4) goes on, for normalize to refuse
    // that field alone (src/extract/validate.ts).
    const bad = { id: 2, name: 'Broken', accept_return: 'yes', address: 'nowhere' };
    const fieldOnly = { id: 4, name: 'Odd', accept_return: 'yes', address: { country: 7 } };
    const server = await serve((_req, res) =>
      sendJson(res, 200, {
        next: null,
        results: [{ id: 1, name: 'Fine' }, bad, { id: 3, extra_field: [1, 2] }, fieldOnly],
      }),
    );
    const warehouse = new MemoryWarehouse();
    const summary = await runStream({
      stream: STREAMS.locations,
      client: client(server),
      state: emptyStreamState(),
      mode: 'incremental',
      options: defaultStreamOptions('locations'),
      now: NOW,
      commit: warehouse.commit,
      logger,
    });
    assert.equal(summary.records, 3);
    assert.equal(summary.rejections, 1);
    assert.deepEqual(warehouse.keys(), [1, 3, 4]);
    assert.deepEqual(warehouse.rows.get('4'), fieldOnly);
    assert.deepEqual(
      warehouse.rows.get('3'),
      { id: 3, extra_field: [1, 2] },
      'records are kept exactly as received',
    );
    const [rejection] = warehouse.rejections;
    assert.equal(rejection?.stream, 'locations');
    assert.equal(rejection?.key, '2');
    assert.deepEqual(rejection?.raw, bad);
    assert.match(rejection?.reason ?? '', /accept_return: .*boolean/i);
    assert.match(rejection?.reason ?? '', /address: .*object/);
    assert.equal(rejection?.fieldPath, 'accept_return', 'the first issue names the field');
    assert.equal(rejection?.source, '/api/locations/');
  });
});
