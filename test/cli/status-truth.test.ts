import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  startBreakingProxy,
  startCli,
  startTokenEchoServer,
  TOKEN,
  TOKEN_ENV,
  tempDir,
  testSandbox,
  waitForStderr,
  writeConfig,
} from './helpers.js';

/**
 * `status` tells the truth about runs that went wrong (issue 30): the last run of each stream with its outcome
 * and time, the last error with its message, exit 3 while the last run of a stream did not complete it, and
 * a config-less warehouse whose runs all failed is not "nothing synced yet".
 */

interface StreamRun {
  runId: string;
  command: string;
  mode: string | null;
  outcome: string;
  at: string;
  error: string | null;
}
interface StatusStream {
  store: string;
  stream: string;
  lastSuccessAt: string | null;
  stale: boolean;
  failing: boolean;
  lastRun: StreamRun | null;
  lastError: StreamRun | null;
}

/** `status` and `status --json` run in `cwd`, away from the repository's own sync.config.json. */
async function status(
  args: string[],
  cwd: string,
): Promise<{ code: number | null; text: string; streams: StatusStream[] }> {
  const text = await runCli(['status', ...args], { cwd });
  const json = await runCli(['status', '--json', ...args], { cwd });
  // The table and the JSON judge alike.
  assert.equal(text.code, json.code, `status exited ${text.code}, status --json ${json.code}`);
  return {
    code: json.code,
    text: text.stdout,
    streams: (JSON.parse(json.stdout) as { streams: StatusStream[] }).streams,
  };
}

const runIds = async (warehouse: string) =>
  (
    await readWarehouse<{ id: string }>(warehouse, 'SELECT _run_id AS id FROM _sync_runs ORDER BY started_at')
  ).map((r) => r.id);

describe('status after failed and interrupted runs', () => {
  let sandbox: Sandbox;
  let slow: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    [sandbox, slow] = await Promise.all([testSandbox(), testSandbox({ scale: 40, pageSize: 5 })]);
    ({ dir, cleanup } = await tempDir());
  });
  after(async () => {
    killChildren();
    await Promise.all([sandbox?.close(), slow?.close()]);
    await cleanup?.();
  });

  it('a config-less warehouse whose two runs failed shows them and exits 3, not "nothing synced yet"', async () => {
    const warehouse = path.join(dir, 'refused.duckdb');
    const flags = ['--base-url', sandbox.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', warehouse];
    // A token the store does not know: every run fails at its first request with a 401.
    for (let i = 0; i < 2; i++)
      assertExit(
        await runCli(['sync', ...flags, '--streams', 'locations,products'], {
          env: { [TOKEN_ENV]: 'an-expired-token' },
        }),
        1,
      );
    const [, second] = await runIds(warehouse);
    const { code, text, streams } = await status(['--warehouse', warehouse], dir);
    assert.equal(code, 3);
    assert.doesNotMatch(text, /nothing synced yet/);
    assert.deepEqual(
      streams.map((s) => [s.store, s.stream, s.lastSuccessAt, s.stale, s.failing, s.lastRun?.outcome]),
      [
        ['default', 'locations', null, true, true, 'failed'],
        ['default', 'products', null, true, true, 'failed'],
      ],
    );
    for (const s of streams) {
      assert.equal(s.lastRun!.runId, second, 'the last of the two runs');
      assert.equal(s.lastRun!.command, 'sync');
      assert.match(s.lastRun!.error!, /401/);
      assert.deepEqual(s.lastError, s.lastRun, 'the last run is the last error');
      assert.ok(Math.abs(Date.now() - Date.parse(s.lastRun!.at)) < 10 * 60_000, s.lastRun!.at);
    }
    assert.match(text, /^default\s+locations\s.*\sSTALE\s+FAILED, \d+ min ago$/m);
    assert.match(
      text,
      new RegExp(
        `^ {2}default locations, products: failed at \\S+ \\(\\d+ min ago, sync run ${second}\\): .*401`,
        'm',
      ),
    );
  });

  it('a stream that fails alone shows its error; a later success turns status back to 0', async () => {
    const proxy = await startBreakingProxy(sandbox, [{ path: /\/products\//, status: 500 }]);
    const warehouse = path.join(dir, 'one-failing.duckdb');
    try {
      const config = await writeConfig(
        dir,
        { warehouse, maxRetries: 0, stores: [{ name: 'shop', baseUrl: proxy.baseUrl }] },
        'one-failing.json',
      );
      assertExit(await runCli(['sync', '--config', config]), 3);
      const failed = await status(['--config', config], dir);
      assert.equal(failed.code, 3);
      const products = failed.streams.find((s) => s.stream === 'products')!;
      assert.equal(products.lastRun!.outcome, 'failed');
      assert.match(products.lastRun!.error!, /^GET \/api\/products\/ failed after 1 attempts.*500/);
      for (const s of failed.streams.filter((s) => s.stream !== 'products')) {
        assert.equal(s.lastRun!.outcome, 'ok', s.stream);
        assert.equal(s.failing, false, s.stream);
        assert.equal(s.lastError, null, s.stream);
      }
      assert.match(failed.text, /^shop\s+products\s.*\sSTALE\s+FAILED, \d+ min ago$/m);
      assert.match(failed.text, /^shop\s+locations\s.*\sok\s+ok, \d+ min ago$/m);
      assert.match(failed.text, /^ {2}shop products: failed at \S+ \(.*\): GET \/api\/products\/ failed/m);
    } finally {
      await proxy.close();
    }
    // The same store, reached directly this time.
    const config = await writeConfig(
      dir,
      { warehouse, stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }] },
      'one-failing.json',
    );
    assertExit(await runCli(['sync', '--config', config]), 0);
    const healed = await status(['--config', config], dir);
    assert.equal(healed.code, 0, healed.text);
    const products = healed.streams.find((s) => s.stream === 'products')!;
    assert.equal(products.lastRun!.outcome, 'ok');
    assert.equal(products.failing, false);
    // The error is kept as the last one, and the table says a run got past it.
    assert.equal(products.lastError!.outcome, 'failed');
    assert.notEqual(products.lastError!.runId, products.lastRun!.runId);
    assert.match(
      healed.text,
      /^ {2}shop products: failed at \S+ \(.*\), completed since: GET \/api\/products\//m,
    );
    assert.doesNotMatch(healed.text, /FAILED/);
  });

  it('a run stopped by SIGINT, or killed, shows as interrupted; a later run completes it', async () => {
    const warehouse = path.join(dir, 'stopped.duckdb');
    const flags = ['--base-url', slow.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', warehouse];
    const args = ['sync', ...flags, '--streams', 'subscriptions', '--rate-limit', '3', '--verbose'];
    const stopAfterPages = async (signal: NodeJS.Signals) => {
      const sync = startCli(args);
      // By the third request to the endpoint a page has been committed, and more are to come.
      await waitForStderr(sync, /(http\.request .*path=\/api\/subscriptions\/[\s\S]*){3}/);
      sync.child.kill(signal);
      return sync.done;
    };
    const stopped = await stopAfterPages('SIGINT');
    assertExit(stopped, 1);
    const afterSignal = await status(['--warehouse', warehouse], dir);
    assert.equal(afterSignal.code, 3);
    const [row] = afterSignal.streams;
    assert.equal(afterSignal.streams.length, 1);
    assert.equal(row!.stream, 'subscriptions');
    assert.equal(row!.lastRun!.outcome, 'interrupted');
    assert.match(row!.lastRun!.error!, /interrupted/);
    assert.match(afterSignal.text, /^default\s+subscriptions\s.*\sINTERRUPTED, \d+ min ago$/m);
    assert.match(afterSignal.text, /^ {2}default subscriptions: interrupted at /m);

    // Killed outright, the run records no outcome: status, which reads only when no writer is left, says
    // the process ended before it could.
    const killed = await stopAfterPages('SIGKILL');
    assert.equal(killed.signal, 'SIGKILL');
    const afterKill = await status(['--warehouse', warehouse], dir);
    assert.equal(afterKill.code, 3);
    const [, killedRun] = await runIds(warehouse);
    assert.equal(afterKill.streams[0]!.lastRun!.runId, killedRun);
    assert.equal(afterKill.streams[0]!.lastRun!.outcome, 'interrupted');
    assert.match(afterKill.streams[0]!.lastRun!.error!, /the process ended before it recorded an outcome/);

    assertExit(await runCli(args), 0);
    const resumed = await status(['--warehouse', warehouse], dir);
    assert.equal(resumed.code, 0, resumed.text);
    assert.equal(resumed.streams[0]!.lastRun!.outcome, 'ok');
    assert.equal(resumed.streams[0]!.lastError!.runId, killedRun);
    assert.ok(resumed.streams[0]!.lastSuccessAt);
  });

  it('a stream skipped for a missing scope shows as skipped, with the scope, and exits 3', async () => {
    const limited = await testSandbox({ scale: 5, tokens: [TOKEN, 'limited-9Qz1:locations:read'] });
    try {
      const warehouse = path.join(dir, 'scoped.duckdb');
      const flags = ['--base-url', limited.baseUrl, '--token-env', TOKEN_ENV, '--warehouse', warehouse];
      const sync = await runCli(['sync', ...flags, '--streams', 'locations,subscriptions'], {
        env: { [TOKEN_ENV]: 'limited-9Qz1' },
      });
      assertExit(sync, 3);
      const { code, text, streams } = await status(['--warehouse', warehouse], dir);
      assert.equal(code, 3);
      const [locations, subscriptions] = streams;
      assert.deepEqual(
        [locations!.stream, locations!.lastRun!.outcome, locations!.failing],
        ['locations', 'ok', false],
      );
      assert.deepEqual(
        [subscriptions!.stream, subscriptions!.lastRun!.outcome, subscriptions!.failing],
        ['subscriptions', 'skipped', true],
      );
      assert.match(subscriptions!.lastRun!.error!, /subscriptions:read/);
      assert.match(text, /^default\s+subscriptions\s.*\sSKIPPED, \d+ min ago$/m);
      assert.match(text, /^ {2}default subscriptions: skipped at \S+ .*subscriptions:read/m);
    } finally {
      await limited.close();
    }
  });

  it('an error quoting the token is stored and shown masked', async () => {
    const hostile = await startTokenEchoServer();
    try {
      const baseUrl = hostile.baseUrl;
      const warehouse = path.join(dir, 'hostile.duckdb');
      const config = await writeConfig(
        dir,
        { warehouse, maxRetries: 0, stores: [{ name: 'shop', baseUrl }] },
        'hostile.json',
      );
      assertExit(await runCli(['sync', '--config', config, '--streams', 'locations']), 1);
      const { code, streams } = await status(['--config', config, '--store', 'shop'], dir);
      assert.equal(code, 3);
      const locations = streams.find((s) => s.stream === 'locations')!;
      assert.match(locations.lastRun!.error!, /cannot serve Bearer \*\*\*/);
      const [stored] = await readWarehouse<{ text: string }>(
        warehouse,
        "SELECT concat(error, ' ', counts::VARCHAR) AS text FROM _sync_runs",
      );
      assert.ok(stored!.text.includes('***') && !stored!.text.includes(TOKEN), stored!.text);
    } finally {
      await hostile.close();
    }
    assertNoSecretsOrEscapes();
  });
});
