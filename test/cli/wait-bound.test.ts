import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { page, product } from '../chaos/support/hostile-server.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
  writeConfig,
} from './helpers.js';

/**
 * The wait bound through the CLI (docs/reliability.md, "Hardening"): a server that answers a page with
 * `Retry-After: 999999` fails that stream within maxWaitMinutes, with a message naming the wait and the
 * setting, instead of waiting 120 s twenty times; the pages before it stay committed and the next run resumes
 * at the page that was refused.
 */

describe('sync: the wait on one request is bounded by maxWaitMinutes', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let server: Server;
  let baseUrl: string;
  let refusing = true;
  const hits: string[] = [];

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    server = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      hits.push(url.pathname + url.search);
      const send = (status: number, body: unknown, headers: Record<string, string> = {}) => {
        const text = JSON.stringify(body);
        res.writeHead(status, {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(text),
          ...headers,
        });
        res.end(text);
      };
      if (url.pathname !== '/api/products/') return send(404, { error: 'no' });
      if (url.searchParams.get('cursor') !== '2')
        return send(200, page([product(1)], `${baseUrl}products/?cursor=2`));
      if (refusing) return send(429, { detail: 'come back in 11 days' }, { 'retry-after': '999999' });
      send(200, page([product(2)]));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
  });

  after(async () => {
    killChildren();
    server?.closeAllConnections();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await cleanup?.();
  });

  it('fails the stream at once, naming the wait and the setting; the next run resumes at the refused page', async () => {
    const warehouse = path.join(dir, 'wait.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      maxWaitMinutes: 0.05,
      stores: [{ name: 'shop', baseUrl }],
    });
    const started = Date.now();
    const first = await runCli(['sync', '--config', config, '--streams', 'products', '--log-format', 'json']);
    assert.ok(Date.now() - started < 60_000, 'it did not wait out the Retry-After');
    assertExit(first, 1);
    assert.match(
      first.stderr,
      /GET \/api\/products\/\?cursor=2 gave up waiting: after 1 attempt it has waited 0 s and the server asks for 120 s more, past the 0\.05 min that maxWaitMinutes allows one request/,
    );
    assert.equal(hits.filter((h) => h.includes('cursor=2')).length, 1, 'no retry was made');
    const [kept] = await readWarehouse<{ n: bigint }>(warehouse, 'SELECT count(*) AS n FROM products');
    assert.equal(Number(kept!.n), 1, 'the page before the refused one is kept');

    refusing = false;
    hits.length = 0;
    const second = await runCli([
      'sync',
      '--config',
      config,
      '--streams',
      'products',
      '--log-format',
      'json',
    ]);
    assertExit(second, 0);
    const events = jsonLines(second.stderr);
    assert.ok(events.some((e) => e.event === 'stream.resume' && e.stream === 'products'));
    // The stream starts at the refused page: no request goes to the first page again, nor to probe access.
    assert.deepEqual(hits, ['/api/products/?cursor=2']);
    const [all] = await readWarehouse<{ n: bigint }>(warehouse, 'SELECT count(*) AS n FROM products');
    assert.equal(Number(all!.n), 2);
  });

  it('never leaks the token', () => {
    assertNoSecretsOrEscapes();
  });
});
