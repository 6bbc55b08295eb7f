import assert from 'node:assert/strict';
import type { ServerResponse } from 'node:http';
import { after, describe, it } from 'node:test';
import { ERROR_CODES, StoreSyncError } from '../../src/errors.js';
import { ApiClient, type ClientOptions } from '../../src/extract/client.js';
import { RequestPacer } from '../../src/extract/pacing.js';
import { redact, redactValue, registerSecret } from '../../src/log.js';
import { captureLogger, sendJson, startServer, type TestServer } from './helpers.js';

/**
 * Hardening of the client (docs/reliability.md, "Hardening"): a token echoed back in any spelling JSON allows
 * never leaves the client, a response body is bounded while it streams, a request has a total deadline
 * however slowly its server trickles, and a 429 neither outruns the pacer nor keeps one request waiting past
 * maxWaitMs.
 */

// Every character the issue names: `/`, `+`, `=`, a quote, a backslash and a non-ASCII letter (latin-1, so it
// can go in the Authorization header, as a real token must).
const TOKEN = 'pk_live/Ab+Cd/9xYz=="\\é';
// Not a header: a second secret, echoed by the server, with a character outside the BMP (a surrogate pair).
const WIDE_SECRET = 'wide-secret-😀-Ω/+=';
registerSecret(WIDE_SECRET);
// The client registers its token; the redact tests below run before any client exists.
registerSecret(TOKEN);

const servers: TestServer[] = [];
const clients: ApiClient[] = [];
const { logger, lines } = captureLogger();
const errorTexts: string[] = [];

async function serve(handler: Parameters<typeof startServer>[0]): Promise<TestServer> {
  const server = await startServer(handler);
  servers.push(server);
  return server;
}

function client(server: TestServer, options: Partial<ClientOptions> = {}): ApiClient {
  const c = new ApiClient({
    baseUrl: `${server.origin}/api/`,
    token: TOKEN,
    rateLimit: 0,
    retry: { baseDelayMs: 1, maxDelayMs: 5 },
    logger,
    ...options,
  });
  clients.push(c);
  return c;
}

async function failure(fn: () => Promise<unknown>): Promise<StoreSyncError> {
  try {
    await fn();
  } catch (error) {
    assert.ok(error instanceof StoreSyncError, `expected a StoreSyncError, got ${String(error)}`);
    errorTexts.push(error.message, JSON.stringify(error.details), String((error.cause as Error)?.message));
    return error;
  }
  assert.fail('expected a failure');
}

/** Every JSON escape undone, up to three levels deep: what a reader that decodes the text would see. */
function unescapeJson(text: string): string {
  const short: Record<string, string> = {
    '"': '"',
    '\\': '\\',
    '/': '/',
    b: '\b',
    f: '\f',
    n: '\n',
    r: '\r',
    t: '\t',
  };
  let out = text;
  for (let level = 0; level < 3; level++)
    out = out.replace(/\\+(u[0-9a-fA-F]{4}|["\\/bfnrt])/g, (_, e: string) =>
      e[0] === 'u' && e.length === 5 ? String.fromCharCode(Number.parseInt(e.slice(1), 16)) : short[e]!,
    );
  return out;
}

/** Whether `text` holds a secret, as is or in any JSON spelling. */
function leaks(text: string): boolean {
  const decoded = unescapeJson(text);
  return [TOKEN, WIDE_SECRET].some((s) => text.includes(s) || decoded.includes(s));
}

/** The spellings a server may use for a string: JSON.stringify's, PHP's `\/`, all `\u` (mixed case), a mix. */
const hex = (unit: number, upper: boolean) => {
  const h = unit.toString(16).padStart(4, '0');
  return `\\u${upper ? h.toUpperCase() : h}`;
};
const SPELLINGS: Record<string, (s: string) => string> = {
  plain: (s) => JSON.stringify(s),
  php: (s) => JSON.stringify(s).replace(/\//g, '\\/'),
  unicode: (s) =>
    `"${Array.from({ length: s.length }, (_, i) => hex(s.charCodeAt(i), i % 2 === 0)).join('')}"`,
  mixed: (s) =>
    `"${Array.from({ length: s.length }, (_, i) => {
      const c = s[i]!;
      if (i % 2 === 1) return hex(s.charCodeAt(i), true);
      return JSON.stringify(c).slice(1, -1).replace('/', '\\/');
    }).join('')}"`,
};

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(servers.map((s) => s.close()));
  assert.ok(lines.length > 0);
  for (const text of [...lines, ...errorTexts]) assert.ok(!leaks(text), `a secret leaked: ${text}`);
});

describe('redact', () => {
  it('masks a secret in every spelling JSON allows, mixed, doubled, and in parsed values', () => {
    for (const secret of [TOKEN, WIDE_SECRET]) {
      for (const [name, spell] of Object.entries(SPELLINGS)) {
        const body = `{"name": "echo ${spell(secret).slice(1, -1)} here"}`;
        const masked = redact(body);
        assert.ok(!leaks(masked), `${name}: ${masked}`);
        assert.match(masked, /echo \*\*\* here/, name);
        // The JSON stays valid and the parsed value is masked too.
        assert.deepEqual(JSON.parse(masked), { name: 'echo *** here' }, name);
        assert.deepEqual(redactValue(JSON.parse(body)), { name: 'echo *** here' }, name);
        // Escaped twice: a body excerpt inside a JSON log line.
        assert.ok(!leaks(redact(JSON.stringify({ message: body }))), `${name}, quoted`);
      }
    }
    // Keys, nesting and arrays of a parsed value; text without a secret is left as it is.
    const parsed = redactValue({ [TOKEN]: [{ deep: `x${WIDE_SECRET}y` }, 1, null], n: 2 });
    assert.deepEqual(parsed, { '***': [{ deep: 'x***y' }, 1, null], n: 2 });
    const harmless = 'a \\/ path and \\u0041 letter and "quotes"';
    assert.equal(redact(harmless), harmless);
  });
});

describe('ApiClient hardening', () => {
  it('a page echoing the token in any spelling comes back with it masked, in values and in keys', async () => {
    const spellings = Object.values(SPELLINGS);
    const server = await serve((req, res) => {
      const auth = String(req.headers.authorization ?? '');
      // The server echoes what it received (latin-1 decoded, as Node decodes a header).
      const token = auth.replace(/^Bearer /, '');
      const items = spellings.flatMap((spell, i) => [
        `{"id": ${i * 3 + 1}, "name": ${spell(`echo ${token}`)}}`,
        `{"id": ${i * 3 + 2}, "name": ${spell(WIDE_SECRET)}, ${spell(token)}: ${spell(token)}}`,
        `{"id": ${i * 3 + 3}, "name": "fine", "address": {"city": ${spell(`${token}${token}`)}}}`,
      ]);
      const body = `{"next": null, "previous": null, "results": [${items.join(', ')}]}`;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    });
    const api = client(server);
    const page = await api.call('listLocations', {});
    const text = JSON.stringify(page);
    assert.ok(!leaks(text), text);
    assert.equal(page.results.length, spellings.length * 3);
    for (const location of page.results) assert.match(JSON.stringify(location), /\*\*\*/);
    assert.equal(page.results[0]?.name, 'echo ***');
    const raw = await api.listPage('listLocations', api.operationUrl('listLocations').href);
    assert.ok(!leaks(JSON.stringify(raw)));
  });

  it('an error body echoing the token \\u-escaped does not put it in the error or a log line', async () => {
    const server = await serve((_req, res) => {
      const body = `{"detail": "bad token ${SPELLINGS.unicode!(TOKEN).slice(1, -1)}", "also": ${SPELLINGS.php!(TOKEN)}}`;
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(body);
    });
    const api = client(server);
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.HTTP_BAD_REQUEST);
    assert.match(error.message, /bad token \*\*\*/);
    assert.ok(!leaks(error.message) && !leaks(JSON.stringify(error.details)));
    // A message holding the token as the server spelled it (a library's error text) is masked in the log line.
    logger.error('echo', { message: `body: {"t": ${SPELLINGS.unicode!(TOKEN)}}` });
    assert.ok(!leaks(lines.at(-1)!), lines.at(-1));
  });
});

describe('response size cap', () => {
  /** Writes 64 KB chunks until the client goes away; resolves how many bytes it managed to send. */
  function endless(res: ServerResponse, status = 200): Promise<number> {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.write('{"next": null, "results": [');
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    let sent = 0;
    return new Promise((resolve) => {
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent += chunk.length;
      };
      res.on('drain', pump);
      res.on('close', () => resolve(sent));
      pump();
    });
  }

  it('fails a body that streams past maxResponseBytes, at once and without retrying, naming the setting', async () => {
    let closed: Promise<number> | null = null;
    const server = await serve((_req, res) => {
      closed = endless(res);
    });
    const api = client(server, { maxResponseBytes: 1024 * 1024, retry: { maxRetries: 3, baseDelayMs: 1 } });
    const started = Date.now();
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.BAD_RESPONSE);
    assert.equal(error.transient, false);
    assert.match(
      error.message,
      /GET \/api\/locations\/ answered a body larger than maxResponseBytes allows \(1048576 bytes\)/,
    );
    assert.equal(error.details.setting, 'maxResponseBytes');
    assert.equal(server.hits.length, 1, 'not retried');
    // The connection is dropped: the server stops sending (it would never stop otherwise).
    const sent = await closed!;
    assert.ok(sent < 64 * 1024 * 1024, `the server sent ${sent} bytes`);
    assert.ok(Date.now() - started < 60_000);
  });

  it('fails a body whose Content-Length is over the cap before reading it', async () => {
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) });
      res.write('{"next": null, ');
    });
    const api = client(server, { maxResponseBytes: 1024 * 1024 });
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.BAD_RESPONSE);
    assert.match(error.message, /announces 10485760 bytes/);
    assert.equal(server.hits.length, 1);
  });

  it('reads only the start of an endless error body, and retries the 5xx as usual', async () => {
    const server = await serve((_req, res) => {
      void endless(res, 503);
    });
    const api = client(server, { maxResponseBytes: 1024 * 1024, retry: { maxRetries: 2, baseDelayMs: 1 } });
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.equal(server.hits.length, 3);
  });

  it('a body within the cap is read whole', async () => {
    const server = await serve((_req, res) =>
      sendJson(res, 200, { next: null, results: [{ id: 1, name: 'x'.repeat(500_000) }] }),
    );
    const api = client(server, { maxResponseBytes: 1024 * 1024 });
    const page = await api.call('listLocations', {});
    assert.equal(page.results[0]?.name?.length, 500_000);
  });
});

describe('request deadline', () => {
  it('ends a request whose server trickles a byte every 200 ms, as a timeout that is retried', async () => {
    const timers = new Set<NodeJS.Timeout>();
    const server = await serve((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const timer = setInterval(() => res.write(' '), 200);
      timers.add(timer);
      res.on('close', () => {
        clearInterval(timer);
        timers.delete(timer);
      });
    });
    const api = client(server, {
      timeouts: { requestMs: 1000 },
      retry: { maxRetries: 1, baseDelayMs: 1 },
    });
    const started = Date.now();
    const error = await failure(() => api.call('listLocations', {}));
    const took = Date.now() - started;
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.equal(error.details.lastCode, ERROR_CODES.TIMEOUT);
    assert.match(error.message, /took longer than requestDeadlineSeconds allows \(1 s/);
    assert.equal(server.hits.length, 2, 'the timeout is retried by policy');
    assert.ok(took >= 1500, `two attempts of a 1 s deadline took ${took} ms`);
    assert.ok(took < 30_000, `it took ${took} ms: the deadline did not hold`);
    for (const timer of timers) clearInterval(timer);
  });

  it('covers the wait for the headers too, and leaves the caller’s abort its own', async () => {
    const server = await serve(() => {
      // Never answers.
    });
    const api = client(server, { timeouts: { requestMs: 500 }, retry: { maxRetries: 0 } });
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.equal(error.details.lastCode, ERROR_CODES.TIMEOUT);
    const controller = new AbortController();
    const pending = failure(() => api.call('listLocations', { signal: controller.signal }));
    setTimeout(() => controller.abort(new StoreSyncError(ERROR_CODES.INTERNAL, 'stopped by the test')), 100);
    const stopped = await pending;
    assert.doesNotMatch(stopped.message, /requestDeadlineSeconds/);
  });
});

describe('Retry-After at the edges', () => {
  it('a storm of 429s with Retry-After 0 never sends faster than the pacer allows', async () => {
    const at: number[] = [];
    const server = await serve((_req, res) => {
      at.push(performance.now());
      sendJson(res, 429, {}, { 'retry-after': '0' });
    });
    const api = client(server, { rateLimit: 10, retry: { maxRateLimitRetries: 3, baseDelayMs: 1 } });
    await failure(() => api.call('listLocations', {}));
    assert.equal(server.hits.length, 4);
    // At 10 requests a second a retry waits at least 100 ms (each 429 halves the rate, so more); a retry that
    // went straight out would make a storm (21 requests in 40 ms). A retry is sent only after the 429 before
    // it arrived, so the gaps the server sees are at least the client's waits.
    for (let i = 1; i < at.length; i++) {
      const gap = at[i]! - at[i - 1]!;
      assert.ok(
        gap >= 95,
        `retry ${i} came ${gap.toFixed(1)} ms after the 429 before it: faster than 10 a second`,
      );
    }
  });

  it('with pacing off, a 429 with Retry-After 0 still pauses for the first backoff delay', async () => {
    const server = await serve((_req, res, hit) =>
      hit <= 5
        ? sendJson(res, 429, {}, { 'retry-after': '0' })
        : sendJson(res, 200, { next: null, results: [] }),
    );
    const api = client(server, { rateLimit: 0, retry: { baseDelayMs: 100 } });
    const started = Date.now();
    await api.call('listLocations', {});
    const elapsed = Date.now() - started;
    assert.equal(server.hits.length, 6);
    assert.ok(elapsed >= 5 * 95, `five 429s passed in ${elapsed} ms`);
  });

  it('the pacer itself plans the next request an interval behind a 429 with no pause', async () => {
    const pacer = new RequestPacer({ rps: 4, now: () => 0 });
    pacer.onRateLimited(0);
    // Halved to 2 a second: the next slot is 500 ms away, not now.
    const started = performance.now();
    await pacer.acquire();
    const waited = performance.now() - started;
    assert.ok(waited >= 450, `released after ${waited} ms`);
  });

  it('Retry-After 999999 fails the request at once when maxWaitMs cannot cover it, naming the setting', async () => {
    const server = await serve((_req, res) => sendJson(res, 429, {}, { 'retry-after': '999999' }));
    const api = client(server, { retry: { maxWaitMs: 300, baseDelayMs: 1 } });
    const started = Date.now();
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.code, ERROR_CODES.RETRIES_EXHAUSTED);
    assert.equal(error.details.setting, 'maxWaitMinutes');
    assert.match(
      error.message,
      /gave up waiting: .* past the 0\.005 min that maxWaitMinutes allows one request/,
    );
    assert.match(error.message, /resumes from its last committed page next run/);
    assert.equal(server.hits.length, 1);
    assert.ok(Date.now() - started < 10_000);
  });

  it('the waits of one request add up: it gives up once the next would pass maxWaitMs', async () => {
    const server = await serve((_req, res) => sendJson(res, 429, {}, { 'retry-after': '1' }));
    const api = client(server, { retry: { maxWaitMs: 2_500, baseDelayMs: 1 } });
    const started = Date.now();
    const error = await failure(() => api.call('listLocations', {}));
    const took = Date.now() - started;
    assert.equal(error.details.setting, 'maxWaitMinutes');
    // Waited 1 s, then 2 s; a third second would pass 2.5 s.
    assert.equal(server.hits.length, 3);
    assert.ok(Number(error.details.waitedMs) >= 1_900, `waited ${error.details.waitedMs} ms`);
    assert.ok(took < 30_000, `took ${took} ms`);
  });

  it('backoff after server errors counts too', async () => {
    const server = await serve((_req, res) => sendJson(res, 503, { error: 'down' }, { 'retry-after': '1' }));
    const api = client(server, { retry: { maxRetries: 10, maxWaitMs: 1_500, baseDelayMs: 1 } });
    const error = await failure(() => api.call('listLocations', {}));
    assert.equal(error.details.setting, 'maxWaitMinutes');
    assert.equal(server.hits.length, 2);
  });
});
