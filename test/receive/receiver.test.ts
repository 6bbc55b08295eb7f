import assert from 'node:assert/strict';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import path from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { deliver, signBody } from '../../src/receive/send.js';
import { eventIds, orderEvent, PREVIOUS_SECRET, SECRET, spooled, startReceiver, tempDir } from './helpers.js';

/**
 * The receiver as the platform meets it: a real HTTP client (undici) sending signed events to a receiver on
 * loopback, and the spool files read back from disk.
 */

const post = (url: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  request(url, { method: 'POST', body, headers: { 'content-type': 'application/json', ...headers } }).then(
    async (r) => ({ status: r.statusCode, headers: r.headers, body: await r.body.text() }),
  );

describe('store-sync receive: verification, limits, deduplication', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let spoolDir: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    spoolDir = path.join(dir, 'spool');
    receiver = await startReceiver(spoolDir, { maxBodyBytes: 256 * 1024 });
  });

  after(async () => {
    await receiver?.receiver.stop();
    await cleanup?.();
  });

  it('refuses a missing or wrong signature with 401 and spools nothing', async () => {
    const event = JSON.stringify(orderEvent(1));
    const statuses = [
      await deliver(receiver.url, SECRET, event, { signature: null }),
      await deliver(receiver.url, 'not-the-secret', event),
      await deliver(receiver.url, 'not-the-secret', event, { form: 'raw' }),
      await deliver(receiver.url, SECRET, event, { signature: 'abc' }),
      await deliver(receiver.url, SECRET, event, { signature: signBody(SECRET, `${event} `, 'raw') }),
      await deliver(receiver.url, SECRET, event, { header: 'X-Other-Signature' }),
      // Not JSON and not signed right: unverified, so 401, not 400.
      await deliver(receiver.url, 'not-the-secret', '{"event_id": ', { form: 'raw' }),
    ];
    assert.deepEqual(statuses, [401, 401, 401, 401, 401, 401, 401]);
    assert.deepEqual(await spooled(spoolDir), []);
  });

  it('accepts both signature forms, and the previous secret, with non-ASCII names and nested objects', async () => {
    const event = (id: string) => ({
      event_id: id,
      object: 'order',
      event_type: 'order.updated',
      api_version: '2024-04-01',
      webhook: { id: 7, topic: 'orders/updated' },
      // Names that look like integers keep their place in the re-serialised form (a JS object moves them).
      data: {
        number: '9001',
        Käufer: { name: 'Zoë Ørsted', city: 'Москва', note: 'tea 🍵 "quoted" \\ back\nline' },
        metadata: { '10': { b: [1, 2.5, { '2': null }] }, '2': true, amount: 1e21 },
      },
    });
    // Written as JSON.stringify would: integer-like names first, the order the receiver must reproduce.
    const cases: [string, Parameters<typeof deliver>[3] & { secret?: string }][] = [
      ['sig-python', { form: 'python' }],
      ['sig-raw', { form: 'raw' }],
      ['sig-previous', { form: 'python', secret: PREVIOUS_SECRET }],
    ];
    for (const [id, options] of cases) {
      const status = await deliver(receiver.url, options.secret ?? SECRET, event(id), options);
      assert.equal(status, 200, id);
    }
    // A pretty-printed body, signed raw, still makes one spool line.
    const pretty = JSON.stringify(event('sig-pretty'), null, 2);
    assert.equal(await deliver(receiver.url, SECRET, pretty, { form: 'raw' }), 200);
    // Signed over text in which the integer-like names do NOT come first: only an order-preserving
    // re-serialisation gets the same bytes.
    const reordered =
      '{"event_id":"sig-order","data":{"b":1,"10":2,"a":{"2":"é","1":"😀"}},"api_version":"2024-04-01"}';
    assert.equal(await deliver(receiver.url, SECRET, reordered, { form: 'python' }), 200);
    const lines = await spooled(spoolDir);
    assert.deepEqual(eventIds(lines), ['sig-python', 'sig-raw', 'sig-previous', 'sig-pretty', 'sig-order']);
    assert.deepEqual(lines[0], event('sig-python'));
    assert.deepEqual(lines[3], event('sig-pretty'));
    // Spooled as received: the raw bytes of the event, one line.
    const files = (await readdir(spoolDir)).filter((n) => n.startsWith('events-'));
    const text = await readFile(path.join(spoolDir, files[0]!), 'utf8');
    assert.ok(text.includes(`${reordered}\n`), 'the body is spooled byte for byte');
  });

  it('answers 413 past the body limit, declared or streamed, and spools nothing', async () => {
    const before = (await spooled(spoolDir)).length;
    const big = JSON.stringify({ ...orderEvent(2, 'too-big'), padding: 'x'.repeat(300 * 1024) });
    assert.equal(await deliver(receiver.url, SECRET, big), 413);
    // Without a content-length (chunked), the limit is found while reading.
    const chunks = Readable.from(
      (function* () {
        for (let i = 0; i < 40; i++) yield Buffer.from('x'.repeat(10 * 1024));
      })(),
    );
    const streamed = await request(receiver.url, {
      method: 'POST',
      body: chunks,
      headers: { 'X-Platform-Signature': 'ab'.repeat(32) },
    }).then(
      async (r) => {
        await r.body.dump();
        return r.statusCode;
      },
      (error: Error) => error.message,
    );
    // The answer comes before the body's end; a client may see it or the connection closing under it.
    assert.ok(streamed === 413 || /closed|reset|socket/i.test(String(streamed)), String(streamed));
    assert.equal((await spooled(spoolDir)).length, before);
    // The receiver goes on.
    assert.equal(await deliver(receiver.url, SECRET, orderEvent(3)), 200);
  });

  it('answers 400 to a signed body that is not a JSON object, and spools nothing', async () => {
    const before = (await spooled(spoolDir)).length;
    for (const body of ['{"event_id": "x",', '[{"event_id": "y"}]', '"text"', '', '\u00ff\u00fe']) {
      const status = await deliver(receiver.url, SECRET, body, { form: 'raw' });
      assert.equal(status, 400, JSON.stringify(body));
    }
    assert.equal((await spooled(spoolDir)).length, before);
  });

  it('acknowledges a redelivered event_id with 200 and spools it once, also when the copies arrive together', async () => {
    const before = await spooled(spoolDir);
    const event = orderEvent(4, 'dup-1');
    for (let i = 0; i < 3; i++) assert.equal(await deliver(receiver.url, SECRET, event), 200);
    const together = orderEvent(5, 'dup-2');
    const statuses = await Promise.all(
      Array.from({ length: 8 }, () => deliver(receiver.url, SECRET, together)),
    );
    assert.deepEqual(statuses, new Array(8).fill(200));
    const added = (await spooled(spoolDir)).slice(before.length);
    assert.deepEqual(eventIds(added), ['dup-1', 'dup-2']);
  });

  it('takes 20 concurrent senders: every event acknowledged and spooled exactly once', async () => {
    const before = (await spooled(spoolDir)).length;
    const perSender = 25;
    const results = await Promise.all(
      Array.from({ length: 20 }, async (_, sender) => {
        const statuses: number[] = [];
        for (let i = 0; i < perSender; i++) {
          const n = 1000 + sender * perSender + i;
          statuses.push(await deliver(receiver.url, SECRET, orderEvent(n)));
        }
        return statuses;
      }),
    );
    assert.deepEqual(results.flat(), new Array(20 * perSender).fill(200));
    const added = eventIds((await spooled(spoolDir)).slice(before));
    assert.equal(added.length, 20 * perSender);
    assert.equal(new Set(added).size, 20 * perSender);
  });

  it('serves GET /healthz, 404 elsewhere, and only POST at the endpoint', async () => {
    const health = await request(`${receiver.origin}/healthz`);
    assert.equal(health.statusCode, 200);
    const body = (await health.body.json()) as {
      ok: boolean;
      queueDepth: number;
      spools: { store: string; writable: boolean; queueDepth: number }[];
    };
    assert.equal(body.ok, true);
    assert.equal(body.queueDepth, 0);
    assert.deepEqual(
      body.spools.map((s) => [s.store, s.writable]),
      [['main', true]],
    );
    assert.equal((await post(`${receiver.origin}/healthz`, '{}')).status, 405);
    assert.equal((await post(`${receiver.origin}/webhooks/other`, '{}')).status, 404);
    assert.equal((await post(`${receiver.origin}/`, '{}')).status, 404);
    const get = await request(receiver.url);
    assert.equal(get.statusCode, 405);
    assert.equal(get.headers.allow, 'POST');
    await get.body.dump();
  });
});

describe('store-sync receive: slow clients, rotation, restarts', () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    await cleanup?.();
  });

  it('cuts a client that does not finish its request within the timeout, and serves others meanwhile', async () => {
    const spoolDir = path.join(dir, 'slow');
    const { receiver, url, origin } = await startReceiver(spoolDir, { requestTimeoutMs: 1_000 });
    try {
      const { port } = new URL(origin);
      const started = Date.now();
      const closed = new Promise<string>((resolve) => {
        const socket = connect(Number(port), '127.0.0.1', () => {
          socket.write(
            'POST /webhooks/main HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"event_id":',
          );
        });
        let answer = '';
        socket.on('data', (chunk) => {
          answer += chunk.toString();
        });
        socket.on('close', () => resolve(answer));
        socket.on('error', () => undefined);
      });
      assert.equal(await deliver(url, SECRET, orderEvent(6)), 200);
      const answer = await closed;
      // Node answers 408 before closing; the bound is generous (busy machine), the default is 30 s.
      assert.match(answer, /^HTTP\/1\.1 408/);
      assert.ok(Date.now() - started < 15_000, `cut after ${Date.now() - started} ms`);
      assert.deepEqual(eventIds(await spooled(spoolDir)), ['evt-6']);
    } finally {
      await receiver.stop();
    }
  });

  it('survives clients that break off, send garbage or lie about their length, and keeps serving', async () => {
    const spoolDir = path.join(dir, 'hostile');
    const { receiver, url, origin } = await startReceiver(spoolDir, { requestTimeoutMs: 2_000 });
    try {
      const { port } = new URL(origin);
      const body = JSON.stringify(orderEvent(7));
      const signature = signBody(SECRET, body);
      const head = (length: number) =>
        `POST /webhooks/main HTTP/1.1\r\nHost: x\r\nX-Platform-Signature: ${signature}\r\nContent-Length: ${length}\r\n\r\n`;
      const raw = (bytes: string, { end = true, wait = 100 } = {}) =>
        new Promise<string>((resolve) => {
          let answer = '';
          const socket = connect(Number(port), '127.0.0.1', () => {
            socket.write(bytes);
            setTimeout(() => (end ? socket.destroy() : socket.end()), wait);
          });
          socket.on('data', (chunk) => {
            answer += chunk.toString();
          });
          socket.on('close', () => resolve(answer));
          socket.on('error', () => undefined);
        });
      await raw(`${head(body.length)}${body.slice(0, 50)}`);
      await raw(`${head(body.length)}${body}`, { wait: 0 });
      assert.match(await raw('GARBAGE\r\n\r\n', { end: false }), /^HTTP\/1\.1 400/);
      assert.match(
        await raw(`GET /healthz HTTP/1.1\r\nX-Big: ${'y'.repeat(70_000)}\r\n\r\n`, { end: false }),
        /^HTTP\/1\.1 431/,
      );
      await raw(`${head(10_000)}${body.slice(0, 10)}`, { end: false });
      await raw(`POST /webhooks/main HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n`, {
        end: false,
      });
      // Still serving, and the event sent whole but cut before its answer may be there, once at most.
      assert.equal((await request(`${origin}/healthz`)).statusCode, 200);
      assert.equal(await deliver(url, SECRET, body), 200);
      assert.deepEqual(eventIds(await spooled(spoolDir)), ['evt-7']);
    } finally {
      await receiver.stop();
    }
  });

  it('rotates by size and by age: closed files get their final name, every event once', async () => {
    const spoolDir = path.join(dir, 'rotate');
    const { receiver, url } = await startReceiver(spoolDir, { rotateBytes: 8 * 1024, rotateMs: 300 });
    try {
      for (let n = 100; n < 110; n++) assert.equal(await deliver(url, SECRET, orderEvent(n)), 200);
      const names = () => readdir(spoolDir).then((all) => all.filter((n) => n.startsWith('events-')));
      assert.ok((await names()).filter((n) => n.endsWith('.ndjson')).length >= 2, 'closed by size');
      // By age: the open file is closed with no further event to trigger it.
      const deadline = Date.now() + 20_000;
      while ((await names()).some((n) => n.endsWith('.open'))) {
        assert.ok(Date.now() < deadline, 'the open file was not closed by age');
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const ids = eventIds(await spooled(spoolDir));
      assert.deepEqual(
        ids,
        Array.from({ length: 10 }, (_, i) => `evt-${100 + i}`),
      );
    } finally {
      await receiver.stop();
    }
  });

  it('recognises redeliveries after a restart, from the spool files', async () => {
    const spoolDir = path.join(dir, 'restart');
    const first = await startReceiver(spoolDir);
    assert.equal(await deliver(first.url, SECRET, orderEvent(200)), 200);
    assert.equal(await deliver(first.url, SECRET, orderEvent(201)), 200);
    await first.receiver.stop();
    const second = await startReceiver(spoolDir);
    try {
      assert.equal(await deliver(second.url, SECRET, orderEvent(200)), 200);
      assert.equal(await deliver(second.url, SECRET, orderEvent(202)), 200);
      assert.deepEqual(eventIds(await spooled(spoolDir)), ['evt-200', 'evt-201', 'evt-202']);
    } finally {
      await second.receiver.stop();
    }
  });

  it('drops a torn last line left by a crash (never acknowledged) and keeps every whole one', async () => {
    const spoolDir = path.join(dir, 'torn');
    await mkdir(spoolDir, { recursive: true });
    const whole = [orderEvent(300), orderEvent(301)].map((e) => JSON.stringify(e)).join('\n');
    const torn = JSON.stringify(orderEvent(302)).slice(0, 500);
    const name = 'events-20240101T000000000Z-000001-abcdef.ndjson.open';
    await writeFile(path.join(spoolDir, name), `${whole}\n${torn}`);
    // A lock left by a receiver that was killed: its process is gone.
    await writeFile(path.join(spoolDir, 'receiver.lock'), '999999999\n');
    const { receiver, url, lines } = await startReceiver(spoolDir);
    try {
      const files = await readdir(spoolDir);
      assert.ok(
        files.includes(name.replace('.open', '')),
        `closed under its final name: ${files.join(', ')}`,
      );
      assert.ok(lines.some((l) => l.includes('receive.torn_tail_dropped')));
      assert.equal(
        await readFile(path.join(spoolDir, name.replace('.open', '')), 'utf8'),
        `${whole}\n`,
        'the whole lines stay byte for byte',
      );
      // The whole lines' events are known (redelivery: not spooled again); the torn one's is not.
      assert.equal(await deliver(url, SECRET, orderEvent(301)), 200);
      assert.equal(await deliver(url, SECRET, orderEvent(302)), 200);
      assert.deepEqual(eventIds(await spooled(spoolDir)), ['evt-300', 'evt-301', 'evt-302']);
    } finally {
      await receiver.stop();
    }
  });

  it('refuses a second receiver on the same spool', async () => {
    const spoolDir = path.join(dir, 'two');
    const first = await startReceiver(spoolDir);
    try {
      await assert.rejects(
        startReceiver(spoolDir),
        /another store-sync receive \(pid \d+\) is writing the spool/,
      );
    } finally {
      await first.receiver.stop();
    }
  });
});
