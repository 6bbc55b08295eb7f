import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFile, readdir, readFile, stat, utimes } from 'node:fs/promises';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { after, afterEach, describe, it } from 'node:test';
import { request } from 'undici';
import { deliver, deliverAll, signBody, webhookEnvelope } from '../../src/receive/send.js';
import {
  assertExit,
  BIN,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
  waitForStderr,
  writeConfig,
} from '../cli/helpers.js';
import { eventIds, orderEvent, SECRET, spooled } from './helpers.js';

/**
 * `store-sync receive` and `store-sync ingest --spool` as a user runs them: child processes of the built
 * command (npm run build), a config file with a receiver block, signed events from a real HTTP client.
 */

const SECRET_ENV = 'STORE_SYNC_TEST_WEBHOOK_SECRET';
const env = { [SECRET_ENV]: SECRET };

async function receiverConfig(dir: string, receiver: Record<string, unknown> = {}, settings = {}) {
  return writeConfig(dir, {
    warehouse: 'warehouse.duckdb',
    receiver: { port: 0, ...settings },
    stores: [
      { name: 'main', baseUrl: 'http://127.0.0.1:9/api/', receiver: { secretEnv: SECRET_ENV, ...receiver } },
    ],
  });
}

/** Starts `store-sync receive` and returns it with its endpoint's URL (from its log line). */
async function startReceive(args: string[], cwd: string, extraEnv: Record<string, string> = {}) {
  const run = startCli(['receive', ...args], { cwd, env: { ...env, ...extraEnv }, timeoutMs: 120_000 });
  // The log line, human (url=…) or JSON ("url":"…").
  const listening = /receive\.listening.*?url"?[=:]"?([^"\s]+)/;
  await waitForStderr(run, listening);
  const url = listening.exec(run.stderr())![1]!;
  return { run, url, origin: new URL(url).origin };
}

async function health(origin: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await request(`${origin}/healthz`);
  return { status: response.statusCode, body: (await response.body.json()) as Record<string, unknown> };
}

describe('store-sync receive and ingest --spool, as commands', () => {
  const cleanups: (() => Promise<void>)[] = [];
  afterEach(() => killChildren());
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });
  const dirFor = async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    return dir;
  };

  it('refuses to start without a receiver or its secret (exit 2), and never prints the secret', async () => {
    const dir = await dirFor();
    const none = await runCli(['receive'], { cwd: dir, env });
    assertExit(none, 2);
    assert.match(none.stderr, /no receiver described: pass --config FILE with a receiver block/);
    const unset = await runCli(['receive', '--secret-env', 'NOT_SET_ANYWHERE', '--spool-dir', 'spool'], {
      cwd: dir,
    });
    assertExit(unset, 2);
    assert.match(unset.stderr, /set the environment variable NOT_SET_ANYWHERE/);
    await receiverConfig(dir);
    const noBlock = await runCli(['receive', '--store', 'other'], { cwd: dir, env });
    assertExit(noBlock, 2);
    assert.match(noBlock.stderr, /unknown store "other"/);
    // Served, verbose, in JSON: the secret is in no line.
    const { run, url } = await startReceive(['--verbose', '--log-format', 'json'], dir);
    assert.equal(await deliver(url, SECRET, orderEvent(1)), 200);
    assert.equal(await deliver(url, 'wrong', orderEvent(2)), 401);
    run.child.kill('SIGTERM');
    const result = await run.done;
    assertExit(result, 0);
    assert.ok(!result.stderr.includes(SECRET) && !result.stdout.includes(SECRET), 'the secret was printed');
  });

  it('finishes the requests in flight on SIGTERM, syncs and closes the spool, and exits 0', async () => {
    const dir = await dirFor();
    await receiverConfig(dir);
    const { run, url, origin } = await startReceive([], dir);
    // 20 requests whose bodies are held half-sent until the signal has come.
    const held = Array.from({ length: 20 }, (_, i) => {
      const event = orderEvent(500 + i);
      const body = JSON.stringify(event);
      const stream = new PassThrough();
      stream.write(body.slice(0, 100));
      const answer = request(url, {
        method: 'POST',
        body: stream,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(body)),
          'X-Platform-Signature': signBody(SECRET, body),
        },
      }).then(async (r) => {
        await r.body.dump();
        return r.statusCode;
      });
      return { rest: Buffer.from(body).subarray(Buffer.byteLength(body.slice(0, 100))), stream, answer };
    });
    const deadline = Date.now() + 30_000;
    while (((await health(origin)).body.requests as number) < 21) {
      assert.ok(Date.now() < deadline, 'the held requests did not reach the receiver');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    run.child.kill('SIGTERM');
    await waitForStderr(run, /receive\.stopping/);
    for (const h of held) h.stream.end(h.rest);
    assert.deepEqual(await Promise.all(held.map((h) => h.answer)), new Array(20).fill(200));
    const result = await run.done;
    assertExit(result, 0);
    const spoolDir = path.join(dir, 'spool', 'main');
    const names = await readdir(spoolDir);
    assert.ok(!names.some((n) => n.endsWith('.open') || n === 'receiver.lock'), names.join(', '));
    assert.deepEqual(
      eventIds(await spooled(spoolDir)).sort(),
      Array.from({ length: 20 }, (_, i) => `evt-${500 + i}`).sort(),
    );
  });

  it('drains the spool into the warehouse: orders load, files go, status shows what waits', async () => {
    const dir = await dirFor();
    await receiverConfig(dir, {}, { rotateSeconds: 0.2 });
    const numbers = Array.from({ length: 30 }, (_, i) => 1000 + i);
    const receive = async (batch: number[]) => {
      const { run, url } = await startReceive([], dir);
      const statuses = await deliverAll(
        url,
        SECRET,
        batch.map((n) => orderEvent(n)),
        { concurrency: 6 },
      );
      assert.deepEqual(statuses, new Array(batch.length).fill(200));
      run.child.kill('SIGTERM');
      assertExit(await run.done, 0);
    };
    const drain = async () => {
      const drained = await runCli(['ingest', '--json', '--spool'], { cwd: dir, env });
      assertExit(drained, 0);
      return JSON.parse(drained.stdout) as { spools: { documents: number; files: { then: string }[] }[] };
    };
    await receive(numbers.slice(0, 10));
    assert.equal((await drain()).spools[0]!.documents, 10);
    await receive(numbers.slice(10));
    const before = await runCli(['status', '--json'], { cwd: dir, env });
    const waiting = (JSON.parse(before.stdout) as { receivers: { files: number; events: number }[] })
      .receivers[0]!;
    assert.equal(waiting.events, 20);
    assert.ok(waiting.files >= 1);
    const summary = await drain();
    assert.equal(summary.spools[0]!.documents, 20);
    assert.ok(summary.spools[0]!.files.every((f) => f.then === 'deleted'));
    const rows = await readWarehouse<{ number: string }>(
      path.join(dir, 'warehouse.duckdb'),
      'SELECT number FROM orders ORDER BY number',
    );
    assert.deepEqual(
      rows.map((r) => Number(r.number)),
      numbers,
    );
    assert.deepEqual(
      (await readdir(path.join(dir, 'spool', 'main'))).filter((n) => n.startsWith('events-')),
      [],
    );
    const afterStatus = await runCli(['status'], { cwd: dir, env });
    assert.match(afterStatus.stdout, /receiver spool +files waiting +events waiting/);
    assert.match(afterStatus.stdout, /main +\S+spool\/main +0 +0 +0/);
    // Nothing waits: the next drain changes nothing.
    assert.equal((await drain()).spools[0]!.documents, 0);
  });

  it('drains webhook deliveries without api_version, and skips events of objects that have no table (exit 0)', async () => {
    const dir = await dirFor();
    await receiverConfig(dir, {}, { rotateSeconds: 0.2 });
    const { run, url } = await startReceive([], dir);
    // Older deliveries carry no api_version: the order's shape is read from its own fields.
    const numbers = [1, 2, 6];
    const shapes = numbers.map((n) => orderEvent(n).api_version);
    assert.deepEqual(new Set(shapes).size, 2, 'orders of both shapes');
    const orders = numbers.map((n) => ({ ...orderEvent(n), api_version: undefined }));
    const customer = webhookEnvelope(
      { id: 41, email: 'ada@example.com' },
      { object: 'customer', eventType: 'customer.created', apiVersion: null },
    );
    const statuses = await deliverAll(url, SECRET, [...orders, customer]);
    assert.deepEqual(statuses, [200, 200, 200, 200]);
    run.child.kill('SIGTERM');
    assertExit(await run.done, 0);
    assert.ok((await spooled(path.join(dir, 'spool', 'main'))).every((e) => !('api_version' in e)));
    const drained = await runCli(['ingest', '--json', '--spool'], { cwd: dir, env });
    assertExit(drained, 0);
    const spool = (
      JSON.parse(drained.stdout) as {
        spools: { documents: number; rejections: number; skipped?: Record<string, number> }[];
      }
    ).spools[0]!;
    assert.deepEqual([spool.documents, spool.rejections, spool.skipped], [4, 0, { customer: 1 }]);
    const rows = await readWarehouse<{ number: string; api_version: string }>(
      path.join(dir, 'warehouse.duckdb'),
      'SELECT number, api_version FROM orders ORDER BY number::INT',
    );
    // Each read with the shape its labelled twin would have said.
    assert.deepEqual(
      rows.map((r) => [Number(r.number), r.api_version]),
      numbers.map((n, i) => [n, shapes[i]]),
    );
    const [rejected] = await readWarehouse<{ n: bigint }>(
      path.join(dir, 'warehouse.duckdb'),
      'SELECT count(*) AS n FROM _rejected_records',
    );
    assert.equal(Number(rejected!.n), 0);
  });

  it('archives drained files when asked, and a drain that committed but was killed before removing resumes exactly', async () => {
    const dir = await dirFor();
    await receiverConfig(dir, {}, { afterDrain: 'archive' });
    const { run, url } = await startReceive([], dir);
    assert.deepEqual(
      await deliverAll(
        url,
        SECRET,
        [1, 2, 3].map((n) => orderEvent(2000 + n)),
      ),
      [200, 200, 200],
    );
    run.child.kill('SIGTERM');
    assertExit(await run.done, 0);
    const spoolDir = path.join(dir, 'spool', 'main');
    const [file] = (await readdir(spoolDir)).filter((n) => n.endsWith('.ndjson'));
    const kept = path.join(dir, 'kept.ndjson');
    await copyFile(path.join(spoolDir, file!), kept);
    const info = await stat(path.join(spoolDir, file!));
    assertExit(await runCli(['ingest', '--spool'], { cwd: dir, env }), 0);
    assert.deepEqual(await readdir(path.join(spoolDir, 'archive')), [file]);
    // As if the drain had been killed after its commit, before the file went: the same file is back.
    await copyFile(kept, path.join(spoolDir, file!));
    await utimes(path.join(spoolDir, file!), info.atime, info.mtime);
    const again = await runCli(['ingest', '--json', '--spool'], { cwd: dir, env });
    assertExit(again, 0);
    const summary = JSON.parse(again.stdout) as {
      spools: { files: { status: string }[]; documents: number }[];
    };
    assert.deepEqual(
      summary.spools[0]!.files.map((f) => f.status),
      ['unchanged'],
    );
    const ledger = await readWarehouse<{ documents: bigint; files: bigint }>(
      path.join(dir, 'warehouse.duckdb'),
      "SELECT sum(documents) AS documents, count(*) AS files FROM _ingested_files WHERE path LIKE '%/spool/main/%'",
    );
    assert.equal(Number(ledger[0]!.documents), 3);
    assert.equal(Number(ledger[0]!.files), 1);
  });

  it('answers 503 when the spool cannot be written (a file-size limit), keeps serving, and loses nothing acknowledged', async () => {
    const dir = await dirFor();
    await receiverConfig(dir);
    // A 64 KB file-size limit: the spool file's writes past it fail as a full disk's would.
    const child = spawn('bash', ['-c', `ulimit -f 64 && exec "${process.execPath}" "${BIN}" receive`], {
      cwd: dir,
      env: { PATH: process.env.PATH, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    try {
      const deadline = Date.now() + 60_000;
      while (!/url=(\S+)/.test(stderr)) {
        assert.ok(Date.now() < deadline, `the receiver did not start:\n${stderr}`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const url = /url=(\S+)/.exec(stderr)![1]!;
      const acked: string[] = [];
      const statuses: number[] = [];
      for (let n = 0; n < 40; n++) {
        const status = await deliver(url, SECRET, orderEvent(3000 + n));
        statuses.push(status);
        if (status === 200) acked.push(`evt-${3000 + n}`);
      }
      assert.ok(statuses.includes(503), `no 503: ${statuses.join(' ')}`);
      assert.ok(acked.length > 3, `${acked.length} acknowledged`);
      assert.ok(
        statuses.every((s) => s === 200 || s === 503),
        statuses.join(' '),
      );
      const { status, body } = await health(new URL(url).origin);
      assert.equal(status, 503);
      assert.equal((body.spools as { writable: boolean }[])[0]!.writable, false);
      child.kill('SIGTERM');
      assert.equal(await exited, 0, stderr);
      // Only whole events, exactly the acknowledged ones: the failed writes' pieces were cut away.
      const spoolDir = path.join(dir, 'spool', 'main');
      for (const name of await readdir(spoolDir)) {
        if (!name.startsWith('events-')) continue;
        const text = await readFile(path.join(spoolDir, name), 'utf8');
        assert.ok(text.endsWith('\n'), 'the file ends with a whole line');
      }
      assert.deepEqual(eventIds(await spooled(spoolDir)), acked);
      assert.match(stderr, /receive\.spool_write_failed/);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('--help describes the command', async () => {
    const help = await runCli(['receive', '--help'], { cwd: REPO_ROOT });
    assertExit(help, 0);
    assert.match(help.stdout, /--secret-env/);
    assert.match(help.stdout, /healthz/);
    const ingestHelp = await runCli(['ingest', '--help'], { cwd: REPO_ROOT });
    assert.match(ingestHelp.stdout, /--spool/);
  });
});
