import assert from 'node:assert/strict';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { spoolFileName } from '../../src/receive/spool-files.js';
import { assertExit, readWarehouse, runCli, tempDir, testSandbox, writeConfig } from '../cli/helpers.js';
import { orderEvent } from './helpers.js';

/**
 * `store-sync sync` drains the receiver's spool of every store that has a receiver block, after its streams,
 * into the warehouse it has open: the webhooks a store sent during the day are in the tables after the nightly
 * run, with no separate `ingest --spool`.
 */

describe('sync drains the spool', () => {
  const cleanups: (() => Promise<void>)[] = [];
  after(async () => {
    for (const cleanup of cleanups) await cleanup();
  });

  it('a sync of a store with a receiver block loads its closed spool files and removes them', async () => {
    const { dir, cleanup } = await tempDir();
    cleanups.push(cleanup);
    const sandbox = await testSandbox();
    cleanups.push(() => sandbox.close());
    const spoolDir = path.join(dir, 'spool');
    await mkdir(spoolDir, { recursive: true });
    const lines = [1, 2, 3].map((n) => JSON.stringify(orderEvent(n)));
    await writeFile(path.join(spoolDir, spoolFileName(Date.UTC(2024, 0, 1))), `${lines.join('\n')}\n`);
    const warehouse = path.join(dir, 'w.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      stores: [
        {
          name: 'main',
          baseUrl: sandbox.baseUrl,
          receiver: { secretEnv: 'RECEIVE_TEST_SECRET', spoolDir },
        },
      ],
    });
    const result = await runCli(['sync', '--config', config, '--streams', 'locations'], {
      env: { RECEIVE_TEST_SECRET: 'whsec-sync-drain-test' },
    });
    assertExit(result, 0);
    const orders = await readWarehouse<{ number: string }>(warehouse, 'SELECT number FROM orders ORDER BY 1');
    assert.deepEqual(
      orders.map((o) => Number(o.number)),
      [1, 2, 3],
    );
    const runs = await readWarehouse<{ command: string }>(
      warehouse,
      'SELECT command FROM _sync_runs ORDER BY started_at',
    );
    assert.deepEqual(
      runs.map((r) => r.command),
      ['sync', 'ingest'],
    );
    assert.deepEqual(
      (await readdir(spoolDir)).filter((name) => name.endsWith('.ndjson')),
      [],
      'the drained file was removed',
    );
  });
});
