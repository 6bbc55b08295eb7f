import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { STREAM_NAMES } from '../../src/streams.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  type CliResult,
  folderFingerprint,
  killChildren,
  type RunOptions,
  runCli,
  TOKEN,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Bad input (docs/operations.md, "Exit codes"): each case gets one clear paragraph and exit 2, and leaves the
 * warehouse exactly as it was (every file of its folder hashed before and after), or never creates it.
 */

const HOLDER = new URL('./children/hold-writer.ts', import.meta.url).pathname;
const NOBODY = 65534;

describe('bad input: exit 2, a clear message, the warehouse untouched', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouseDir: string;
  let warehouse: string;
  let config: string;
  let holder: ChildProcess | undefined;

  /** Runs a command that must be refused, and checks that the warehouse folder did not change. */
  async function refused(args: string[], message: RegExp, options: RunOptions = {}): Promise<CliResult> {
    const before = await folderFingerprint(warehouseDir);
    const result = await runCli(args, { cwd: dir, ...options });
    assertCleanError(result, 2, message);
    assert.equal(result.stdout, '', 'nothing on stdout');
    assert.deepEqual(await folderFingerprint(warehouseDir), before, 'the warehouse folder changed');
    return result;
  }

  before(async () => {
    sandbox = await testSandbox({ scale: 10 });
    ({ dir, cleanup } = await tempDir());
    warehouseDir = path.join(dir, 'data');
    await mkdir(warehouseDir);
    warehouse = path.join(warehouseDir, 'warehouse.duckdb');
    config = await writeConfig(dir, {
      warehouse: 'data/warehouse.duckdb',
      stores: [{ name: 'eu', baseUrl: sandbox.baseUrl }],
    });
    // A real warehouse with data in it, so "untouched" means something.
    assertExit(await runCli(['sync', '--config', config, '--streams', 'locations'], { cwd: dir }), 0);
  });

  after(async () => {
    holder?.kill('SIGKILL');
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('a missing config file', async () => {
    const empty = path.join(dir, 'empty');
    await mkdir(empty);
    const none = await runCli(['sync'], { cwd: empty });
    assertCleanError(none, 2, /no job described: pass --config FILE \(or create \.\/sync\.config\.json\)/);
    assert.deepEqual(await folderFingerprint(empty), {}, 'nothing created');
    await refused(
      ['sync', '--config', 'nope.json'],
      /cannot read the config file nope\.json: it does not exist/,
    );
  });

  it('an invalid config names each field and what was expected', async () => {
    const file = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        rateLimit: 'fast',
        stores: [{ name: 'eu', baseUrl: 'shop.example.com' }],
      },
      'invalid.json',
    );
    const result = await refused(['sync', '--config', file], /invalid\.json is invalid:/);
    assert.match(result.stderr, /^ {2}rateLimit: .*expected number/m);
    assert.match(result.stderr, /^ {2}stores\[0\]\.baseUrl: expected an absolute URL such as https:\/\//m);
    await writeFile(path.join(dir, 'broken.json'), '{"warehouse": "data/warehouse.duckdb",');
    await refused(
      ['sync', '--config', 'broken.json'],
      /^error: broken\.json:1:39: the file ends inside an object: a closing \} is missing \(the config file is not valid JSON\)$/m,
    );

    // A date that matches YYYY-MM-DD but is not on the calendar, and a base URL the paths cannot follow.
    const subtle = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        stores: [
          {
            name: 'eu',
            baseUrl: 'https://shop.example.com/api/?x=1#f',
            streams: { subscriptions: { startDate: '2024-13-45' } },
          },
        ],
      },
      'subtle.json',
    );
    const second = await refused(['sync', '--config', subtle], /subtle\.json is invalid:/);
    assert.match(second.stderr, /^ {2}stores\[0\]\.baseUrl: expected no query string/m);
    assert.match(
      second.stderr,
      /^ {2}stores\[0\]\.streams\.subscriptions\.startDate: expected a calendar date as YYYY-MM-DD/m,
    );
  });

  it('a config saved with a byte order mark reads like any other', async () => {
    const text = await readFile(config, 'utf8');
    const withBom = path.join(dir, 'bom.json');
    await writeFile(withBom, `\uFEFF${text}`);
    const result = await runCli(['status', '--config', withBom, '--json'], { cwd: dir });
    // 3, not 2: read, and the streams this suite never synced are listed as never succeeded.
    assertExit(result, 3);
    assert.ok((JSON.parse(result.stdout) as { streams: unknown[] }).streams.length > 0);
  });

  it('a literal token in the config is refused, without repeating it', async () => {
    const file = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        stores: [{ name: 'eu', baseUrl: sandbox.baseUrl, token: TOKEN }],
      },
      'literal.json',
    );
    await refused(
      ['sync', '--config', file],
      /stores\[0\] contains a literal token\. Tokens never go in the config file: put the token in an environment variable and name that variable in stores\[0\]\.tokenEnv/,
    );
  });

  it('unknown streams', async () => {
    await refused(
      ['sync', '--config', config, '--streams', 'products,orders'],
      /unknown stream "orders": the streams are locations, metadata_definitions, products, subscriptions, fulfillment_orders/,
    );
  });

  it('--from later than --to, and a bad date', async () => {
    await refused(
      ['backfill', '--config', config, '--from', '2025-06-01', '--to', '2025-01-31'],
      /--from 2025-06-01 is later than --to 2025-01-31/,
    );
    await refused(
      ['backfill', '--config', config, '--from', '2025-02-30'],
      /--from "2025-02-30" is not a date: expected YYYY-MM-DD/,
    );
  });

  it('--workers that is not a whole number from 0 to 64', async () => {
    await refused(
      ['ingest', dir, '--config', config, '--workers', '-1'],
      /--workers must be an integer from 0 to 64 \(got -1\)/,
    );
    await refused(
      ['rebuild', '--config', config, '--workers', '2.5'],
      /--workers must be an integer from 0 to 64 \(got 2.5\)/,
    );
    await refused(
      ['ingest', dir, '--config', config, '--workers', 'abc'],
      /--workers must be an integer from 0 to 64 \(got something that is not a number\)/,
    );
  });

  it('--freshness-hours that is not a number above 0 (a typo would turn the staleness check off)', async () => {
    await refused(
      ['status', '--config', config, '--freshness-hours', '36h'],
      /--freshness-hours must be a number above 0 \(got something that is not a number\)/,
    );
    await refused(
      ['status', '--config', config, '--freshness-hours', '-1'],
      /--freshness-hours must be a number above 0 \(got -1\)/,
    );
  });

  it('a missing token environment variable', async () => {
    await refused(
      ['sync', '--config', config],
      new RegExp(`the token of store "eu" is missing: set the environment variable ${TOKEN_ENV}`),
      { withToken: false },
    );
  });

  it('with two stores: a missing token of the second stops the run before the first syncs; ingest needs --store', async () => {
    const file = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        stores: [
          { name: 'eu', baseUrl: sandbox.baseUrl },
          { name: 'us', baseUrl: sandbox.baseUrl, tokenEnv: 'STORE_SYNC_CLI_TEST_US_TOKEN' },
        ],
      },
      'two-stores.json',
    );
    sandbox.resetStats();
    await refused(
      ['sync', '--config', file, '--streams', 'locations'],
      /the token of store "us" is missing: set the environment variable STORE_SYNC_CLI_TEST_US_TOKEN/,
    );
    assert.equal(sandbox.stats().requests, 0, 'no store was synced');

    // A second store with every stream disabled stops the run before the first syncs, too (found only when
    // its turn came, it would let the first store sync and then fail the command).
    const idle = await writeConfig(
      dir,
      {
        warehouse: 'data/warehouse.duckdb',
        stores: [
          { name: 'eu', baseUrl: sandbox.baseUrl },
          {
            name: 'idle',
            baseUrl: sandbox.baseUrl,
            streams: Object.fromEntries(STREAM_NAMES.map((name) => [name, { enabled: false }])),
          },
        ],
      },
      'idle-store.json',
    );
    await refused(['sync', '--config', idle], /^error: store "idle" has no enabled stream to sync\.$/m);
    assert.equal(sandbox.stats().requests, 0, 'no store was synced');
    await refused(
      ['ingest', path.join(dir, 'two-stores.json'), '--config', file],
      /the config has 2 stores \(eu, us\): pass --store NAME to say whose documents these are/,
    );
  });

  it('a warehouse folder that cannot be created (a missing one is created: test/cli/first-steps.test.ts)', async () => {
    const underFile = path.join(dir, 'sync.config.json', 'data', 'w.duckdb');
    await refused(
      ['sync', '--base-url', sandbox.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', underFile],
      /cannot create the warehouse folder \S+sync\.config\.json\/data: creating \S+sync\.config\.json\/data failed \(ENOTDIR\); create it yourself or choose another --warehouse path/,
    );
  });

  it('an export folder that cannot be created fails at once, naming it (Node alone would spin forever in /proc)', async () => {
    const underFile = path.join(dir, 'sync.config.json', 'parquet');
    await refused(
      ['export', '--config', config, '--out', underFile],
      /cannot create the Parquet folder \S+sync\.config\.json\/parquet: creating \S+ failed \(ENOTDIR\); choose another --out or parquetDir/,
      { timeoutMs: 30_000 },
    );
    if (process.platform === 'linux')
      await refused(
        ['export', '--config', config, '--out', '/proc/store-sync-export/parquet'],
        /cannot create the Parquet folder \/proc\/store-sync-export\/parquet: creating \/proc\/store-sync-export failed \(ENOENT\)/,
        { timeoutMs: 30_000 },
      );
  });

  it('rebuild of a warehouse that does not exist; export of --tables that names none, or over a folder of your own', async () => {
    // A mistyped path must not become a new, empty warehouse "rebuilt from 0 landed records", exit 0.
    const typo = path.join(warehouseDir, 'warehuose.duckdb');
    await refused(
      ['rebuild', '--warehouse', typo],
      /no warehouse at \S+warehuose\.duckdb: it does not exist yet; run a sync or an ingest first/,
    );
    assert.equal(existsSync(typo), false, 'no warehouse was created');
    await refused(
      ['export', '--config', config, '--tables', ',', '--out', path.join(dir, 'none')],
      /--tables "," names no table: give comma-separated table names, or leave it out for all/,
    );
    const mine = path.join(dir, 'mine');
    await mkdir(path.join(mine, 'locations'), { recursive: true });
    await writeFile(path.join(mine, 'locations', 'notes.txt'), 'mine');
    await refused(
      ['export', '--config', config, '--out', mine],
      /cannot export locations: \S+mine\/locations exists and was not written by store-sync export \(a folder\); move it away or choose another --out or parquetDir\. Nothing was exported/,
    );
    assert.equal(await readFile(path.join(mine, 'locations', 'notes.txt'), 'utf8'), 'mine');
  });

  it('a warehouse path that is a JSON file or a folder, not a DuckDB file (DuckDB would open the JSON in memory and store nothing)', async () => {
    const json = path.join(dir, 'orders.json');
    const content = `${JSON.stringify({ number: 'A-1' })}\n`;
    await writeFile(json, content);
    await refused(
      ['sync', '--base-url', sandbox.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', json],
      /orders\.json is another kind of file, not a DuckDB warehouse: choose another --warehouse path/,
    );
    await refused(
      ['ingest', json, '--warehouse', json, '--store', 'eu'],
      /orders\.json is another kind of file, not a DuckDB warehouse/,
    );
    await refused(
      ['status', '--warehouse', json],
      /orders\.json is another kind of file, not a DuckDB warehouse/,
    );
    assert.equal(await readFile(json, 'utf8'), content, 'the file is untouched');
    await refused(
      ['sync', '--base-url', sandbox.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', warehouseDir],
      /data is a folder, not a DuckDB warehouse/,
    );
  });

  it('a warehouse in a folder that is not writable', async () => {
    const readOnly = path.join(dir, 'read-only');
    await mkdir(readOnly);
    await chmod(readOnly, 0o555);
    // root writes anywhere, so as root the command runs as nobody, for whom the folder is read-only.
    const asOther = process.getuid?.() === 0 ? { uid: NOBODY, gid: NOBODY } : {};
    await refused(
      [
        'sync',
        '--base-url',
        sandbox.baseUrl,
        '--token-env',
        TOKEN_ENV,
        '--warehouse',
        path.join(readOnly, 'w.duckdb'),
      ],
      new RegExp(`warehouse folder ${readOnly} is not writable by this user`),
      asOther,
    );
    assert.deepEqual(await folderFingerprint(readOnly), {}, 'nothing created');
  });

  it('plain http to a host that is not this machine', async () => {
    await refused(
      [
        'sync',
        '--base-url',
        'http://shop.example.com/api/',
        '--token-env',
        TOKEN_ENV,
        '--warehouse',
        warehouse,
      ],
      /^error: --base-url: base URL http:\/\/shop\.example\.com uses plain http to a non-loopback host; use https/m,
    );
    // In a config file the message names the store's field, before any warehouse is opened.
    const plainHttp = path.join(dir, 'plain-http.json');
    await writeFile(
      plainHttp,
      JSON.stringify({
        warehouse: path.join(dir, 'plain-http.duckdb'),
        stores: [{ name: 'eu', baseUrl: 'http://shop.example.com/api/', tokenEnv: TOKEN_ENV }],
      }),
    );
    for (const command of ['sync', 'status']) {
      await refused(
        [command, '--config', plainHttp],
        /plain-http\.json: stores\[0\]\.baseUrl: base URL http:\/\/shop\.example\.com uses plain http/,
      );
    }
    assert.equal(existsSync(path.join(dir, 'plain-http.duckdb')), false, 'no warehouse created');
  });

  it('an unknown store, and an ingest input that does not exist', async () => {
    await refused(['sync', '--config', config, '--store', 'us'], /unknown store "us": the config has "eu"/);
    const missing = path.join(dir, 'captured', 'orders.json');
    await refused(
      ['ingest', missing, '--config', config],
      new RegExp(`ingest input ${missing} does not exist`),
    );
    const fresh = path.join(dir, 'fresh');
    await mkdir(fresh);
    await refused(['ingest', missing, '--warehouse', path.join(fresh, 'w.duckdb')], /does not exist/);
    assert.deepEqual(await folderFingerprint(fresh), {}, 'no warehouse created');
  });

  it('no command, or a misspelt one; --help documents the commands and exit codes', async () => {
    const none = await runCli([]);
    assertExit(none, 2);
    assert.match(none.stderr, /^Name a command: store-sync <command> --help shows one in detail\.$/m);
    const typo = await runCli(['snyc']);
    assertExit(typo, 2);
    assert.match(typo.stderr, /^unknown command "snyc"\. Did you mean sync\?$/m);
    const help = await runCli(['--help']);
    assertExit(help, 0);
    for (const command of [
      'demo',
      'sync',
      'backfill',
      'ingest',
      'status',
      'query',
      'export',
      'rebuild',
      'doctor',
      'schedule',
      'sandbox',
    ])
      assert.match(help.stdout, new RegExp(`^ {2}store-sync ${command}\\b`, 'm'));
    assert.match(
      help.stdout,
      /Exit codes: 0 ok, 1 failed or interrupted, 2 usage or configuration error, 3 completed with rejections/,
    );
  });

  it('an unknown option', async () => {
    const result = await runCli(['sync', '--config', config, '--full-refersh'], { cwd: dir });
    assertExit(result, 2);
    assert.match(result.stderr, /^Unknown argument: full-refersh\nRun with --help for usage\.$/m);
  });

  it('a second concurrent writer', async () => {
    holder = spawn(process.execPath, ['--import', 'tsx', HOLDER, warehouse], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    // A holder that cannot start must fail this test at once, not leave it waiting for a line.
    const ready = await Promise.race([
      once(holder.stdout!, 'data').then(([data]) => String(data).trim()),
      once(holder, 'exit').then(([code]) => `the holder exited with ${String(code)}`),
    ]);
    assert.equal(ready, 'ready');
    try {
      await refused(
        ['sync', '--config', config],
        new RegExp(
          `another store-sync process \\(pid ${holder.pid}\\) is writing to ${warehouse}; wait for it to finish`,
        ),
      );
      // doctor says the file is busy, not damaged: no talk of backups.
      const doctor = await runCli(['doctor', '--config', config], { cwd: dir });
      assert.match(
        doctor.stdout,
        new RegExp(
          `^\\[FAIL\\] warehouse integrity: cannot read ${warehouse} while another store-sync process \\(pid ${holder.pid}\\) is writing to it.*\\n {7}fix: nothing is wrong with the file: run doctor again once that process has finished$`,
          'm',
        ),
      );
    } finally {
      holder.kill('SIGKILL');
      await once(holder, 'exit');
    }
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
