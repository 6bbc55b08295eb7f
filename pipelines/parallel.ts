import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import pLimit from 'p-limit';
import type { StoreConfig } from '../src/config.js';
import type { Logger } from '../src/log.js';

/**
 * `sync --parallel N`: every store in a child process of its own (`store-sync sync --store NAME` with the
 * command's other flags), at most N at once. Each child writes its own warehouse file (warehouseLayout
 * "per-store"), so the stores never wait for one another's lock, and each is paced by its own rate limit.
 * A child's failure is that store's: the others run on, and the command's exit code is the worst store's.
 */

/** What one store's child came to. */
export interface ChildOutcome {
  store: string;
  /** The child's exit code; null when it was never started (the command was stopped first). */
  exitCode: number | null;
  /** The signal that ended it, when one did. */
  signal: NodeJS.Signals | null;
  seconds: number;
  /** The last line the child wrote to stderr (its error, when it failed). */
  lastError: string | null;
}

export interface ParallelOptions {
  stores: readonly StoreConfig[];
  parallel: number;
  /** The command's own arguments (process.argv after the script), passed on without --parallel and --store. */
  argv: readonly string[];
  /** How the arguments become a `sync` command's, when the command is another (see childArgs). */
  rewrite?: Parameters<typeof childArgs>[2];
  logger: Logger;
  /** Where each child's stderr line goes, prefixed with its store (default: this process's stderr). */
  writeLine?: (store: string, line: string) => void;
  /** Aborted: no further store starts, and the running children are sent SIGTERM (each stops at a page). */
  signal?: AbortSignal;
}

/** The bin script: this file is pipelines/parallel.ts (tsx) or dist/pipelines/parallel.js (built). */
function binScript(): string {
  const here = path.dirname(fileURLToPath(import.meta.url));
  const root =
    path.basename(path.dirname(here)) === 'dist' ? path.resolve(here, '../..') : path.resolve(here, '..');
  return path.join(root, 'bin', 'store-sync.js');
}

/**
 * The arguments a child gets: the command's own, without those that choose stores or the parallelism (and
 * `drop`, flags of the parent's command that `sync` has not, each with its value), the command `sync`.
 */
export function childArgs(
  argv: readonly string[],
  store: string,
  { drop = [], command }: { drop?: string[]; command?: { from: string; to: string } } = {},
): string[] {
  const out: string[] = [];
  const dropped = new Set(['--parallel', '--store', ...drop]);
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const flag = arg.split('=')[0]!;
    if (command && arg === command.from) {
      out.push(command.to);
      continue;
    }
    if (dropped.has(flag)) {
      // `--parallel 3` takes the next argument; `--parallel=3` does not.
      if (!arg.includes('=')) i++;
      continue;
    }
    out.push(arg);
  }
  return [...out, '--store', store];
}

export async function syncInParallel(options: ParallelOptions): Promise<ChildOutcome[]> {
  const limit = pLimit(options.parallel);
  const script = binScript();
  const running = new Set<ReturnType<typeof spawn>>();
  const stopAll = () => {
    for (const child of running) child.kill('SIGTERM');
  };
  options.signal?.addEventListener('abort', stopAll, { once: true });
  // JSON log lines stay JSON (each names its store); text lines get the store in front.
  const json = options.argv.some(
    (a, i) => a === '--log-format=json' || (a === '--log-format' && options.argv[i + 1] === 'json'),
  );
  const write =
    options.writeLine ??
    ((store: string, line: string) => process.stderr.write(json ? `${line}\n` : `${store} | ${line}\n`));
  try {
    return await Promise.all(
      options.stores.map((store) =>
        limit(
          () =>
            new Promise<ChildOutcome>((resolve) => {
              if (options.signal?.aborted) {
                resolve({ store: store.name, exitCode: null, signal: null, seconds: 0, lastError: null });
                return;
              }
              const started = performance.now();
              const args = childArgs(options.argv, store.name, options.rewrite);
              options.logger.info('store.started', { store: store.name, pid: process.pid });
              const child = spawn(process.execPath, [...process.execArgv, script, ...args], {
                stdio: ['ignore', 'pipe', 'pipe'],
                env: process.env,
              });
              running.add(child);
              let lastError: string | null = null;
              let pending = '';
              child.stderr.setEncoding('utf8');
              child.stderr.on('data', (chunk: string) => {
                pending += chunk;
                const lines = pending.split('\n');
                pending = lines.pop()!;
                for (const line of lines) {
                  if (line.trim()) lastError = line.trim();
                  write(store.name, line);
                }
              });
              // The child's own summary (one store's table) goes to the log with text logs: the command
              // prints one table over every store.
              child.stdout.setEncoding('utf8');
              let out = '';
              child.stdout.on('data', (chunk: string) => {
                out += chunk;
              });
              const done = (exitCode: number | null, signal: NodeJS.Signals | null, error?: Error) => {
                running.delete(child);
                if (pending.trim()) {
                  lastError = pending.trim();
                  write(store.name, pending);
                }
                // A log shipper reading JSON lines gets none of the child's table (the parent prints its own).
                if (!json) for (const line of out.split('\n')) if (line.trim()) write(store.name, line);
                if (error) lastError = `could not start: ${error.message}`;
                resolve({
                  store: store.name,
                  exitCode: error ? 1 : exitCode,
                  signal,
                  seconds: (performance.now() - started) / 1000,
                  lastError,
                });
              };
              child.once('error', (error) => done(null, null, error));
              child.once('close', (code, signal) => done(code, signal));
            }),
        ),
      ),
    );
  } finally {
    options.signal?.removeEventListener('abort', stopAll);
  }
}

/**
 * The worst of the stores' exit codes: a usage error (2) over a failure (1) over a partial run (3) over 0. A
 * child ended by a signal, or never started, counts as failed.
 */
export function worstExitCode(outcomes: readonly ChildOutcome[]): number {
  const codes = outcomes.map((o) => (o.exitCode === null ? 1 : o.exitCode));
  for (const code of [2, 1, 3]) if (codes.includes(code)) return code;
  return codes.find((c) => c !== 0) ?? 0;
}
