import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { Agent, request } from 'undici';

/**
 * `store-sync sandbox` stops on SIGTERM however its clients left their connections: idle in a keep-alive pool,
 * held by a client that was SIGKILLed, or waiting out `--latency-ms` for an answer. A wait that outlives its
 * connection would keep the process running until it ends (two minutes here, up to ten with the option's
 * maximum), so a stopping sandbox ends every wait and closes every connection at once.
 */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const TOKEN = 'sandbox-token';
const children = new Set<ChildProcess>();

/** Long enough that a sandbox waiting on any of these would clearly miss the bounds below. */
const KEEP_ALIVE_MS = 10 * 60_000;
const LATENCY_MS = 120_000;

function start(args: string[]) {
  const child = spawn(process.execPath, ['bin/store-sync.js', 'sandbox', '--rate-limit', '0', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = once(child, 'exit').then(([code, signal]) => {
    children.delete(child);
    return { code: code as number | null, signal: signal as NodeJS.Signals | null };
  });
  const baseUrl = (async () => {
    for await (const line of createInterface({ input: child.stdout! })) return line;
    throw new Error(`the sandbox printed nothing on stdout:\n${stderr}`);
  })();
  return { child, exited, baseUrl, stderr: () => stderr };
}

/** Sends SIGTERM and resolves with the exit and how long it took, or fails once `boundMs` has passed. */
async function stop(sandbox: ReturnType<typeof start>, boundMs: number) {
  const started = Date.now();
  sandbox.child.kill('SIGTERM');
  const timeout = sleep(boundMs).then(() => null);
  const exit = await Promise.race([sandbox.exited, timeout]);
  const ms = Date.now() - started;
  if (!exit) {
    sandbox.child.kill('SIGKILL');
    assert.fail(`the sandbox was still running ${boundMs} ms after SIGTERM\nstderr:\n${sandbox.stderr()}`);
  }
  return { ...exit, ms };
}

const pooled = () =>
  new Agent({ keepAliveTimeout: KEEP_ALIVE_MS, keepAliveMaxTimeout: KEEP_ALIVE_MS, connections: 8 });

async function inFlight(baseUrl: string): Promise<number> {
  const origin = new URL(baseUrl).origin;
  const stats = await request(`${origin}/__sandbox/stats`, { reset: true });
  return ((await stats.body.json()) as { requests: number }).requests;
}

describe('store-sync sandbox shutdown', () => {
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('exits at once on SIGTERM with idle keep-alive connections open', async () => {
    const sandbox = start([]);
    const baseUrl = await sandbox.baseUrl;
    const agent = pooled();
    try {
      // Eight requests at once: eight connections, idle in the pool once answered.
      const answers = await Promise.all(
        Array.from({ length: 8 }, () =>
          request(`${baseUrl}products/`, {
            dispatcher: agent,
            headers: { authorization: `Bearer ${TOKEN}`, 'x-platform-api-version': '2024-04-01' },
          }).then(async (r) => {
            await r.body.text();
            return r.headers.connection;
          }),
        ),
      );
      assert.deepEqual(answers, Array(8).fill('keep-alive'));
      // Under the server's own keep-alive timeout (5 s), which would end idle connections anyway.
      const exit = await stop(sandbox, 4_000);
      assert.deepEqual([exit.code, exit.signal], [0, null], sandbox.stderr());
    } finally {
      await agent.destroy();
    }
  });

  it("exits at once on SIGTERM after a SIGKILLed client's requests were left waiting on --latency-ms", async () => {
    const sandbox = start(['--latency-ms', String(LATENCY_MS)]);
    const baseUrl = await sandbox.baseUrl;
    // A client in another process: keep-alive connections left idle (the stats route has no latency) and
    // eight API requests waiting for their answers, then SIGKILL.
    const client = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
        import { Agent, request } from 'undici';
        const [baseUrl, token, keepAlive] = process.argv.slice(1);
        const origin = new URL(baseUrl).origin;
        const agent = new Agent({ keepAliveTimeout: Number(keepAlive), keepAliveMaxTimeout: Number(keepAlive), connections: 16 });
        await Promise.all(Array.from({ length: 8 }, () =>
          request(origin + '/__sandbox/stats', { dispatcher: agent }).then((r) => r.body.text())));
        for (let i = 0; i < 8; i++)
          request(baseUrl + 'products/', { dispatcher: agent, headers: { authorization: 'Bearer ' + token, 'x-platform-api-version': '2024-04-01' } }).catch(() => {});
        process.stdout.write('sent\\n');
        setInterval(() => {}, 60_000);
        `,
        baseUrl,
        TOKEN,
        String(KEEP_ALIVE_MS),
      ],
      { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'inherit'] },
    );
    children.add(client);
    for await (const line of createInterface({ input: client.stdout! })) if (line === 'sent') break;
    for (let waited = 0; (await inFlight(baseUrl)) < 8; waited += 20) {
      assert.ok(waited < 30_000, 'the requests never reached the sandbox');
      await sleep(20);
    }
    client.kill('SIGKILL');
    await once(client, 'exit');
    children.delete(client);
    const exit = await stop(sandbox, 10_000);
    assert.deepEqual([exit.code, exit.signal], [0, null], sandbox.stderr());
  });

  it('exits at once on SIGTERM while live clients wait on --latency-ms, and their requests fail', async () => {
    const sandbox = start(['--latency-ms', String(LATENCY_MS)]);
    const baseUrl = await sandbox.baseUrl;
    const agent = pooled();
    try {
      // Settled as they end (the sandbox closes their connections), so no rejection goes unhandled meanwhile.
      const waiting = Promise.allSettled(
        Array.from({ length: 4 }, () =>
          request(`${baseUrl}products/`, {
            dispatcher: agent,
            headers: { authorization: `Bearer ${TOKEN}`, 'x-platform-api-version': '2024-04-01' },
            headersTimeout: LATENCY_MS * 2,
          }),
        ),
      );
      for (let waited = 0; (await inFlight(baseUrl)) < 4; waited += 20) {
        assert.ok(waited < 30_000, 'the requests never reached the sandbox');
        await sleep(20);
      }
      const exit = await stop(sandbox, 10_000);
      assert.deepEqual([exit.code, exit.signal], [0, null], sandbox.stderr());
      const outcomes = await waiting;
      assert.deepEqual(
        outcomes.map((o) => o.status),
        Array(4).fill('rejected'),
        'no answer: the connection closed',
      );
    } finally {
      await agent.destroy();
    }
  });
});
