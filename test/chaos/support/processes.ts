import { type ChildProcess, spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { Rng } from '../../../src/sandbox/model/random.js';

/**
 * Real processes for the chaos scenarios: the sandbox and `store-sync` as children of the test, exactly
 * as an operator runs them. Every byte they print is kept, so a scenario can scan all of it for the token.
 */

export const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = path.join(REPO, 'bin', 'store-sync.js');

/** A token no output may ever contain; the sandbox and every sync use it. */
export const CHAOS_TOKEN = 'chaos-Zq7vX2-secret-token-do-not-print';
export const TOKEN_ENV = 'CHAOS_STORE_TOKEN';

/** Everything every child process printed, for the final token scan. */
export const transcript: string[] = [];

export interface CliResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
  timedOut: boolean;
}

export interface RunningCli {
  child: ChildProcess;
  /** Settles when the process has exited (whatever the reason). */
  done: Promise<CliResult>;
  /** What it has printed on stderr so far. */
  stderrSoFar(): string;
}

export interface CliOptions {
  env?: Record<string, string>;
  /** SIGKILL after this long, and report `timedOut` (a hang is a failure the scenario asserts). */
  timeoutMs?: number;
  /** Wrap the command, e.g. `['prlimit', '--fsize=…']`. */
  prefix?: string[];
}

/** Starts `store-sync <args>`; the token is handed over in the environment only, as operators do. */
export function startCli(args: string[], options: CliOptions = {}): RunningCli {
  const [command, ...rest] = [...(options.prefix ?? []), process.execPath, BIN, ...args];
  const started = Date.now();
  const child = spawn(command!, rest, {
    cwd: REPO,
    env: { ...process.env, [TOKEN_ENV]: CHAOS_TOKEN, NO_COLOR: '1', ...options.env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout += chunk.toString();
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  let timedOut = false;
  const timer =
    options.timeoutMs === undefined
      ? null
      : setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, options.timeoutMs);
  const done = new Promise<CliResult>((resolve) => {
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      transcript.push(stdout, stderr);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - started, timedOut });
    });
  });
  return { child, done, stderrSoFar: () => stderr };
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  return startCli(args, { timeoutMs: 10 * 60_000, ...options }).done;
}

/** The flags of a one-off job against a sandbox (no config file). */
export const jobFlags = (baseUrl: string, warehouse: string): string[] => [
  '--base-url',
  baseUrl,
  '--token-env',
  TOKEN_ENV,
  '--warehouse',
  warehouse,
];

export interface SyncConfigOptions {
  baseUrl: string;
  warehouse: string;
  rateLimit?: number;
  maxRetries?: number;
  timeoutSeconds?: number;
  streams?: Record<string, Record<string, unknown>>;
}

/** Writes a sync.config.json for one store named `default` and answers its path. */
export async function writeConfig(dir: string, options: SyncConfigOptions): Promise<string> {
  const file = path.join(dir, `sync.config.${Math.random().toString(36).slice(2)}.json`);
  const config = {
    warehouse: options.warehouse,
    rateLimit: options.rateLimit ?? 0,
    maxRetries: options.maxRetries ?? 5,
    timeoutSeconds: options.timeoutSeconds ?? 30,
    stores: [
      {
        name: 'default',
        baseUrl: options.baseUrl,
        tokenEnv: TOKEN_ENV,
        ...(options.streams ? { streams: options.streams } : {}),
      },
    ],
  };
  await writeFile(file, `${JSON.stringify(config, null, 2)}\n`);
  return file;
}

export interface SandboxProcess {
  baseUrl: string;
  /** Where the `/__sandbox/` routes live. */
  origin: string;
  pid: number;
  stop(): Promise<void>;
}

/** `store-sync sandbox --port 0 …` as a child process; its first stdout line is the base URL. */
export async function startSandboxProcess(args: string[]): Promise<SandboxProcess> {
  const child = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--token', CHAOS_TOKEN, ...args], {
    cwd: REPO,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()));
  const baseUrl = await new Promise<string>((resolve, reject) => {
    let stdout = '';
    const onData = (chunk: Buffer) => {
      stdout += chunk.toString();
      const newline = stdout.indexOf('\n');
      if (newline >= 0) {
        child.stdout!.off('data', onData);
        child.stdout!.resume();
        resolve(stdout.slice(0, newline).trim());
      }
    };
    child.stdout!.on('data', onData);
    child.once('close', (code) => reject(new Error(`sandbox exited with ${code} before serving: ${stderr}`)));
  });
  return {
    baseUrl,
    origin: new URL(baseUrl).origin,
    pid: child.pid!,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Resolves once `predicate` holds (polled), or rejects after `timeoutMs`. */
export async function waitFor(predicate: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!predicate()) {
    if (Date.now() > until) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(20);
  }
}

/** A seeded PRNG (the sandbox's own): a failing chaos run can be replayed with its printed seed. */
export function seededRandom(seed: number): () => number {
  const rng = new Rng(seed);
  return () => rng.next();
}

/** CHAOS_SEED replays a run; otherwise each run draws a fresh seed (printed by the scenario). */
export const chaosSeed = (): number => {
  const fromEnv = Number(process.env.CHAOS_SEED);
  return Number.isInteger(fromEnv) ? fromEnv : Math.floor(Math.random() * 2 ** 31);
};

/** Asserts nothing any child printed contains the token (docs/streams.md, "Safety"). */
export function tokenLeaks(extra: readonly string[] = []): number {
  return [...transcript, ...extra].filter((text) => text.includes(CHAOS_TOKEN)).length;
}
