import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFile, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { commandEnv, commandNodeFlags } from '../../bench/warehouse-lib.js';
import { openWarehouse } from '../../src/load/index.js';
import { INGEST_WAREHOUSE_BLOCK_BYTES, NEW_WAREHOUSE_BLOCK_BYTES } from '../../src/load/open.js';
import { MALLOC_ENV, NODE_FLAGS, RUNTIME_PROFILES, SHEBANG } from '../../src/load/runtime-profile.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { currentSetting, orderDoc, tempDir } from '../warehouse/helpers.js';
import { assertExit, BIN, readWarehouse, runCli } from './helpers.js';

/**
 * The runtime profiles (src/load/runtime-profile.ts): Node's flags are declared once and reach the command's
 * `#!` line and the benchmarks; a profile's DuckDB settings hold while its work runs and are set back after,
 * also when the work fails.
 */
describe('runtime profiles', () => {
  it("bin/store-sync.js's #! line holds MALLOC_ENV and NODE_FLAGS, which the benchmarks start their steps with", async () => {
    const bin = await readFile(BIN, 'utf8');
    assert.equal(bin.slice(0, bin.indexOf('\n')), SHEBANG);
    assert.ok(SHEBANG.startsWith('#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node '));
    assert.ok(SHEBANG.endsWith(` node ${NODE_FLAGS.join(' ')}`));
    assert.deepEqual(commandNodeFlags(), NODE_FLAGS);
    // The harness children get the allocator settings beside the environment they were started with.
    assert.equal(commandEnv().MALLOC_ARENA_MAX, '2');
    assert.equal(commandEnv().MALLOC_MMAP_THRESHOLD_, '131072');
    assert.equal(commandEnv().PATH, process.env.PATH);
  });

  it('the command runs with MALLOC_ENV set, through its #! line', async () => {
    // The sandbox serves until stopped: its environment is read from /proc while it runs (env execs node in
    // its own process, so the pid is node's).
    const child = spawn(BIN, ['sandbox', '--port', '0'], { stdio: ['ignore', 'pipe', 'inherit'] });
    try {
      await once(child.stdout!, 'data');
      const environ = (await readFile(`/proc/${child.pid}/environ`, 'latin1')).split('\0');
      for (const [name, value] of Object.entries(MALLOC_ENV))
        assert.ok(environ.includes(`${name}=${value}`), name);
    } finally {
      child.kill();
      await once(child, 'exit');
    }
  });

  it("bulk-copy gives a writer DuckDB's default memory, and its own limit back after, also after a failure", async () => {
    const { dir, cleanup } = await tempDir();
    const warehouse = await openWarehouse(path.join(dir, 'w.duckdb'));
    const memory = () => currentSetting(warehouse.connection, 'memory_limit');
    try {
      const during = await warehouse.withProfile(RUNTIME_PROFILES.bulkCopy, silentLogger, memory);
      assert.notEqual(during, '244.1 MiB');
      assert.equal(await memory(), '244.1 MiB');
      await assert.rejects(
        warehouse.withProfile(RUNTIME_PROFILES.bulkCopy, silentLogger, async () => {
          throw new Error('the copy failed');
        }),
        /the copy failed/,
      );
      assert.equal(await memory(), '244.1 MiB');
      // A sync runs under SYNC_MEMORY_LIMIT (200MB, shown rounded), and the writer's comes back after.
      assert.equal(await warehouse.withProfile(RUNTIME_PROFILES.sync, silentLogger, memory), '190.7 MiB');
      assert.equal(await memory(), '244.1 MiB');
    } finally {
      await warehouse.close();
      await cleanup();
    }
  });

  it('a sync leaves its main thread a core: DuckDB runs on the others while it runs, and on its own after, also after a failure', async () => {
    const { dir, cleanup } = await tempDir();
    // Opened with a thread a core, DuckDB's default: on any machine of 2 cores or more the sync takes one away.
    const cores = os.availableParallelism();
    const warehouse = await openWarehouse(path.join(dir, 'w.duckdb'), { threads: cores });
    const threads = async () => Number(await currentSetting(warehouse.connection, 'threads'));
    try {
      assert.equal(
        await warehouse.withProfile(RUNTIME_PROFILES.sync, silentLogger, threads),
        Math.max(1, cores - 1),
      );
      assert.equal(await threads(), cores);
      await assert.rejects(
        warehouse.withProfile(RUNTIME_PROFILES.sync, silentLogger, async () => {
          throw new Error('the stream failed');
        }),
        /the stream failed/,
      );
      assert.equal(await threads(), cores);
    } finally {
      await warehouse.close();
      await cleanup();
    }
  });

  it('a writer opened with a memory limit of its own keeps it through a sync', async () => {
    const { dir, cleanup } = await tempDir();
    const warehouse = await openWarehouse(path.join(dir, 'w.duckdb'), { memoryLimit: '300MB' });
    const memory = () => currentSetting(warehouse.connection, 'memory_limit');
    try {
      const opened = await memory();
      assert.equal(await warehouse.withProfile(RUNTIME_PROFILES.sync, silentLogger, memory), opened);
      assert.equal(await memory(), opened);
    } finally {
      await warehouse.close();
      await cleanup();
    }
  });

  it('ingest beside workers: less memory and threads for DuckDB, a re-attach after each commit; none of it after', async () => {
    const { dir, cleanup } = await tempDir();
    const file = path.join(dir, 'w.duckdb');
    const warehouse = await openWarehouse(file, { threads: 4 });
    const entries: Record<string, unknown>[] = [];
    const logger = createLogger({
      level: 'debug',
      format: 'json',
      write: (line) => entries.push(JSON.parse(line) as Record<string, unknown>),
    });
    const logged = (event: string, field: string) =>
      entries.filter((e) => e.event === event).map((e) => e[field]);
    const reattached = () => logged('warehouse_reattached', 'path');
    const settings = async () => [
      await currentSetting(warehouse.connection, 'memory_limit'),
      Number(await currentSetting(warehouse.connection, 'threads')),
    ];
    try {
      const during = await warehouse.withProfile(RUNTIME_PROFILES.ingest, logger, async (runtime) => {
        await warehouse.afterCommit(logger);
        assert.deepEqual(reattached(), [], 'no re-attach before the workers start');
        await runtime.useWorkers(64);
        await warehouse.afterCommit(logger);
        return settings();
      });
      assert.deepEqual(during, ['152.5 MiB', 1]);
      assert.deepEqual(reattached(), [file]);
      assert.deepEqual(
        logged('v8_heap_growing_percent', 'percent'),
        [0],
        "V8's own growth while the workers run",
      );
      assert.deepEqual(await settings(), ['244.1 MiB', 4]);
      await warehouse.afterCommit(logger);
      assert.deepEqual(reattached(), [file], 'no re-attach outside the profile');
      // Rebuild shares the cores and keeps the writer's memory and V8's growth; it never re-attaches.
      const rebuilding = await warehouse.withProfile(RUNTIME_PROFILES.rebuild, logger, async (runtime) => {
        await runtime.useWorkers(64);
        await warehouse.afterCommit(logger);
        return settings();
      });
      assert.deepEqual(rebuilding, ['244.1 MiB', 1]);
      assert.deepEqual(reattached(), [file]);
      assert.deepEqual(logged('v8_heap_growing_percent', 'percent'), [0]);
      assert.deepEqual(await settings(), ['244.1 MiB', 4]);
    } finally {
      await warehouse.close();
      await cleanup();
    }
  });

  it('a warehouse ingest creates has 64 KB blocks; one another command created keeps its own through an ingest', async () => {
    const { dir, cleanup } = await tempDir();
    const orders = path.join(dir, 'orders.ndjson');
    await writeFile(orders, `${[1, 2, 3].map((n) => JSON.stringify(orderDoc(n))).join('\n')}\n`);
    const blockSize = async (file: string) => {
      const [row] = await readWarehouse<{ block_size: bigint }>(
        file,
        'SELECT block_size FROM pragma_database_size() WHERE database_name = current_database()',
      );
      return Number(row!.block_size);
    };
    try {
      const fresh = path.join(dir, 'fresh.duckdb');
      assertExit(await runCli(['ingest', orders, '--warehouse', fresh]), 0);
      assert.equal(await blockSize(fresh), INGEST_WAREHOUSE_BLOCK_BYTES);
      assert.equal(INGEST_WAREHOUSE_BLOCK_BYTES, 64 * 1024);

      const made = path.join(dir, 'made.duckdb');
      await (await openWarehouse(made)).close();
      assertExit(await runCli(['ingest', orders, '--warehouse', made]), 0);
      assert.equal(await blockSize(made), NEW_WAREHOUSE_BLOCK_BYTES);
      const [loaded] = await readWarehouse<{ n: bigint }>(made, 'SELECT count(*) AS n FROM orders');
      assert.equal(Number(loaded!.n), 3);
    } finally {
      await cleanup();
    }
  });

  it("useHeapGrowingPercent changes V8's old-generation growth for the process and sets back the one it started with", async () => {
    // Full collections while a steady stream of objects is promoted and dies, beside 300,000 live ones: the
    // old generation is collected whenever it has doubled (--heap-growing-percent=100, as the command starts),
    // far less often under V8's own growth (0), and as often as at first once the setting is restored.
    const script = `
      import { PerformanceObserver, constants } from 'node:perf_hooks';
      import { useHeapGrowingPercent } from ${JSON.stringify(path.resolve('src/load/runtime-profile.ts'))};
      import { silentLogger } from ${JSON.stringify(path.resolve('src/log.ts'))};
      let majors = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) if (e.detail?.kind === constants.NODE_PERFORMANCE_GC_MAJOR) majors++;
      }).observe({ entryTypes: ['gc'] });
      const live = Array.from({ length: 300000 }, (_, i) => ({ i, s: 'x' + i }));
      const ring = new Array(200000);
      const phase = async () => {
        const before = majors;
        for (let n = 0; n < 6000000; n++) ring[n % ring.length] = { n, a: [n, n + 1] };
        await new Promise((resolve) => setTimeout(resolve, 50));
        return majors - before;
      };
      const started = await phase();
      const restore = useHeapGrowingPercent(0, silentLogger);
      const own = await phase();
      await restore();
      const restored = await phase();
      console.log(JSON.stringify({ started, own, restored, live: live.length }));
    `;
    const child = spawn(
      process.execPath,
      ['--heap-growing-percent=100', '--import', 'tsx', '--input-type=module', '-e', script],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    );
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    const { started, own, restored } = JSON.parse(out) as Record<string, number>;
    assert.ok(own < started, `fewer full collections under V8's own growth: ${own} against ${started}`);
    assert.ok(restored > own, `as many again once restored: ${restored} against ${own}`);
  });
});
