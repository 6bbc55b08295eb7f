import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { request } from 'undici';
import { parseConfig } from '../../src/config.js';
import { isStoreSyncError } from '../../src/errors.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * The header the API version is sent in is a per-store setting (`apiVersionHeader`), because deployments of
 * this API name it differently. A sandbox started with `versionHeader` reads the version only under that
 * name, so a sync that succeeds against it proves the name was honoured.
 */

const CUSTOM = 'X-Api-Version';

/** Row counts of the tables the 2023-02-10 operations (subscriptions, metadata) and 2024-04-01 ones fill. */
async function counts(warehouse: string): Promise<Record<string, number>> {
  const [row] = await readWarehouse<Record<string, bigint>>(
    warehouse,
    `SELECT (SELECT count(*) FROM subscriptions) AS subscriptions,
            (SELECT count(*) FROM metadata_definitions) AS metadata_definitions,
            (SELECT count(*) FROM products) AS products,
            (SELECT count(*) FROM locations) AS locations`,
  );
  return Object.fromEntries(Object.entries(row!).map(([name, n]) => [name, Number(n)]));
}

function assertAllLoaded(loaded: Record<string, number>): void {
  for (const [table, rows] of Object.entries(loaded)) assert.ok(rows > 0, `${table} has rows: ${rows}`);
}

describe('apiVersionHeader in the config', () => {
  const valid = {
    warehouse: 'w.duckdb',
    stores: [
      { name: 'a', baseUrl: 'https://a.example.com/api/', tokenEnv: 'A_TOKEN' },
      { name: 'b', baseUrl: 'https://b.example.com/api/', tokenEnv: 'B_TOKEN', apiVersionHeader: CUSTOM },
    ],
  };

  it('defaults to X-Platform-API-Version; a store overrides the top level, which overrides the default', () => {
    const plain = parseConfig(valid, 'x', '/srv');
    assert.deepEqual(
      plain.stores.map((s) => [s.apiVersionHeader, s.apiVersionHeaderSource]),
      [
        ['X-Platform-API-Version', 'default'],
        [CUSTOM, 'stores[1].apiVersionHeader'],
      ],
    );
    const topLevel = parseConfig({ ...valid, apiVersionHeader: 'Api-Version' }, 'x', '/srv');
    assert.deepEqual(
      topLevel.stores.map((s) => [s.apiVersionHeader, s.apiVersionHeaderSource]),
      [
        ['Api-Version', 'apiVersionHeader'],
        [CUSTOM, 'stores[1].apiVersionHeader'],
      ],
    );
  });

  it('refuses what is not a header name, and the headers the client sends itself, naming the field', () => {
    const refused = (raw: unknown): string => {
      try {
        parseConfig(raw, 'sync.config.json', '/srv');
      } catch (error) {
        assert.ok(isStoreSyncError(error, 'config_invalid'), String(error));
        return error.message;
      }
      assert.fail('expected the config to be refused');
    };
    const store = valid.stores[0]!;
    assert.match(
      refused({ ...valid, stores: [{ ...store, apiVersionHeader: 'X Api Version' }] }),
      /stores\[0\]\.apiVersionHeader: expected an HTTP header name, such as X-Platform-API-Version/,
    );
    assert.match(
      refused({ ...valid, stores: [{ ...store, apiVersionHeader: '' }] }),
      /stores\[0\]\.apiVersionHeader: expected an HTTP header name/,
    );
    for (const owned of ['Authorization', 'accept', 'Content-Type', 'Host'])
      assert.match(
        refused({ ...valid, stores: [{ ...store, apiVersionHeader: owned }] }),
        /stores\[0\]\.apiVersionHeader: expected a header of its own: Authorization, Accept, Content-Type/,
        owned,
      );
    assert.match(
      refused({ ...valid, apiVersionHeader: 'X-Version:' }),
      /^ {2}apiVersionHeader: expected an HTTP header name/m,
    );
  });
});

describe('store-sync with another version header name', () => {
  let custom: Sandbox;
  let standard: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let customConfig: string;

  before(async () => {
    custom = await testSandbox({ scale: 10, versionHeader: CUSTOM });
    standard = await testSandbox({ scale: 10 });
    ({ dir, cleanup } = await tempDir());
    customConfig = await writeConfig(
      dir,
      {
        warehouse: 'custom.duckdb',
        stores: [{ name: 'shop', baseUrl: custom.baseUrl, apiVersionHeader: CUSTOM }],
      },
      'custom.json',
    );
  });

  after(async () => {
    killChildren();
    await custom?.close();
    await standard?.close();
    await cleanup?.();
  });

  it('syncs every stream, both API versions, from an API that takes the version under that name', async () => {
    custom.resetStats();
    const result = await runCli(['sync', '--config', customConfig]);
    assertExit(result, 0);
    assert.match(result.stdout, /^shop: succeeded in /m);
    // The sandbox answers 400 to a request without the version under its name: every one was answered 200.
    assert.deepEqual(Object.keys(custom.stats().byStatus), ['200']);
    assertAllLoaded(await counts(path.join(dir, 'custom.duckdb')));
  });

  it('without the setting the version goes in X-Platform-API-Version, as before', async () => {
    const plain = await writeConfig(
      dir,
      { warehouse: 'plain.duckdb', stores: [{ name: 'shop', baseUrl: standard.baseUrl }] },
      'plain.json',
    );
    standard.resetStats();
    assertExit(await runCli(['sync', '--config', plain]), 0);
    assert.deepEqual(Object.keys(standard.stats().byStatus), ['200']);
    assertAllLoaded(await counts(path.join(dir, 'plain.duckdb')));

    // The same default against an API that looks elsewhere: refused, and the API's answer names its header.
    const mismatched = await writeConfig(
      dir,
      { warehouse: 'mismatched.duckdb', stores: [{ name: 'shop', baseUrl: custom.baseUrl }] },
      'mismatched.json',
    );
    const refused = await runCli(['sync', '--config', mismatched]);
    assertExit(refused, 1);
    assert.match(refused.stderr, /The X-Api-Version header is required/);
  });

  it('a bad header name in the config exits 2 naming stores[0].apiVersionHeader, before any request', async () => {
    custom.resetStats();
    for (const [name, expected] of [
      ['X Api Version', /stores\[0\]\.apiVersionHeader: expected an HTTP header name/],
      ['Authorization', /stores\[0\]\.apiVersionHeader: expected a header of its own/],
    ] as const) {
      const config = await writeConfig(
        dir,
        {
          warehouse: 'bad.duckdb',
          stores: [{ name: 'shop', baseUrl: custom.baseUrl, apiVersionHeader: name }],
        },
        'bad.json',
      );
      assertCleanError(await runCli(['sync', '--config', config]), 2, expected);
    }
    assert.equal(custom.stats().requests, 0);
    assert.equal(existsSync(path.join(dir, 'bad.duckdb')), false);
  });

  it('doctor names the header sent and where it was set; a refused version gets a fix naming the setting', async () => {
    const result = await runCli(['doctor', '--config', customConfig]);
    assertExit(result, 0);
    assert.match(
      result.stdout,
      /^\[ok\] {3}store shop: API version header: X-Api-Version \(stores\[0\]\.apiVersionHeader\)$/m,
    );
    assert.match(result.stdout, /^all checks passed$/m);

    const mismatched = await runCli(['doctor', '--config', path.join(dir, 'mismatched.json')]);
    assertExit(mismatched, 1);
    assert.match(
      mismatched.stdout,
      /^\[ok\] {3}store shop: API version header: X-Platform-API-Version \(default\)$/m,
    );
    assert.match(
      mismatched.stdout,
      /^\[FAIL\] store shop: reachable and token accepted: .*X-Api-Version header is required.*\n {7}fix: if the store's API takes the version in a header other than X-Platform-API-Version, name it in apiVersionHeader/m,
    );
  });

  it('a one-off job takes --api-version-header; a bad one, or one beside a config file, exits 2', async () => {
    const warehouse = path.join(dir, 'flags.duckdb');
    const job = ['--base-url', custom.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', warehouse];
    const synced = await runCli(['sync', ...job, '--api-version-header', CUSTOM]);
    assertExit(synced, 0);
    assertAllLoaded(await counts(warehouse));

    const doctor = await runCli(['doctor', ...job, '--api-version-header', CUSTOM]);
    assertExit(doctor, 0);
    assert.match(
      doctor.stdout,
      /^\[ok\] {3}store default: API version header: X-Api-Version \(--api-version-header\)$/m,
    );

    assertCleanError(
      await runCli(['sync', ...job, '--api-version-header', 'X Api']),
      2,
      /--api-version-header: expected an HTTP header name, such as X-Platform-API-Version or X-Api-Version \(got "X Api"\)/,
    );
    assertCleanError(
      await runCli(['sync', '--config', customConfig, '--api-version-header', CUSTOM]),
      2,
      /--api-version-header describes the store of a one-off job .*set apiVersionHeader in it/,
    );
    const help = await runCli(['sync', '--help']);
    assertExit(help, 0);
    assert.match(help.stdout, /--api-version-header +Request header that store's API takes the API version/);
  });

  it('store-sync sandbox --version-header reads the version under that name only', async () => {
    const sandbox = startCli(['sandbox', '--port', '0', '--rate-limit', '0', '--version-header', CUSTOM]);
    await waitForStderr(sandbox, /stop with Ctrl-C/);
    const baseUrl = /at (http:\/\/\S+\/api\/)$/m.exec(sandbox.stderr())![1]!;
    assert.match(
      sandbox.stderr(),
      /curl -H 'Authorization: Bearer sandbox-token' -H 'X-Api-Version: 2024-04-01' /,
    );
    const get = async (headers: Record<string, string>) => {
      const response = await request(`${baseUrl}subscriptions/`, {
        headers: { authorization: 'Bearer sandbox-token', ...headers },
      });
      const body = (await response.body.json()) as {
        results?: unknown[];
        error?: { code: string; fields: { field: string }[] };
      };
      return { status: response.statusCode, body };
    };
    const answered = await get({ 'x-api-version': '2023-02-10' });
    assert.equal(answered.status, 200);
    assert.ok(answered.body.results!.length > 0);
    const unseen = await get({ 'x-platform-api-version': '2023-02-10' });
    assert.equal(unseen.status, 400);
    assert.equal(unseen.body.error!.code, 'version_required');
    assert.deepEqual(
      unseen.body.error!.fields.map((f) => f.field),
      [CUSTOM],
    );
    sandbox.child.kill('SIGTERM');
    assertExit(await sandbox.done, 0);

    assertCleanError(
      await runCli(['sandbox', '--port', '0', '--version-header', 'X Api']),
      2,
      /version-header must be an HTTP header name/,
    );
  });

  it('never prints the token', () => {
    assertNoSecretsOrEscapes();
  });
});
