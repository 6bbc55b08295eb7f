import assert from 'node:assert/strict';
import path from 'node:path';
import { assertWarehouseIsTruth } from './compare.js';
import { runCli, startSandboxProcess, writeConfig } from './processes.js';
import { sandboxStats } from './truth.js';

/**
 * Scenario 1, faults everywhere: one `store-sync sync` against a sandbox that answers a share of requests
 * with 5xx, 429 storms (with Retry-After), connection resets, truncated bodies and stalls, all behind added
 * latency. The run must complete, every stream ok, and the warehouse must equal the truth exactly.
 */

export interface FaultsOptions {
  scale: string;
  pageSize: number;
  latencyMs: number;
  /** A sandbox `--faults` spec. */
  faults: string;
  dir: string;
}

export interface FaultsOutcome {
  retries: number;
  requests: number;
  byStatus: Record<string, number>;
}

export async function faultsEverywhere(options: FaultsOptions): Promise<FaultsOutcome> {
  const sandbox = await startSandboxProcess([
    ...['--scale', options.scale, '--page-size', String(options.pageSize), '--rate-limit', '0'],
    ...['--latency-ms', String(options.latencyMs), '--faults', options.faults],
  ]);
  try {
    const warehouse = path.join(options.dir, 'faults.duckdb');
    // A stall is cut by the client's timeout and retried; 8 retries keep a run of bad luck on one request
    // (19% faults: 0.19^9 ≈ 3e-7) from failing a stream, which is the promise under test here.
    const config = await writeConfig(options.dir, {
      baseUrl: sandbox.baseUrl,
      warehouse,
      maxRetries: 8,
      timeoutSeconds: 2,
    });
    const result = await runCli(['sync', '--config', config], { timeoutMs: 10 * 60_000 });
    assert.equal(result.timedOut, false, 'the sync hung');
    assert.ok(
      result.code === 0 || result.code === 3,
      `sync exited ${result.code}: ${result.stderr.slice(-2000)}`,
    );
    assert.match(
      result.stdout,
      /default: (succeeded|completed with rejections) in/,
      `a stream did not complete:\n${result.stdout}`,
    );
    const retries = Number(/(\d+) retries/.exec(result.stdout)?.[1] ?? Number.NaN);
    const stats = await sandboxStats(sandbox.origin);
    await assertWarehouseIsTruth(warehouse, sandbox.origin, options.dir, 'faults everywhere');
    return { retries, requests: stats.requests, byStatus: stats.byStatus };
  } finally {
    await sandbox.stop();
  }
}

/** The issue's mix: 5% 5xx, 3% 429 (storms with Retry-After), 2% resets, 2% truncated, 1% stalls. */
export const ISSUE_FAULT_MIX =
  '500:0.03,502:0.01,503:0.01,429:0.03,reset:0.02,truncate:0.02,stall:0.01,stall-ms:10000';
