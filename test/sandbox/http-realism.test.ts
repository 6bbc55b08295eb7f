import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Agent, request } from 'undici';
import { OPERATIONS } from '../../schemas/index.js';
import { isStoreSyncError } from '../../src/errors.js';
import { FaultInjector } from '../../src/sandbox/http/faults.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { assertError, call, callOp } from './http-helpers.js';

/** Realism controls over real HTTP: rate limit, latency, every fault kind, stats and the /__sandbox/ routes. */

const admin = (sandbox: Sandbox, method: string, route: string, json?: unknown, body?: string) =>
  call(sandbox, method, `${sandbox.origin}/__sandbox/${route}`, { token: null, json, body });

describe('rate limit', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await startSandbox({ rateLimit: 4, tokens: ['A', 'B'] });
  });
  after(() => sandbox.close());

  it('answers 429 with Retry-After in whole seconds when a token exceeds its bucket', async () => {
    const results = await Promise.all(
      Array.from({ length: 16 }, () => callOp(sandbox, OPERATIONS.listLocations, {}, { token: 'A' })),
    );
    const statuses = results.map((r) => r.status);
    assert.ok(
      statuses.every((s) => s === 200 || s === 429),
      statuses.join(),
    );
    assert.ok(statuses.filter((s) => s === 200).length >= 4, 'a full bucket holds 4 requests');
    const limited = results.filter((r) => r.status === 429);
    assert.ok(limited.length > 0, 'a burst of 16 exceeds 4 per second');
    for (const r of limited) {
      assertError(r, 429, 'rate_limited');
      assert.match(String(r.headers['retry-after']), /^[1-9]\d*$/);
    }
  });

  it('keeps a separate bucket per token', async () => {
    await Promise.all(
      Array.from({ length: 8 }, () => callOp(sandbox, OPERATIONS.listLocations, {}, { token: 'A' })),
    );
    const other = await callOp(sandbox, OPERATIONS.listLocations, {}, { token: 'B' });
    assert.equal(other.status, 200);
  });

  it('never limits a client paced below the rate', async () => {
    const paced = await startSandbox({ rateLimit: 4 });
    try {
      for (let i = 0; i < 8; i++) {
        const result = await callOp(paced, OPERATIONS.listLocations);
        assert.equal(result.status, 200, `request ${i}`);
        await sleep(300);
      }
    } finally {
      await paced.close();
    }
  });

  it('is off with rateLimit 0', async () => {
    const free = await startSandbox({ rateLimit: 0 });
    try {
      const results = await Promise.all(
        Array.from({ length: 30 }, () => callOp(free, OPERATIONS.listLocations)),
      );
      assert.deepEqual(new Set(results.map((r) => r.status)), new Set([200]));
    } finally {
      await free.close();
    }
  });
});

describe('faults', () => {
  let sandbox: Sandbox;
  // Short timeouts so stalled answers fail fast on the client side.
  const impatient = new Agent({ headersTimeout: 400, bodyTimeout: 400 });
  before(async () => {
    sandbox = await startSandbox({ rateLimit: 0, pageSize: 5 });
  });
  after(async () => {
    await sandbox.close();
    await impatient.close();
  });

  const raw = (path = 'products/') =>
    request(`${sandbox.baseUrl}${path}`, {
      headers: { authorization: 'Bearer sandbox-token', 'x-platform-api-version': '2024-04-01' },
      dispatcher: impatient,
    }).then(async (r) => ({ status: r.statusCode, headers: r.headers, text: await r.body.text() }));

  for (const status of [500, 502, 503]) {
    it(`injects ${status} with the error body`, async () => {
      sandbox.setFaults(`${status}:1`);
      const result = await callOp(sandbox, OPERATIONS.listProducts);
      assertError(result, status, 'server_error');
      if (status === 503) assert.equal(result.headers['retry-after'], '1');
    });
  }

  it('injects 429 storms: runs of at least three 429s with Retry-After', async () => {
    sandbox.setFaults('429:0.2,seed:9');
    const statuses: number[] = [];
    for (let i = 0; i < 40; i++) {
      const result = await callOp(sandbox, OPERATIONS.listLocations);
      if (result.status === 429) assert.equal(result.headers['retry-after'], '1');
      statuses.push(result.status);
    }
    const runs = statuses
      .join(',')
      .split(/,?200,?/)
      .filter(Boolean);
    assert.ok(runs.length > 0, 'some storm happened');
    for (const run of runs.slice(0, -1)) assert.ok(run.split(',').length >= 3, `storm ${run}`);
  });

  it('resets the connection without an answer', async () => {
    sandbox.setFaults('reset:1');
    await assert.rejects(raw(), (error: NodeJS.ErrnoException) =>
      /ECONNRESET|UND_ERR_SOCKET/.test(String(error.code)),
    );
  });

  it('truncates the body below its Content-Length', async () => {
    sandbox.setFaults('truncate:1');
    await assert.rejects(raw(), (error: NodeJS.ErrnoException) =>
      /UND_ERR_SOCKET|ECONNRESET/.test(String(error.code)),
    );
  });

  it('stalls until the client gives up, and counts it as aborted', async () => {
    sandbox.setFaults('stall:1,stall-ms:60000');
    sandbox.resetStats();
    await assert.rejects(raw(), (error: NodeJS.ErrnoException) => error.code === 'UND_ERR_HEADERS_TIMEOUT');
    for (let i = 0; i < 50 && !sandbox.stats().byStatus['aborted']; i++) await sleep(20);
    assert.equal(sandbox.stats().byStatus['aborted'], 1);
  });

  it('answers normally after a short stall', async () => {
    sandbox.setFaults('stall:1,stall-ms:100');
    const result = await callOp(sandbox, OPERATIONS.listProducts);
    assert.equal(result.status, 200);
  });

  it('points next at a foreign origin with foreign-next', async () => {
    sandbox.setFaults('foreign-next:1');
    const result = await callOp(sandbox, OPERATIONS.listProducts);
    assert.equal(result.status, 200);
    const next = new URL(result.body.next);
    const base = new URL(sandbox.baseUrl);
    assert.notEqual(next.hostname, base.hostname);
    assert.equal(next.port, base.port);
    assert.equal(next.pathname, '/api/products/');
  });

  it('never touches the /__sandbox/ routes', async () => {
    sandbox.setFaults('500:0.5,reset:0.5');
    for (let i = 0; i < 10; i++) assert.equal((await admin(sandbox, 'GET', 'stats')).status, 200);
  });

  it('replays the same faults for the same mix and seed', async () => {
    const sequence = async () => {
      sandbox.setFaults('500:0.3,503:0.3,seed:21');
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await callOp(sandbox, OPERATIONS.listLocations)).status);
      return statuses;
    };
    const first = await sequence();
    assert.deepEqual(await sequence(), first);
    assert.ok(first.includes(200) && first.some((s) => s >= 500), first.join());
  });

  it('reads and sets the mix through /__sandbox/faults', async () => {
    const set = await admin(sandbox, 'PUT', 'faults', undefined, '502:0.25,seed:4');
    assert.equal(set.status, 200, set.text);
    const read = await admin(sandbox, 'GET', 'faults');
    assert.equal(read.body.spec, '502:0.25,seed:4');
    assert.deepEqual(read.body.rates, { '502': 0.25 });
    const json = await admin(sandbox, 'PUT', 'faults', { rates: { reset: 0.1 }, stallMs: 5 });
    assert.equal(json.status, 200, json.text);
    assert.equal(json.body.spec, 'reset:0.1,stall-ms:5');
    for (const bad of ['500:2', 'boom:0.1', '500:0.6,502:0.6']) {
      assertError(await admin(sandbox, 'PUT', 'faults', undefined, bad), 400, 'validation_error');
    }
    assert.equal((await admin(sandbox, 'PUT', 'faults', { spec: 'none' })).body.spec, 'none');
    assert.equal((await callOp(sandbox, OPERATIONS.listLocations)).status, 200);
  });

  it('refuses a bad fault spec at startup as a usage error', async () => {
    await assert.rejects(startSandbox({ faults: 'teapot:0.1' }), (error) => isStoreSyncError(error, 'usage'));
  });

  it('picks at most one fault per request, in proportion to the rates', () => {
    const injector = new FaultInjector('500:0.25,reset:0.25', 5);
    const counts = new Map<string, number>();
    for (let i = 0; i < 4000; i++) {
      const kind = injector.roll() ?? 'none';
      counts.set(kind, (counts.get(kind) ?? 0) + 1);
    }
    assert.deepEqual([...counts.keys()].sort(), ['500', 'none', 'reset']);
    for (const kind of ['500', 'reset']) assert.ok(Math.abs(counts.get(kind)! - 1000) < 150, `${kind}`);
  });
});

describe('latency', () => {
  it('delays every API answer by at least latencyMs', async () => {
    const slow = await startSandbox({ rateLimit: 0, latencyMs: 120 });
    try {
      const started = performance.now();
      assert.equal((await callOp(slow, OPERATIONS.listLocations)).status, 200);
      assert.ok(performance.now() - started >= 115);
    } finally {
      await slow.close();
    }
  });
});

describe('stats and test-only routes', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await startSandbox({ rateLimit: 0 });
  });
  after(() => sandbox.close());

  it('counts API requests by status and route template, and resets', async () => {
    assert.equal((await admin(sandbox, 'POST', 'stats/reset')).status, 200);
    await callOp(sandbox, OPERATIONS.listProducts);
    await callOp(sandbox, OPERATIONS.listProducts, {}, { token: null });
    await callOp(sandbox, OPERATIONS.markOrderPaid, { number: 'NO-SUCH-ORDER' });
    await call(sandbox, 'GET', 'no-such-thing/');
    await admin(sandbox, 'GET', 'faults');
    const stats = await admin(sandbox, 'GET', 'stats');
    assert.equal(stats.status, 200);
    assert.deepEqual(stats.body, {
      requests: 4,
      byStatus: { '200': 1, '401': 1, '404': 2 },
      byRoute: {
        'GET (no route)': 1,
        'GET /products/': 2,
        'POST /orders/{number}/mark-as-paid/': 1,
      },
    });
    assert.deepEqual(sandbox.stats(), stats.body);
    await admin(sandbox, 'POST', 'stats/reset');
    assert.deepEqual((await admin(sandbox, 'GET', 'stats')).body, { requests: 0, byStatus: {}, byRoute: {} });
  });

  it('applies a mutation plan and answers what changed', async () => {
    const result = await admin(sandbox, 'POST', 'mutate', { createLocations: 2, seed: 3 });
    assert.equal(result.status, 200, result.text);
    const created: number[] = result.body.created.locations;
    assert.equal(created.length, 2);
    const snapshot = await admin(sandbox, 'GET', 'snapshot/locations');
    assert.equal(snapshot.status, 200);
    assert.equal(snapshot.body.count, snapshot.body.results.length);
    const ids = snapshot.body.results.map((l: { id: number }) => l.id);
    for (const id of created) assert.ok(ids.includes(id));
  });

  it('refuses a bad mutation plan and unknown admin routes with the error body', async () => {
    const bad = assertError(
      await admin(sandbox, 'POST', 'mutate', { createLocations: -1 }),
      400,
      'validation_error',
    );
    assert.deepEqual(
      bad.fields?.map((f) => f.field),
      ['createLocations'],
    );
    const unknown = assertError(
      await admin(sandbox, 'POST', 'mutate', { explode: 1 }),
      400,
      'validation_error',
    );
    assert.deepEqual(
      unknown.fields?.map((f) => f.field),
      ['explode'],
    );
    assertError(await admin(sandbox, 'GET', 'snapshot/orders'), 404, 'not_found');
    assertError(await admin(sandbox, 'GET', 'nothing'), 404, 'not_found');
    assertError(await admin(sandbox, 'POST', 'mutate', undefined, '{oops'), 400, 'invalid_json');
  });

  it('serves a snapshot of every list resource', async () => {
    for (const resource of ['products', 'subscriptions', 'locations', 'metadata', 'fulfillment_orders']) {
      const snapshot = await admin(sandbox, 'GET', `snapshot/${resource}`);
      assert.equal(snapshot.status, 200);
      assert.ok(snapshot.body.count > 0, resource);
    }
  });
});

describe('fulfillment event discovery', () => {
  it('lists the event ids of a fulfillment under /__sandbox/, and each one can be retrieved through the API', async () => {
    const sandbox = await startSandbox({ seed: 3, rateLimit: 0 });
    try {
      const headers = { authorization: 'Bearer sandbox-token', 'content-type': 'application/json' };
      const created = await fetch(`${sandbox.baseUrl}orders/`, {
        method: 'POST',
        headers: { ...headers, 'x-platform-api-version': '2024-04-01' },
        body: JSON.stringify({
          lines: [{ product_id: sandbox.store.snapshot('products')[0]!.id, quantity: 1 }],
        }),
      });
      const order = (await created.json()) as { number: string };
      const shipped = await fetch(`${sandbox.baseUrl}orders/${order.number}/fulfillments/`, {
        method: 'POST',
        headers: { ...headers, 'x-platform-api-version': '2024-04-01' },
        body: JSON.stringify({ carrier: 'dhl' }),
      });
      const fulfillment = (await shipped.json()) as { id: number };
      const listed = await fetch(
        `${sandbox.origin}/__sandbox/orders/${order.number}/fulfillments/${fulfillment.id}/events`,
      );
      const { results } = (await listed.json()) as { results: number[] };
      assert.ok(results.length >= 1);
      const event = await fetch(
        `${sandbox.baseUrl}orders/${order.number}/fulfillments/${fulfillment.id}/events/${results[0]}/`,
        {
          headers: { authorization: 'Bearer sandbox-token', 'x-platform-api-version': '2024-04-01' },
        },
      );
      assert.equal(event.status, 200);
      assert.equal(((await event.json()) as { id: number }).id, results[0]);
      const unknown = await fetch(`${sandbox.origin}/__sandbox/orders/${order.number}/fulfillments/1/events`);
      assert.equal(unknown.status, 404);
    } finally {
      await sandbox.close();
    }
  });
});
