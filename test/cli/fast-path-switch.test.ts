import assert from 'node:assert/strict';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeOrderFiles } from '../../bench/warehouse-data.js';
import { openWarehouse } from '../../src/load/index.js';
import { spoolFileName } from '../../src/receive/spool-files.js';
import { orderEvent } from '../receive/helpers.js';
import { FIXTURES, snapshot, tableRows } from '../warehouse/helpers.js';
import {
  assertCleanError,
  assertExit,
  jsonLines,
  runCli,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * `--no-fast-path` (and STORE_SYNC_FAST_PATH=0) sends every document through JSON.parse and the object
 * normalizer instead of the byte-scanning fast path (src/normalize/fast.ts). The tables must come out the
 * same, and the debug log's count of documents the fast path read shows that the switch reached the
 * worker threads that read them: some without it, none with it.
 */
describe('cli: the fast path can be turned off', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let inputs: string;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
    inputs = path.join(dir, 'inputs');
    await writeOrderFiles(inputs, 600, 2);
    // Documents of other kinds, and orders of both API versions, which the fast path leaves or takes.
    for (const name of ['order-2023.json', 'order-2024.json', 'others.ndjson'])
      await copyFile(path.join(FIXTURES, name), path.join(inputs, name));
  });
  after(() => cleanup());

  /** Ingests the inputs into a new warehouse; returns it and the documents the fast path read. */
  async function ingest(name: string, args: string[], env: Record<string, string> = {}) {
    const file = path.join(dir, `${name}.duckdb`);
    const result = await runCli(
      [
        'ingest',
        '--json',
        inputs,
        '--warehouse',
        file,
        '--workers',
        '1',
        '--verbose',
        '--log-format',
        'json',
        ...args,
      ],
      { env, withToken: false },
    );
    assertExit(result, 0);
    const counted = jsonLines(result.stderr).find((line) => line.event === 'ingest_fast_path');
    assert.ok(counted, 'the debug log counts the documents the fast path read');
    const fastPath = Number(counted.documents);
    return { file, fastPath, summary: JSON.parse(result.stdout) as { documents: number } };
  }

  /** Every data table and the rejections, without what differs between runs. */
  async function contents(file: string) {
    const warehouse = await openWarehouse(file, { readOnly: true });
    try {
      return {
        tables: await snapshot(warehouse.connection, ['_synced_at', '_run_id']),
        rejected: await tableRows(warehouse.connection, '_rejected_records'),
      };
    } finally {
      await warehouse.close();
    }
  }

  it('the same input ingested with and without it gives the same tables; without it, the fast path reads none', async () => {
    const fast = await ingest('fast', []);
    const slow = await ingest('slow', ['--no-fast-path']);
    const variable = await ingest('variable', [], { STORE_SYNC_FAST_PATH: '0' });
    assert.ok(fast.fastPath >= 600, `the fast path read the generated orders (${fast.fastPath})`);
    assert.equal(slow.fastPath, 0, '--no-fast-path');
    assert.equal(variable.fastPath, 0, 'STORE_SYNC_FAST_PATH=0');
    assert.equal(slow.summary.documents, fast.summary.documents);
    const expected = await contents(fast.file);
    assert.ok(expected.tables.order_lines!.length > 600, 'the orders have lines');
    assert.deepEqual(await contents(slow.file), expected);
    assert.deepEqual(await contents(variable.file), expected);
    // The flag wins over the environment.
    const flagged = await ingest('flagged', ['--fast-path'], { STORE_SYNC_FAST_PATH: '0' });
    assert.equal(flagged.fastPath, fast.fastPath);
  });

  it('rebuild --no-fast-path re-derives the same tables without the fast path', async () => {
    const { file } = await ingest('rebuilt', []);
    const before = await contents(file);
    const rebuild = async (args: string[]) => {
      const result = await runCli(
        ['rebuild', '--warehouse', file, '--workers', '1', '--verbose', '--log-format', 'json', ...args],
        { withToken: false },
      );
      assertExit(result, 0);
      const committing = jsonLines(result.stderr).find((line) => line.event === 'rebuild_committing');
      return Number(committing?.fast_path);
    };
    assert.ok((await rebuild([])) >= 600, 'a rebuild replays documents through the fast path');
    assert.equal(await rebuild(['--no-fast-path']), 0);
    assert.deepEqual(await contents(file), before);
  });

  it("sync --no-fast-path drains a receiver's spool without the fast path, to the same orders", async () => {
    const sandbox = await testSandbox();
    // The same documents in both spools (the generator moves on with every call). An envelope that carries
    // anything beside its version and data is read by the object path, which keeps it in the `_event_*` and
    // `_envelope` columns: the fast path reads `{api_version, data}`, as these are.
    const events = `${[1, 2, 3, 4, 5]
      .map((n) => {
        const { api_version, data } = orderEvent(n);
        return JSON.stringify({ api_version, data });
      })
      .join('\n')}\n`;
    try {
      const drained = async (name: string, args: string[]) => {
        const spoolDir = path.join(dir, `${name}-spool`);
        await mkdir(spoolDir, { recursive: true });
        await writeFile(path.join(spoolDir, spoolFileName(Date.UTC(2024, 0, 1))), events);
        const file = path.join(dir, `${name}.duckdb`);
        const config = await writeConfig(
          dir,
          {
            warehouse: file,
            stores: [
              {
                name: 'main',
                baseUrl: sandbox.baseUrl,
                receiver: { secretEnv: 'FAST_PATH_TEST_SECRET', spoolDir },
              },
            ],
          },
          `${name}.config.json`,
        );
        const result = await runCli(
          [
            'sync',
            '--config',
            config,
            '--streams',
            'locations',
            '--verbose',
            '--log-format',
            'json',
            ...args,
          ],
          { env: { FAST_PATH_TEST_SECRET: 'whsec-fast-path-test' } },
        );
        assertExit(result, 0);
        const counted = jsonLines(result.stderr).find((line) => line.event === 'ingest_fast_path');
        const warehouse = await openWarehouse(file, { readOnly: true });
        try {
          const orders = await tableRows(warehouse.connection, 'orders', {
            exclude: ['_synced_at', '_run_id'],
          });
          const lines = await tableRows(warehouse.connection, 'order_lines');
          return { fastPath: Number(counted?.documents), orders, lines };
        } finally {
          await warehouse.close();
        }
      };
      const fast = await drained('sync-fast', []);
      const slow = await drained('sync-slow', ['--no-fast-path']);
      assert.equal(fast.fastPath, 5, 'the spool drain reads order envelopes by the fast path');
      assert.equal(slow.fastPath, 0);
      assert.equal(slow.orders.length, 5);
      assert.deepEqual(slow.orders, fast.orders);
      assert.deepEqual(slow.lines, fast.lines);
    } finally {
      await sandbox.close();
    }
  });

  it('refuses a STORE_SYNC_FAST_PATH other than 0 or 1, naming it', async () => {
    const result = await runCli(['ingest', inputs, '--warehouse', path.join(dir, 'refused.duckdb')], {
      env: { STORE_SYNC_FAST_PATH: 'off' },
      withToken: false,
    });
    assertCleanError(result, 2, /STORE_SYNC_FAST_PATH="off": expected 0 \(fast path off\) or 1 \(on\)/);
  });

  it('--help says what the switch does', async () => {
    for (const command of ['ingest', 'rebuild', 'sync']) {
      const help = await runCli([command, '--help'], { withToken: false });
      assertExit(help, 0);
      assert.match(
        help.stdout.replace(/\s+/g, ' '),
        /--fast-path Read documents with the byte-scanning fast path/,
      );
      assert.match(help.stdout.replace(/\s+/g, ' '), /--no-fast-path parses every document with JSON\.parse/);
    }
  });
});
