import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { HISTORIES_OF, historyName } from '../../src/model/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertCleanError,
  assertExit,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * `keepHistory: false` (and `STORE_SYNC_HISTORY=0` for one command) writes no `<table>_history` version; the
 * tables themselves load as ever, and turning it on again resumes versions from the next load.
 */
describe('store-sync: keepHistory', () => {
  let sandbox: Sandbox;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    sandbox = await testSandbox({ scale: 30, pageSize: 25 });
  });
  after(async () => {
    killChildren();
    await sandbox.close();
    for (const cleanup of cleanups) await cleanup();
  });

  async function job(extra: Record<string, unknown>) {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const warehouse = path.join(dir, 'w.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
      ...extra,
    });
    return { dir, warehouse, config };
  }

  /** Versions per history table. */
  const versions = async (warehouse: string) =>
    Object.fromEntries(
      await Promise.all(
        HISTORIES_OF.map(async (table) => [
          table,
          (
            await readWarehouse<{ n: number }>(
              warehouse,
              `SELECT count(*)::INTEGER AS n FROM ${historyName(table)}`,
            )
          )[0]!.n,
        ]),
      ),
    );

  it('false writes no version; the tables load as ever; on again, versions resume', async () => {
    const off = await job({ keepHistory: false });
    assertExit(await runCli(['sync', '--config', off.config]), 0);
    assert.ok(
      (
        await readWarehouse<{ n: number }>(off.warehouse, 'SELECT count(*)::INTEGER AS n FROM subscriptions')
      )[0]!.n > 0,
    );
    for (const [table, n] of Object.entries(await versions(off.warehouse))) assert.equal(n, 0, table);
    // The same job with history on: a full refresh observes every record again, so each gets its version.
    const on = await writeConfig(off.dir, {
      warehouse: off.warehouse,
      stores: [{ name: 'shop', baseUrl: sandbox.baseUrl }],
    });
    assertExit(await runCli(['sync', '--full-refresh', '--config', on]), 0);
    const counted = await versions(off.warehouse);
    assert.ok(counted.subscriptions! > 0 && counted.variant_prices! > 0, JSON.stringify(counted));
  });

  it('STORE_SYNC_HISTORY=0 turns it off for one command; a value other than 0 or 1 is refused', async () => {
    const { warehouse, config } = await job({});
    assertExit(await runCli(['sync', '--config', config], { env: { STORE_SYNC_HISTORY: '0' } }), 0);
    for (const [table, n] of Object.entries(await versions(warehouse))) assert.equal(n, 0, table);
    assertCleanError(
      await runCli(['sync', '--config', config], { env: { STORE_SYNC_HISTORY: 'no' } }),
      2,
      /STORE_SYNC_HISTORY="no": expected 0 \(no history versions\) or 1 \(keep them\)/,
    );
  });
});
