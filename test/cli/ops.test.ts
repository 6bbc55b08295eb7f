import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  jsonLines,
  killChildren,
  readWarehouse,
  runCli,
  startCli,
  TOKEN,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/** The operator's commands: doctor's checklist (all well, a missing scope, a missing token) and schedule. */

const STREAM_NAMES = ['locations', 'metadata_definitions', 'products', 'subscriptions', 'fulfillment_orders'];
const LIMITED_ENV = 'STORE_SYNC_CLI_TEST_LIMITED_TOKEN';
const LIMITED_TOKEN = 'cli-test-limited-4Hk8pR';

describe('store-sync doctor and schedule', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;
  let config: string;

  before(async () => {
    sandbox = await testSandbox({
      scale: 10,
      tokens: [TOKEN, `${LIMITED_TOKEN}:catalogue:read,locations:read`],
    });
    ({ dir, cleanup } = await tempDir());
    config = await writeConfig(dir, {
      warehouse: 'warehouse.duckdb',
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
  });

  after(async () => {
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  it('doctor: every check passes against the sandbox, the warehouse included', async () => {
    assertExit(await runCli(['sync', '--config', config, '--streams', 'locations']), 0);
    const result = await runCli(['doctor', '--config', config]);
    assertExit(result, 0);
    const lines = result.stdout.trimEnd().split('\n');
    assert.equal(lines.at(-1), 'all checks passed');
    for (const line of lines.slice(0, -1)) assert.match(line, /^\[ok\] {2}/);
    assert.match(
      result.stdout,
      /^\[ok\] {3}store shop: base URL: http:\/\/127\.0\.0\.1:\d+\/api\/ \(loopback, plain http allowed\)$/m,
    );
    assert.match(
      result.stdout,
      new RegExp(`^\\[ok\\] {3}store shop: token: read from \\$${TOKEN_ENV}$`, 'm'),
    );
    for (const stream of STREAM_NAMES)
      assert.match(
        result.stdout,
        new RegExp(`^\\[ok\\] {3}store shop: stream ${stream}: scope .+ granted$`, 'm'),
      );
    assert.match(result.stdout, /^\[ok\] {3}warehouse integrity: \d+ tables readable, \d+ rows$/m);
  });

  it('doctor: a token lacking a scope gets a FAIL line with the fix, and a non-zero exit', async () => {
    const limited = await writeConfig(
      dir,
      {
        warehouse: 'warehouse.duckdb',
        stores: [{ name: 'shop', baseUrl: sandbox.baseUrl, tokenEnv: LIMITED_ENV }],
      },
      'limited.json',
    );
    const result = await runCli(['doctor', '--config', limited], { env: { [LIMITED_ENV]: LIMITED_TOKEN } });
    assertExit(result, 1);
    assert.match(result.stdout, /^\[ok\] {3}store shop: stream products: scope catalogue:read granted$/m);
    assert.match(result.stdout, /^\[FAIL\] store shop: stream subscriptions: the token lacks the scope$/m);
    assert.match(
      result.stdout,
      /^\[FAIL\] store shop: stream subscriptions: .*\n {7}fix: grant subscriptions:read to the token, or disable the stream in the config$/m,
    );
    assert.match(
      result.stdout,
      /^\[FAIL\] store shop: stream metadata_definitions: the token lacks the scope$/m,
    );
    assert.match(result.stdout, /^3 check\(s\) failed$/m);
    assert.ok(
      !`${result.stdout}${result.stderr}`.includes(LIMITED_TOKEN),
      'that token is not printed either',
    );
  });

  it('sync with that token skips the streams it cannot read and exits 3', async () => {
    const limited = path.join(dir, 'limited.json');
    const result = await runCli(
      ['sync', '--config', limited, '--warehouse', path.join(dir, 'limited.duckdb')],
      {
        env: { [LIMITED_ENV]: LIMITED_TOKEN },
      },
    );
    assertExit(result, 3);
    assert.match(result.stdout, /^shop\s+products\s+ok\s/m);
    assert.match(result.stdout, /^shop\s+locations\s+ok\s/m);
    for (const stream of ['metadata_definitions', 'subscriptions', 'fulfillment_orders'])
      assert.match(
        result.stdout,
        // Its first list request, answered 403, is the one request it spent.
        new RegExp(`^shop\\s+${stream}\\s+skipped\\s+0\\s+0\\s+0\\s+1\\s+\\S`, 'm'),
      );
    assert.match(result.stdout, /^shop: partial in /m);
    assert.match(result.stderr, /^WARN stream\.skipped: .* stream=subscriptions/m);
  });

  it('doctor: a missing token variable is a FAIL line naming the variable to set', async () => {
    const result = await runCli(['doctor', '--config', config], { withToken: false });
    assert.notEqual(result.code, 0);
    assert.match(
      result.stdout,
      new RegExp(
        `^\\[FAIL\\] store shop: token: the token of store "shop" is missing: set the environment variable ${TOKEN_ENV} .*\\n {7}fix: export ${TOKEN_ENV}=<the store's API access token>$`,
        'm',
      ),
    );
    assert.match(result.stdout, /check\(s\) failed$/m);
  });

  it('schedule runs sync at each tick and stops cleanly on SIGTERM', async () => {
    const before = await readWarehouse<{ n: number }>(
      path.join(dir, 'warehouse.duckdb'),
      'SELECT count(*) AS n FROM _sync_runs',
    );
    const run = startCli([
      'schedule',
      '--cron',
      '* * * * * *',
      '--config',
      config,
      '--streams',
      'locations',
      '--log-format',
      'json',
    ]);
    // Either outcome of the first tick ends the wait; the assertions below say which one is expected.
    await waitForStderr(run, /"event":"schedule\.run(_failed)?"/);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    assert.equal(events[0]!.event, 'schedule.start');
    assert.equal(events[0]!.cron, '* * * * * *');
    const ran = events.find((e) => e.event === 'schedule.run')!;
    assert.equal(ran.store, 'shop');
    assert.equal(ran.outcome, 'succeeded');
    assert.ok(events.some((e) => e.event === 'sync.done' && e.store === 'shop'));
    assert.deepEqual(events.at(-1)!.event, 'schedule.stop');
    assert.equal(events.at(-1)!.signal, 'SIGTERM');
    const [{ n }] = (await readWarehouse<{ n: number }>(
      path.join(dir, 'warehouse.duckdb'),
      "SELECT count(*) AS n FROM _sync_runs WHERE outcome = 'succeeded'",
    )) as [{ n: number }];
    assert.ok(n > before[0]!.n, 'the scheduled run is recorded');
  });

  it('schedule: a run cut short by SIGTERM is logged as schedule.run with outcome interrupted, as documented', async () => {
    // Paced at one request a second, the first tick is still reading the streams' first pages when the signal comes.
    const paced = await writeConfig(
      dir,
      { warehouse: 'paced.duckdb', rateLimit: 1, stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }] },
      'paced.json',
    );
    const run = startCli(['schedule', '--cron', '* * * * * *', '--config', paced, '--log-format', 'json']);
    await waitForStderr(run, /"event":"sync\.start"/);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    assert.deepEqual(
      events
        // A tick that came while the run was going is skipped (schedule.skipped): not what this is about.
        .filter((e) => /^schedule\.(start|stopping|run|run_stopped|run_failed|stop)$/.test(String(e.event)))
        .map((e) => [e.event, e.outcome]),
      [
        ['schedule.start', undefined],
        ['schedule.stopping', undefined],
        ['schedule.run', 'interrupted'],
        ['schedule.stop', undefined],
      ],
    );
  });

  it('schedule refuses a pattern that is not cron, at start', async () => {
    const result = await runCli(['schedule', '--cron', 'every night', '--config', config]);
    assertExit(result, 2);
    assert.match(result.stderr, /^error: --cron "every night" is not a cron pattern/m);
  });

  it('schedule refuses a store with no enabled stream at start, not at its first tick', async () => {
    const idle = await writeConfig(
      dir,
      {
        warehouse: 'idle.duckdb',
        stores: [
          {
            name: 'shop',
            baseUrl: sandbox.baseUrl,
            streams: Object.fromEntries(STREAM_NAMES.map((name) => [name, { enabled: false }])),
          },
        ],
      },
      'idle.json',
    );
    const result = await runCli(['schedule', '--cron', '15 2 * * *', '--config', idle]);
    assertExit(result, 2);
    assert.match(result.stderr, /^error: store "shop" has no enabled stream to sync\.$/m);
    assert.doesNotMatch(result.stderr, /schedule\.start/);
  });

  it('schedule refuses a time zone that does not exist, at start, naming --timezone', async () => {
    const result = await runCli([
      'schedule',
      '--cron',
      '15 2 * * *',
      '--timezone',
      'Mars/Olympus',
      '--config',
      config,
    ]);
    assertExit(result, 2);
    assert.match(
      result.stderr,
      /^error: --timezone "Mars\/Olympus" is not a time zone: expected an IANA time zone name, e\.g\. Europe\/Berlin/m,
    );
    assert.doesNotMatch(result.stderr, /CronDate/);
  });

  it('schedule runs every store at each tick: one with a wrong token stops none of the others', async () => {
    const wrongEnv = 'STORE_SYNC_CLI_TEST_WRONG_TOKEN';
    const stores = await writeConfig(
      dir,
      {
        warehouse: 'scheduled-stores.duckdb',
        stores: [
          { name: 'bad', baseUrl: sandbox.baseUrl, tokenEnv: wrongEnv },
          { name: 'good', baseUrl: sandbox.baseUrl },
        ],
      },
      'scheduled-stores.json',
    );
    const run = startCli(
      [
        'schedule',
        '--cron',
        '* * * * * *',
        '--config',
        stores,
        '--streams',
        'locations',
        '--log-format',
        'json',
      ],
      { env: { [wrongEnv]: 'not-a-token-of-this-store' } },
    );
    await waitForStderr(run, /"event":"schedule\.run",[^\n]*"store":"good"/);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    const events = jsonLines(result.stderr);
    const failed = events.find((e) => e.event === 'schedule.run_failed')!;
    assert.equal(failed.store, 'bad');
    assert.equal(failed.code, 'http_unauthorized');
    const ran = events.find((e) => e.event === 'schedule.run')!;
    assert.equal(ran.store, 'good');
    assert.equal(ran.outcome, 'succeeded');
    // Both name their run, as the sync's own lines do.
    for (const event of [failed, ran])
      assert.ok(
        events.some((e) => e.event === 'sync.start' && e.store === event.store && e.runId === event.runId),
        `${String(event.event)} names the run of store ${String(event.store)}`,
      );
    assert.ok(
      events.indexOf(failed) < events.indexOf(ran),
      'the store after the failed one ran in the same tick',
    );
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
