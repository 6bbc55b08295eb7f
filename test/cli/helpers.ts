import assert from 'node:assert/strict';
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { chmod, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { runReadOnlyQuery } from '../../src/load/index.js';
import { type Sandbox, type SandboxOptions, startSandbox } from '../../src/sandbox/index.js';
import { send, startHostileServer } from '../chaos/support/hostile-server.js';

/**
 * The CLI as a user runs it: `node bin/store-sync.js …` in a child process with pipes (so never a TTY),
 * against a sandbox served from this process. Every output of every run is kept, so a file can assert at
 * its end that the token never appeared anywhere and that no ANSI escape reached a pipe.
 */

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const BIN = path.join(REPO_ROOT, 'bin', 'store-sync.js');

/** The sandbox's token: distinctive, so finding it in any output is unambiguous. */
export const TOKEN = 'cli-test-secret-7Qx2vW9';
export const TOKEN_ENV = 'STORE_SYNC_CLI_TEST_TOKEN';

export interface CliResult {
  args: string[];
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

const transcripts: CliResult[] = [];
const children = new Set<ChildProcess>();

export interface RunOptions {
  cwd?: string;
  /** Added to a clean environment that holds the token variable (unless `withToken: false`). */
  env?: Record<string, string | undefined>;
  withToken?: boolean;
  /** Written to stdin, which is then closed (unless `holdStdin`). */
  input?: string | Buffer;
  /** Leaves stdin open after `input`, as a producer that has not finished would. */
  holdStdin?: boolean;
  /** The child is killed after this long, and the test fails: no command may hang. */
  timeoutMs?: number;
  /** Run as another user (root only): how a non-writable folder is tested when root may write anywhere. */
  uid?: number;
  gid?: number;
}

function childEnv(options: RunOptions): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: process.env.HOME, TMPDIR: os.tmpdir() };
  if (options.withToken !== false) env[TOKEN_ENV] = TOKEN;
  for (const [key, value] of Object.entries(options.env ?? {})) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

/** Starts the CLI and returns the process with a promise of its whole transcript. */
export function startCli(
  args: string[],
  options: RunOptions = {},
): { child: ChildProcess; done: Promise<CliResult>; stderr: () => string } {
  const spawnOptions: SpawnOptions = {
    cwd: options.cwd ?? REPO_ROOT,
    env: childEnv(options),
    stdio: ['pipe', 'pipe', 'pipe'],
    ...(options.uid !== undefined ? { uid: options.uid, gid: options.gid ?? options.uid } : {}),
  };
  const child = spawn(process.execPath, [BIN, ...args], spawnOptions);
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
    stdout += chunk;
  });
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
    stderr += chunk;
  });
  if (options.holdStdin) child.stdin!.write(options.input ?? '');
  else if (options.input !== undefined) child.stdin!.end(options.input);
  else child.stdin!.end();
  const timeoutMs = options.timeoutMs ?? 90_000;
  const done = new Promise<CliResult>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(
          `store-sync ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout:\n${stdout}\nstderr:\n${stderr}`,
        ),
      );
    }, timeoutMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      const result = { args, code, signal, stdout, stderr };
      transcripts.push(result);
      resolve(result);
    });
  });
  return { child, done, stderr: () => stderr };
}

export function runCli(args: string[], options: RunOptions = {}): Promise<CliResult> {
  return startCli(args, options).done;
}

/** Resolves once the child's stderr matches, or rejects when it exits first. */
export async function waitForStderr(
  run: ReturnType<typeof startCli>,
  pattern: RegExp,
  timeoutMs = 60_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  run.done.then(
    () => {
      exited = true;
    },
    () => {
      exited = true;
    },
  );
  while (!pattern.test(run.stderr())) {
    if (exited) throw new Error(`the command ended before its stderr matched ${pattern}:\n${run.stderr()}`);
    if (Date.now() > deadline) throw new Error(`stderr did not match ${pattern} in time:\n${run.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Fails with the whole transcript, which is what one needs to see when an exit code is wrong. */
/** A run's stderr with `--log-format json`: every line must be one JSON object, and is parsed. */
export function jsonLines(stderr: string): Record<string, unknown>[] {
  return stderr
    .trimEnd()
    .split('\n')
    .map((line) => {
      let parsed: Record<string, unknown> | undefined;
      assert.doesNotThrow(() => {
        parsed = JSON.parse(line) as Record<string, unknown>;
      }, `a stderr line is not JSON: ${line}`);
      return parsed!;
    });
}

export function assertExit(result: CliResult, expected: number): void {
  assert.equal(
    result.code,
    expected,
    `store-sync ${result.args.join(' ')} exited ${result.code} (signal ${result.signal}), expected ${expected}\nstdout:\n${result.stdout}\nstderr:\n${result.stderr}`,
  );
}

/** The one clear paragraph a failing command prints: `error: …`, and no stack trace. */
export function assertCleanError(result: CliResult, code: number, message: RegExp): void {
  assertExit(result, code);
  assert.match(result.stderr, /^error: /m);
  assert.match(result.stderr, message);
  assert.doesNotMatch(result.stderr, /^\s+at .+:\d+:\d+\)?$/m, 'no stack trace without --verbose');
}

/** Every output of every run so far: the token never appears, and a pipe gets no ANSI escapes or bars. */
export function assertNoSecretsOrEscapes(): void {
  assert.ok(transcripts.length > 0, 'no command ran');
  for (const run of transcripts) {
    for (const [name, text] of [
      ['stdout', run.stdout],
      ['stderr', run.stderr],
    ] as const) {
      assert.ok(
        !text.includes(TOKEN),
        `the token appeared in the ${name} of store-sync ${run.args.join(' ')}`,
      );
      assert.doesNotMatch(text, /\u001b\[/, `ANSI escape in the ${name} of store-sync ${run.args.join(' ')}`);
      // cli-progress draws its bars with these blocks: none may reach a pipe.
      assert.doesNotMatch(
        text,
        /[\u2588\u2591]/,
        `a progress bar in the ${name} of store-sync ${run.args.join(' ')}`,
      );
    }
  }
}

/** Kills any child still running (a failed test must not leave the runner waiting). */
export function killChildren(): void {
  for (const child of children) child.kill('SIGKILL');
}

export function testSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  return startSandbox({ rateLimit: 0, scale: 40, seed: 7, tokens: [TOKEN], ...options });
}

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-cli-'));
  // Readable by others, so a child run as another user (see RunOptions.uid) can reach inside.
  await chmod(dir, 0o755);
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A sandbox store and a config that syncs it, as store "shop", into `w.duckdb` in a temp folder. */
export interface SandboxJob {
  sandbox: Sandbox;
  dir: string;
  warehouse: string;
  config: string;
  /** Stops the CLI children, the sandbox, and removes the folder. */
  close(): Promise<void>;
}

/** A SandboxJob: `store` adds to the store's entry in the config (its streams' settings …). */
export async function sandboxJob(
  options: SandboxOptions = {},
  store: (sandbox: Sandbox) => Record<string, unknown> = () => ({}),
): Promise<SandboxJob> {
  const sandbox = await testSandbox(options);
  const { dir, cleanup } = await tempDir();
  const config = await writeConfig(dir, {
    warehouse: 'w.duckdb',
    stores: [{ name: 'shop', baseUrl: sandbox.baseUrl, ...store(sandbox) }],
  });
  return {
    sandbox,
    dir,
    warehouse: path.join(dir, 'w.duckdb'),
    config,
    close: async () => {
      killChildren();
      await sandbox.close();
      await cleanup();
    },
  };
}

/**
 * Warehouse files in temporary folders for one test file: `create` gives a fresh one, `removeAll` (from
 * `after`) removes every folder it made.
 */
export function scratchWarehouses(): {
  create: () => Promise<{ dir: string; warehouse: string }>;
  removeAll: () => Promise<void>;
} {
  const cleanups: (() => Promise<void>)[] = [];
  return {
    create: async () => {
      const { dir, cleanup } = await tempDir();
      cleanups.push(cleanup);
      return { dir, warehouse: path.join(dir, 'w.duckdb') };
    },
    removeAll: async () => {
      for (const cleanup of cleanups.splice(0)) await cleanup();
    },
  };
}

/** `store-sync ingest --json <inputs> --warehouse <warehouse> <extra>`: the process and the JSON summary it printed. */
export async function ingestWithSummary<Summary>(
  inputs: string[],
  warehouse: string,
  extra: string[] = [],
): Promise<{ result: CliResult; summary: Summary }> {
  const result = await runCli(['ingest', '--json', ...inputs, '--warehouse', warehouse, ...extra]);
  return { result, summary: JSON.parse(result.stdout) as Summary };
}

export interface StoreEntry {
  name: string;
  baseUrl: string;
  tokenEnv?: string;
  [key: string]: unknown;
}

/** Writes a config file (rate limit off, the test token variable) and returns its path. */
export async function writeConfig(
  dir: string,
  config: { warehouse: string; stores: StoreEntry[]; [key: string]: unknown },
  name = 'sync.config.json',
): Promise<string> {
  const file = path.join(dir, name);
  const full = {
    rateLimit: 0,
    ...config,
    stores: config.stores.map((s) => ({ tokenEnv: TOKEN_ENV, ...s })),
  };
  await writeFile(file, `${JSON.stringify(full, null, 2)}\n`);
  return file;
}

/**
 * What a folder holds, file by file with a content hash: equal before and after means the command changed
 * nothing there (DuckDB also writes a .wal beside the file, which this sees too).
 */
export async function folderFingerprint(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  let names: string[];
  try {
    names = await readdir(dir);
  } catch {
    return { '(folder)': 'absent' };
  }
  for (const name of names.sort()) {
    const file = path.join(dir, name);
    const info = await stat(file);
    out[name] = info.isDirectory()
      ? 'dir'
      : `${info.size}:${info.mtimeMs}:${createHash('sha256')
          .update(await readFile(file))
          .digest('hex')}`;
  }
  return out;
}

/** `store-sync query … --format json`, parsed. */
export async function queryJson<T = Record<string, unknown>>(
  warehouseArgs: string[],
  sql: string,
  options: RunOptions = {},
): Promise<T[]> {
  const result = await runCli(['query', sql, '--format', 'json', ...warehouseArgs], options);
  assertExit(result, 0);
  return JSON.parse(result.stdout) as T[];
}

/** The sandbox's request count since the last reset. */
export function requestsOf(sandbox: Sandbox): number {
  return sandbox.stats().requests;
}

/**
 * Reads the warehouse in this process (read-only, closed at once): a faster check than another
 * `store-sync query` child where the query command itself is not what is being tested.
 */
export async function readWarehouse<T = Record<string, unknown>>(file: string, sql: string): Promise<T[]> {
  const { columns, rows } = await runReadOnlyQuery(file, sql);
  return rows.map((row) => Object.fromEntries(columns.map((c, i) => [c.name, row[i]])) as T);
}

/** A proxy in front of a sandbox, started on loopback; `close` stops it. */
export interface SandboxProxy {
  baseUrl: string;
  close: () => Promise<void>;
}

/**
 * A loopback proxy in front of a sandbox that passes requests through, links rewritten to itself. `answer`
 * may answer a request itself (status and body) before it goes on, and may return a promise: the request
 * waits for it (a gate, a delay); `rewrite` may replace the parsed JSON body of a successful answer (returning
 * what to serve), given the request's path.
 */
async function startSandboxProxy(
  upstream: Sandbox,
  options: {
    answer?: (
      url: string,
    ) => { status: number; body: unknown } | null | Promise<{ status: number; body: unknown } | null>;
    rewrite?: (body: unknown, pathname: string) => unknown;
  },
): Promise<SandboxProxy> {
  let origin = '';
  const server = createServer((req, res) => {
    const url = req.url ?? '/';
    Promise.resolve(options.answer?.(url) ?? null)
      .then(async (own) => {
        if (own) {
          const body = JSON.stringify(own.body);
          res.writeHead(own.status, {
            'content-type': 'application/json',
            'content-length': Buffer.byteLength(body),
          });
          res.end(body);
          return;
        }
        const answer = await request(`${upstream.origin}${url}`, {
          method: req.method as 'GET',
          headers: req.headers,
        });
        let text = (await answer.body.text()).split(upstream.origin).join(origin);
        const type = String(answer.headers['content-type']);
        if (options.rewrite && answer.statusCode === 200 && type.includes('json'))
          text = JSON.stringify(options.rewrite(JSON.parse(text), new URL(url, origin).pathname));
        res.writeHead(answer.statusCode, { 'content-type': type, 'content-length': Buffer.byteLength(text) });
        res.end(text);
      })
      .catch((error: Error) => res.destroy(error));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    baseUrl: `${origin}${new URL(upstream.baseUrl).pathname}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * A loopback proxy in front of a sandbox that answers the requests whose path matches a rule with that
 * rule's status and an API-style error body, and passes every other request through (links rewritten to
 * itself): one endpoint of an otherwise healthy store that refuses or keeps failing.
 */
export function startBreakingProxy(
  upstream: Sandbox,
  rules: { path: RegExp; status: number }[],
): Promise<SandboxProxy> {
  return startSandboxProxy(upstream, {
    answer: (url) => {
      const rule = rules.find((r) => r.path.test(url));
      return rule
        ? {
            status: rule.status,
            body: { error: { code: 'broken', message: `this proxy answers ${rule.status} here` } },
          }
        : null;
    },
  });
}

/**
 * A loopback proxy in front of a sandbox that passes every request through (links rewritten to itself) and
 * hands the parsed JSON body of each list page (`{next, results}`) to `rewrite` with the request's path:
 * what `rewrite` returns is served instead. A store whose API changed under the sync: a field turned into
 * another type, a record gone from the listing, fields added.
 */
export function startRewritingProxy(
  upstream: Sandbox,
  rewrite: (page: { next: string | null; results: Record<string, unknown>[] }, path: string) => unknown,
): Promise<SandboxProxy> {
  return startSandboxProxy(upstream, {
    rewrite: (body, pathname) =>
      body !== null && typeof body === 'object' && Array.isArray((body as { results?: unknown }).results)
        ? rewrite(body as Parameters<typeof rewrite>[0], pathname)
        : body,
  });
}

/**
 * A loopback proxy in front of a sandbox that notes when each API request arrived (ms, monotonic) and passes
 * it through: how a paced run spread its requests, as the server saw them.
 */
export async function startArrivalsProxy(upstream: Sandbox): Promise<SandboxProxy & { arrivals: number[] }> {
  const arrivals: number[] = [];
  const apiPath = new URL(upstream.baseUrl).pathname;
  const proxy = await startSandboxProxy(upstream, {
    answer: (url) => {
      if (url.startsWith(apiPath)) arrivals.push(performance.now());
      return null;
    },
  });
  return { ...proxy, arrivals };
}

/**
 * A loopback proxy in front of a sandbox whose requests wait while it is shut and pass through once it is
 * open (it starts open): a sync that meets it shut holds the warehouse (opened before its first request) for
 * as long as the test likes, with no timing. `waiting` counts the requests held at the gate now.
 * `shutAfter(n)` lets n more requests through and shuts on the next: a sync has committed pages and waits.
 */
export async function startGatedProxy(upstream: Sandbox): Promise<
  SandboxProxy & {
    shut: () => void;
    shutAfter: (requests: number) => void;
    open: () => void;
    waiting: () => number;
  }
> {
  let release: (() => void) | null = null;
  let gate: Promise<void> = Promise.resolve();
  let waiting = 0;
  let passing: number | null = null;
  const shut = () => {
    gate = new Promise((resolve) => {
      release = resolve;
    });
  };
  const proxy = await startSandboxProxy(upstream, {
    answer: async () => {
      if (passing !== null) {
        if (passing === 0) {
          passing = null;
          shut();
        } else passing -= 1;
      }
      waiting += 1;
      try {
        await gate;
      } finally {
        waiting -= 1;
      }
      return null;
    },
  });
  return {
    ...proxy,
    shut,
    shutAfter: (requests) => {
      passing = requests;
    },
    open: () => {
      passing = null;
      release?.();
    },
    waiting: () => waiting,
  };
}

/**
 * A loopback proxy in front of a sandbox that hands every successful JSON answer (list pages and single
 * records alike) to `rewrite`, which may change it in place.
 */
export function startRecordProxy(
  upstream: Sandbox,
  rewrite: (body: Record<string, unknown>, path: string) => void,
): Promise<SandboxProxy> {
  return startSandboxProxy(upstream, {
    rewrite: (body, pathname) => {
      if (body !== null && typeof body === 'object') rewrite(body as Record<string, unknown>, pathname);
      return body;
    },
  });
}

/**
 * A loopback server that answers every request with a 500 whose body repeats the Authorization header: a
 * store that echoes the bearer token back in its errors. `baseUrl` is its API root (no sandbox behind it).
 */
export async function startTokenEchoServer(): Promise<SandboxProxy> {
  const server = await startHostileServer((request, response) =>
    send(
      response,
      500,
      'application/json',
      JSON.stringify({ detail: `cannot serve ${request.headers.authorization}` }),
    ),
  );
  return { baseUrl: `${server.origin}/api/`, close: server.close };
}
