import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { emptyStreamState, type StreamState, type SyncMode } from '../src/contracts.js';
import { type ApiClient, runStream, STREAMS, type StreamSummary } from '../src/extract/index.js';
import { defaultStreamOptions, type StreamName } from '../src/streams.js';

/**
 * Shared by the extraction benchmarks. The sandbox runs in its own process, as a remote API would: its
 * CPU time then does not compete with the pipeline's on one event loop, and neither side skews the other.
 */

export const SANDBOX_TOKEN = 'sandbox-token';
const CLI = fileURLToPath(new URL('../bin/store-sync.js', import.meta.url));

export interface SandboxProcess {
  baseUrl: string;
  origin: string;
  stats(): Promise<{ requests: number; byStatus: Record<string, number> }>;
  resetStats(): Promise<void>;
  mutate(plan: Record<string, number>): Promise<unknown>;
  close(): Promise<void>;
}

async function admin(origin: string, method: 'GET' | 'POST', path: string, body?: unknown): Promise<unknown> {
  const response = await request(`${origin}/__sandbox/${path}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return response.body.json();
}

export async function spawnSandbox(args: string[]): Promise<SandboxProcess> {
  const child: ChildProcess = spawn(process.execPath, [CLI, 'sandbox', '--port', '0', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  // Its banner would clutter the report; it is shown only if the sandbox fails to start.
  let banner = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    banner += chunk.toString();
  });
  const lines = createInterface({ input: child.stdout! });
  const [first] = (await Promise.race([
    once(lines, 'line'),
    once(child, 'exit').then(() => {
      throw new Error(`the sandbox process exited before printing its base URL:\n${banner}`);
    }),
  ])) as [string];
  const baseUrl = first.trim();
  const origin = new URL(baseUrl).origin;
  return {
    baseUrl,
    origin,
    stats: async () =>
      (await admin(origin, 'GET', 'stats')) as { requests: number; byStatus: Record<string, number> },
    resetStats: async () => {
      await admin(origin, 'POST', 'stats/reset');
    },
    mutate: (plan) => admin(origin, 'POST', 'mutate', plan),
    close: async () => {
      if (child.exitCode !== null) return;
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

export const ALL_STREAMS = Object.keys(STREAMS) as StreamName[];

export interface SyncOutcome {
  summaries: StreamSummary[];
  states: Record<string, StreamState>;
  records: number;
  pages: number;
}

/** Runs every stream at once against one client (one shared limiter), committing nowhere but counting. */
export async function syncAll(
  client: ApiClient,
  mode: SyncMode,
  now: Date,
  states: Record<string, StreamState> = {},
): Promise<SyncOutcome> {
  const summaries = await Promise.all(
    ALL_STREAMS.map((name) =>
      runStream({
        stream: STREAMS[name],
        client,
        state: states[name] ?? emptyStreamState(),
        mode,
        options: defaultStreamOptions(name),
        now,
        commit: async () => {},
      }),
    ),
  );
  return {
    summaries,
    states: Object.fromEntries(summaries.map((s) => [s.stream, s.state])),
    records: summaries.reduce((n, s) => n + s.records, 0),
    pages: summaries.reduce((n, s) => n + s.pages, 0),
  };
}

export const seconds = (ms: number) => Math.round(ms) / 1000;
