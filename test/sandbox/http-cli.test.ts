import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { after, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';

/** `store-sync sandbox` as a user runs it: a real child process, its first stdout line, signals, exit codes. */

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const children = new Set<ChildProcess>();

function run(args: string[]) {
  const child = spawn(process.execPath, ['bin/store-sync.js', 'sandbox', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.add(child);
  child.on('exit', () => children.delete(child));
  let stderr = '';
  child.stderr!.on('data', (chunk) => {
    stderr += chunk;
  });
  const exited = once(child, 'exit').then(([code]) => code as number | null);
  return { child, exited, stderr: () => stderr };
}

/** The first stdout line, which the command promises is the base URL alone. */
async function firstLine(child: ChildProcess): Promise<string> {
  const lines = createInterface({ input: child.stdout! });
  for await (const line of lines) {
    lines.close();
    return line;
  }
  throw new Error('the sandbox printed nothing on stdout');
}

async function get(url: string, token: string, version = '2024-04-01') {
  const response = await request(url, {
    headers: { authorization: `Bearer ${token}`, 'x-platform-api-version': version },
  });
  return { status: response.statusCode, body: (await response.body.json()) as { results?: unknown[] } };
}

describe('store-sync sandbox', () => {
  after(() => {
    for (const child of children) child.kill('SIGKILL');
  });

  it('prints the base URL first, serves the API, and stops cleanly on SIGTERM', async () => {
    const sandbox = run(['--port', '0', '--rate-limit', '0', '--seed', '5']);
    const baseUrl = await firstLine(sandbox.child);
    assert.match(baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/api\/$/);
    const products = await get(`${baseUrl}products/`, 'sandbox-token');
    assert.equal(products.status, 200);
    assert.ok(products.body.results!.length > 0);
    assert.match(sandbox.stderr(), /sandbox-token/, 'the default token is printed');
    assert.match(
      sandbox.stderr(),
      /curl -H 'Authorization: Bearer sandbox-token' -H 'X-Platform-API-Version: 2024-04-01' http/,
    );
    sandbox.child.kill('SIGTERM');
    assert.equal(await sandbox.exited, 0);
  });

  it('accepts repeated --token options with scopes after the first colon', async () => {
    const sandbox = run([
      '--port',
      '0',
      '--rate-limit',
      '0',
      '--token',
      'T1',
      '--token',
      'T2:catalogue:read,orders:read',
    ]);
    const baseUrl = await firstLine(sandbox.child);
    assert.equal((await get(`${baseUrl}products/`, 'T2')).status, 200);
    assert.equal((await get(`${baseUrl}subscriptions/`, 'T2', '2023-02-10')).status, 403);
    assert.equal((await get(`${baseUrl}subscriptions/`, 'T1', '2023-02-10')).status, 200);
    assert.equal(
      (await get(`${baseUrl}products/`, 'sandbox-token')).status,
      401,
      'no default token once tokens are given',
    );
    sandbox.child.kill('SIGINT');
    assert.equal(await sandbox.exited, 0);
  });

  const badOptions: [string[], RegExp][] = [
    [['--scale', 'huge'], /--scale/],
    [['--token', 'X:catalogue:reed'], /catalogue:reed/],
    [['--faults', '500:2'], /--faults/],
    [['--port', '-1'], /--port/],
    [['--page-size', '0'], /--page-size/],
    [['--rate-limit', 'fast'], /rate-limit/],
    [['--bogus-option'], /bogus/],
  ];
  for (const [args, message] of badOptions) {
    it(`exits 2 with a clear message for ${args.join(' ')}`, async () => {
      const sandbox = run(args);
      const code = await sandbox.exited;
      assert.equal(code, 2, sandbox.stderr());
      assert.match(sandbox.stderr(), message);
    });
  }
});
