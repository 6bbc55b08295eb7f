import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { burstOf } from '../../src/extract/pacing.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  startArrivalsProxy,
  TOKEN,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * What a new user meets first (issue 30, "Friendly first steps"), through the built CLI: the warehouse's folder
 * is created, a wrong scheme, port, host or base path is told in one sentence with the fix, a config's JSON
 * error has a line and a column, `sync --rate-limit` paces a one-off run, and `query` shows at most 1,000 rows
 * in a table unless asked.
 */

const oneOff = (baseUrl: string, warehouse: string) => [
  '--base-url',
  baseUrl,
  '--token-env',
  TOKEN_ENV,
  '--warehouse',
  warehouse,
];

const listen = (server: Server) =>
  new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
const close = (server: Server) =>
  new Promise<void>((resolve) => {
    server.closeAllConnections();
    server.close(() => resolve());
  });

describe('cli: first steps', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    sandbox = await testSandbox({ scale: 10 });
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it("sync and ingest create the warehouse's folder; query, status and export name a missing warehouse and create nothing", async () => {
    const cwd = path.join(dir, 'folders');
    await mkdir(cwd);
    // The README's config: data/warehouse.duckdb, before data/ exists.
    const config = await writeConfig(cwd, {
      warehouse: 'data/warehouse.duckdb',
      stores: [{ name: 'main', baseUrl: sandbox.baseUrl }],
    });
    for (const command of [['query', 'SELECT 1'], ['status'], ['export', '--out', 'parquet']]) {
      const result = await runCli([...command, '--config', config], { cwd });
      assertCleanError(
        result,
        2,
        /^error: no warehouse at \S+\/data\/warehouse\.duckdb: it does not exist yet; run a sync or an ingest first/m,
      );
    }
    assert.equal(existsSync(path.join(cwd, 'data')), false, 'a reader created no folder');

    assertExit(await runCli(['sync', '--config', config, '--streams', 'locations'], { cwd }), 0);
    const [row] = await readWarehouse<{ n: number }>(
      path.join(cwd, 'data', 'warehouse.duckdb'),
      'SELECT count(*)::INT AS n FROM locations',
    );
    assert.equal(row!.n, 2);

    // A one-off job's --warehouse two folders deep, relative to where the command runs.
    assertExit(
      await runCli(['sync', ...oneOff(sandbox.baseUrl, 'out/shop/w.duckdb'), '--streams', 'locations'], {
        cwd,
      }),
      0,
    );
    assert.equal(existsSync(path.join(cwd, 'out', 'shop', 'w.duckdb')), true);

    const documents = path.join(cwd, 'product.json');
    await writeFile(documents, `${JSON.stringify(sandbox.store.snapshot('products')[0])}\n`);
    const ingest = await runCli(['ingest', documents, '--warehouse', 'ingested/w.duckdb'], { cwd });
    assertExit(ingest, 0);
    const [products] = await readWarehouse<{ n: number }>(
      path.join(cwd, 'ingested', 'w.duckdb'),
      'SELECT count(*)::INT AS n FROM products',
    );
    assert.equal(products!.n, 1);
  });

  it('https:// to a plain-http port: one sentence, use http://', async () => {
    const plain = createServer((_req, res) => res.end('plain'));
    await listen(plain);
    try {
      const port = (plain.address() as AddressInfo).port;
      const result = await runCli(
        ['sync', ...oneOff(`https://127.0.0.1:${port}/api/`, path.join(dir, 'tls.duckdb'))],
        { cwd: dir },
      );
      assertCleanError(
        result,
        1,
        new RegExp(
          `^error: GET /api/\\S+ failed: 127\\.0\\.0\\.1:${port} speaks plain HTTP, not TLS \\(ERR_SSL_WRONG_VERSION_NUMBER\\): use http:// instead of https:// in baseUrl$`,
          'm',
        ),
      );
      assert.doesNotMatch(result.stderr, /ssl3_get_record|openssl/i, "OpenSSL's text is not the message");
      // doctor: the same sentence, and no general fix line under it to blur it.
      const doctor = await runCli(
        ['doctor', ...oneOff(`https://127.0.0.1:${port}/api/`, path.join(dir, 'tls.duckdb'))],
        { cwd: dir },
      );
      assertExit(doctor, 1);
      assert.match(
        doctor.stdout,
        /^\[FAIL\] store default: reachable and token accepted: GET \/api\/\S+ failed: 127\.0\.0\.1:\d+ speaks plain HTTP, not TLS \(ERR_SSL_WRONG_VERSION_NUMBER\): use http:\/\/ instead of https:\/\/ in baseUrl\n(?! {7}fix:)/m,
      );
    } finally {
      await close(plain);
    }
  });

  it('connection refused: the host and port, and whether the server runs', async () => {
    const closed = createServer();
    await listen(closed);
    const port = (closed.address() as AddressInfo).port;
    await close(closed);
    const config = await writeConfig(dir, {
      warehouse: 'refused.duckdb',
      // One retry: the message is the same after five, only later.
      maxRetries: 1,
      stores: [{ name: 'main', baseUrl: `http://127.0.0.1:${port}/api/` }],
    });
    const result = await runCli(['sync', '--config', config, '--streams', 'locations'], { cwd: dir });
    assertCleanError(
      result,
      1,
      new RegExp(
        `could not connect to 127\\.0\\.0\\.1:${port}: the connection was refused \\(ECONNREFUSED\\); is the server running, and are the host and port of baseUrl right\\?$`,
        'm',
      ),
    );
  });

  it('a host name that does not resolve: the name, and check baseUrl', async () => {
    // RFC 2606 reserves .invalid: it never resolves, on any network or none.
    const result = await runCli(
      [
        'sync',
        ...oneOff('https://shop.store-sync-test.invalid/api/', path.join(dir, 'dns.duckdb')),
        '--streams',
        'locations',
      ],
      { cwd: dir },
    );
    assertExit(result, 1);
    assert.match(
      result.stderr,
      /^error: GET \/api\/locations\/ failed: the host name shop\.store-sync-test\.invalid does not resolve \(ENOTFOUND: DNS knows no such name\); check baseUrl for a typo$|could not look up the host name shop\.store-sync-test\.invalid \(EAI_AGAIN/m,
    );
  });

  it('a base URL without the API path, and a 404 on the first list: the URL and the setting', async () => {
    // The sandbox's origin without /api/: every list answers 404.
    const result = await runCli(
      ['sync', ...oneOff(`${sandbox.origin}/`, path.join(dir, 'root.duckdb')), '--streams', 'locations'],
      { cwd: dir },
    );
    assertCleanError(
      result,
      1,
      new RegExp(
        `^error: GET /locations/ was not found \\(404\\), the first list request of stream locations \\(${sandbox.origin}/locations/\\): the base URL ${sandbox.origin}/ probably lacks the API's path \\(such as ${sandbox.origin}/api/\\): set baseUrl in the config \\(--base-url for a one-off job\\) to the store's administration API root$`,
        'm',
      ),
    );
    assert.doesNotMatch(result.stderr, /the id exists/);

    const wrong = await runCli(
      ['sync', ...oneOff(`${sandbox.origin}/api/v9/`, path.join(dir, 'v9.duckdb')), '--streams', 'locations'],
      { cwd: dir },
    );
    assertCleanError(
      wrong,
      1,
      new RegExp(
        `^error: GET /api/v9/locations/ was not found \\(404\\), the first list request of stream locations \\(${sandbox.origin}/api/v9/locations/\\): check that ${sandbox.origin}/api/v9/ is the store's administration API root, and set baseUrl in the config \\(--base-url for a one-off job\\) to it$`,
        'm',
      ),
    );

    // doctor says the same, for every stream.
    const doctor = await runCli(['doctor', ...oneOff(`${sandbox.origin}/`, path.join(dir, 'root.duckdb'))], {
      cwd: dir,
    });
    assertExit(doctor, 1);
    assert.match(
      doctor.stdout,
      /\[FAIL\] store default: reachable and token accepted: GET \/\S+ was not found \(404\), the first list request of stream \S+ \(\S+\): the base URL \S+ probably lacks the API's path/,
    );
  });

  it('a config with a trailing comma: FILE:LINE:COLUMN and what is wrong', async () => {
    const cwd = path.join(dir, 'json');
    await mkdir(cwd);
    const store = `    { "name": "main", "baseUrl": "${sandbox.baseUrl}", "tokenEnv": "${TOKEN_ENV}" },`;
    await writeFile(
      path.join(cwd, 'sync.config.json'),
      `{\n  "warehouse": "data/w.duckdb",\n  "stores": [\n${store}\n  ]\n}\n`,
    );
    // The comma after the store's entry: line 4, the column an editor shows.
    const column = store.lastIndexOf(',') + 1;
    for (const command of ['sync', 'status', 'doctor']) {
      const result = await runCli([command], { cwd });
      assertExit(result, 2);
      assert.match(
        `${result.stdout}${result.stderr}`,
        new RegExp(
          `sync\\.config\\.json:4:${column}: a trailing comma: JSON allows no comma after the last item \\(the config file is not valid JSON\\)`,
        ),
        command,
      );
      assert.doesNotMatch(result.stderr, /position \d+/);
    }
  });

  it('sync --rate-limit paces a one-off run over the config, and is checked like the sandbox flag', async () => {
    const paged = await startSandbox({ rateLimit: 0, scale: 10, seed: 7, tokens: [TOKEN], pageSize: 1 });
    const proxy = await startArrivalsProxy(paged);
    try {
      // The config says no limit (rateLimit 0): the flag alone paces this run.
      const config = await writeConfig(dir, {
        warehouse: 'paced.duckdb',
        stores: [{ name: 'main', baseUrl: proxy.baseUrl }],
      });
      const rate = 5;
      const result = await runCli(
        ['sync', '--config', config, '--streams', 'products', '--rate-limit', String(rate)],
        { cwd: dir },
      );
      assertExit(result, 0);
      const pages = paged.store.counts.products;
      // One request per page of one product (no request is spent on probing access first).
      const requests = proxy.arrivals.length;
      assert.ok(requests >= pages, `${requests} requests for ${pages} pages`);
      const span = proxy.arrivals.at(-1)! - proxy.arrivals[0]!;
      // A burst of burstOf(rate) from the full bucket, then spaced at 1/rate: the run takes at least
      // (requests - burst) / rate. (Single gaps vary: a request sent late by a busy event loop arrives closer to
      // the next one.)
      assert.ok(
        span >= ((requests - burstOf(rate)) / rate) * 1000 * 0.95,
        `${requests} requests in ${span.toFixed(0)} ms at ${rate}/s`,
      );

      for (const bad of ['-1', 'fast']) {
        const refused = await runCli(['sync', '--config', config, '--rate-limit', bad], { cwd: dir });
        assertCleanError(
          refused,
          2,
          /--rate-limit must be a number of requests per second, or 0 for none \(got (-1|something that is not a number)\)/,
        );
      }
      const help = await runCli(['sync', '--help']);
      assert.match(help.stdout, /--rate-limit\s+Requests per second to each store for this run/);
    } finally {
      await proxy.close();
      await paged.close();
    }
  });

  it('query shows 1,000 rows in a table with a note when it cuts; --limit; CSV and JSON give every row', async () => {
    const warehouse = path.join(dir, 'query.duckdb');
    assertExit(
      await runCli(['sync', ...oneOff(sandbox.baseUrl, warehouse), '--streams', 'locations'], { cwd: dir }),
      0,
    );
    const sql = 'SELECT range AS n FROM range(2500)';
    const lines = (text: string) => text.trimEnd().split('\n');

    const table = await runCli(['query', sql, '--warehouse', warehouse]);
    assertExit(table, 0);
    const shown = lines(table.stdout);
    // Header, rule, 1,000 rows, the note.
    assert.equal(shown.length, 1003);
    assert.equal(shown[1001]!.trim(), '999');
    assert.equal(shown.at(-1), '(showing 1,000 of 2,500 rows; --limit 0 for all)');

    const all = await runCli(['query', sql, '--warehouse', warehouse, '--limit', '0']);
    assertExit(all, 0);
    assert.equal(lines(all.stdout).length, 2502);
    assert.doesNotMatch(all.stdout, /showing/);

    const few = await runCli(['query', sql, '--warehouse', warehouse, '--limit', '3']);
    assert.deepEqual(lines(few.stdout).slice(2), [
      '0',
      '1',
      '2',
      '(showing 3 of 2,500 rows; --limit 0 for all)',
    ]);

    const fits = await runCli(['query', 'SELECT 1 AS one', '--warehouse', warehouse]);
    assert.deepEqual(lines(fits.stdout), ['one', '---', '  1']);

    const json = await runCli(['query', sql, '--warehouse', warehouse, '--format', 'json']);
    assertExit(json, 0);
    assert.equal((JSON.parse(json.stdout) as unknown[]).length, 2500);
    assert.equal(json.stderr, '');

    // A cut CSV stays CSV: the note goes to stderr.
    const csv = await runCli(['query', sql, '--warehouse', warehouse, '--format', 'csv', '--limit', '10']);
    assertExit(csv, 0);
    assert.deepEqual(lines(csv.stdout), ['n', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9']);
    assert.equal(csv.stderr, '(showing 10 of 2,500 rows; --limit 0 for all)\n');

    for (const bad of ['-1', '2.5']) {
      assertCleanError(
        await runCli(['query', sql, '--warehouse', warehouse, '--limit', bad]),
        2,
        /--limit must be an integer from 0 to/,
      );
    }
    const help = await runCli(['query', '--help']);
    assert.match(help.stdout, /--limit\s+Most rows printed \(0: all\)\. Default 1,000 for --format table/);
  });

  it('leaks no token and no escape sequence', () => {
    assertNoSecretsOrEscapes();
  });
});
