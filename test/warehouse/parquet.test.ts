import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { writeOrderFiles } from '../../bench/warehouse-data.js';
import { exportLockFile, exportParquet, LOCK_FILE, versionsFolder } from '../../pipelines/export.js';
import { ingestPaths } from '../../pipelines/ingest.js';
import { ERROR_CODES } from '../../src/errors.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { fileLocks } from '../../src/load/open.js';
import { silentLogger } from '../../src/log.js';
import { count, currentSetting, FIXTURES, tempDir, tempWarehouse } from './helpers.js';

const EXPORT_CHILD = new URL('./children/export-child.ts', import.meta.url).pathname;

/** Parquet export read back with an independent reader (hyparquet): row counts, decimals, timestamps. */

/** The pids holding a lock on `file`. */
const locksOn = async (file: string): Promise<number[]> => fileLocks(file).map((lock) => lock.pid);

async function parquetFiles(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...(await parquetFiles(full)));
    else if (entry.name.endsWith('.parquet')) out.push(full);
  }
  return out.sort();
}

async function readTable(dir: string): Promise<Record<string, unknown>[]> {
  const rows: Record<string, unknown>[] = [];
  for (const file of await parquetFiles(dir))
    rows.push(...(await parquetReadObjects({ file: await asyncBufferFromFile(file) })));
  return rows;
}

describe('parquet export', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let out: string;

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    out = path.join(dir, 'parquet');
    await ingestPaths(
      warehouse,
      [
        path.join(FIXTURES, 'order-2023.json'),
        path.join(FIXTURES, 'order-2024.json'),
        path.join(FIXTURES, 'others.ndjson'),
      ],
      {
        store: 'shop',
        runId: 'pq',
        logger: silentLogger,
      },
    );
  });
  after(() => cleanup());

  it('writes every table with the row count of the warehouse', async () => {
    const summary = await exportParquet(warehouse, out);
    assert.ok(summary.tables.length >= 45);
    for (const table of summary.tables) {
      const rows = await readTable(path.join(out, table.table));
      assert.equal(rows.length, await count(warehouse.connection, table.table), `rows of ${table.table}`);
      assert.equal(table.rows, rows.length);
    }
  });

  it('partitions orders and their children by month of date_placed', async () => {
    assert.deepEqual(await readdir(path.join(out, 'orders')), ['month=2023-11', 'month=2024-05']);
    assert.deepEqual(await readdir(path.join(out, 'order_lines')), ['month=2023-11', 'month=2024-05']);
    const lines2023 = await readTable(path.join(out, 'order_lines', 'month=2023-11'));
    assert.deepEqual(
      lines2023.map((l) => l.id),
      [21n],
    );
  });

  it('an empty partitioned table is one empty file with the columns, which a glob reader reads as no rows', async () => {
    const fresh = await tempWarehouse();
    try {
      const emptyOut = path.join(fresh.dir, 'parquet');
      const summary = await exportParquet(fresh.warehouse, emptyOut, { tables: ['orders', 'order_lines'] });
      assert.deepEqual(
        summary.tables.map((t) => [t.table, t.rows, t.partitioned]),
        [
          ['orders', 0, true],
          ['order_lines', 0, true],
        ],
      );
      for (const table of ['orders', 'order_lines']) {
        const files = await parquetFiles(path.join(emptyOut, table));
        assert.equal(files.length, 1);
        assert.match(path.basename(files[0]!), /^data-\d+-\d+-0\.parquet$/);
        const schema = parquetSchema(await parquetMetadataAsync(await asyncBufferFromFile(files[0]!)));
        const names = schema.children.map((c) => c.element.name);
        assert.ok(names.includes('_store') && names.includes('month'), names.join(', '));
        assert.deepEqual(await readTable(path.join(emptyOut, table)), []);
        // DuckDB's own hive reader, as docs/querying.md shows it, finds the table instead of no files.
        const glob = path.join(emptyOut, table, '**', '*.parquet');
        const reader = await fresh.warehouse.connection.runAndReadAll(
          `SELECT count(*) FROM read_parquet('${glob}', hive_partitioning = true)`,
        );
        assert.equal(Number(reader.getRows()[0]![0]), 0);
      }
    } finally {
      await fresh.cleanup();
    }
  });

  it('keeps decimals as DECIMAL and timestamps as UTC instants', async () => {
    const file = (await parquetFiles(path.join(out, 'orders', 'month=2024-05')))[0]!;
    const metadata = await parquetMetadataAsync(await asyncBufferFromFile(file));
    const schema = parquetSchema(metadata);
    const column = (name: string) => schema.children.find((c) => c.element.name === name)!.element;
    assert.equal(column('total_cost').converted_type, 'DECIMAL');
    assert.equal(column('total_cost').precision, 18);
    assert.equal(column('total_cost').scale, 3);
    assert.deepEqual(column('updated_at').logical_type, {
      type: 'TIMESTAMP',
      isAdjustedToUTC: true,
      unit: 'MICROS',
    });
    const [order] = await readTable(path.join(out, 'orders', 'month=2024-05'));
    assert.equal((order!.total_cost as number).toFixed(3), '121.000');
    assert.equal((order!.total_excl_tax as number).toFixed(3), '101.680');
    assert.equal((order!.updated_at as Date).toISOString(), '2024-05-03T08:30:00.250Z');
    const adjustments = await readTable(path.join(out, 'order_refund_adjustments'));
    assert.deepEqual(adjustments.map((a) => (a.amount_incl_tax as number).toFixed(3)).sort(), [
      '-0.600',
      '0.000',
    ]);
  });

  it('replaces the export atomically: the folder points at a complete version, the previous one is kept once', async () => {
    const parent = path.dirname(out);
    const first = await readlink(out);
    assert.match(first, /^parquet\.versions\/\d+-\d+$/);
    await exportParquet(warehouse, out, { tables: ['orders'] });
    const second = await readlink(out);
    assert.notEqual(second, first);
    assert.ok(
      (await stat(path.join(parent, first))).isDirectory(),
      'the previous version stays for readers that listed it',
    );
    // The tables not exported again come along unchanged: the same files, linked, not copied.
    const customers = (version: string) => stat(path.join(parent, version, 'customers', 'data.parquet'));
    assert.equal((await customers(second)).ino, (await customers(first)).ino);
    await exportParquet(warehouse, out, { tables: ['orders'] });
    await assert.rejects(stat(path.join(parent, first)), 'older versions are removed');
    assert.equal((await readTable(path.join(out, 'orders'))).length, 2);
    assert.equal(
      (await readTable(path.join(out, 'customers'))).length,
      await count(warehouse.connection, 'customers'),
    );
  });

  it('refuses unknown tables by name', async () => {
    await assert.rejects(exportParquet(warehouse, out, { tables: ['nope'] }), /unknown table\(s\) nope/);
  });

  it("never removes what it did not write: a folder, file or foreign link in a table's place is refused first", async () => {
    const mine = path.join(dir, 'mine');
    await mkdir(path.join(mine, 'customers'), { recursive: true });
    await writeFile(path.join(mine, 'customers', 'notes.txt'), 'my notes');
    await writeFile(path.join(mine, 'products'), 'keep');
    await symlink(path.join(mine, 'customers'), path.join(mine, 'carts'));
    for (const [table, what] of [
      ['customers', 'a folder'],
      ['products', 'a file'],
      ['carts', 'a link to'],
    ] as const) {
      await assert.rejects(
        exportParquet(warehouse, mine, { tables: ['orders', table] }),
        (error: Error & { code?: string }) =>
          error.code === ERROR_CODES.USAGE &&
          error.message.includes(what) &&
          /Nothing was exported/.test(error.message),
      );
    }
    assert.equal(await readFile(path.join(mine, 'customers', 'notes.txt'), 'utf8'), 'my notes');
    assert.equal(await readFile(path.join(mine, 'products'), 'utf8'), 'keep');
    assert.equal(await readlink(path.join(mine, 'carts')), path.join(mine, 'customers'));
    // Refused before anything was written: orders, listed first, was not exported either.
    await assert.rejects(stat(path.join(mine, 'orders')));
    assert.deepEqual(await readdir(versionsFolder(mine)), [LOCK_FILE], 'nothing but the export lock');
  });

  it('one export writes a folder at a time; the lock is free again once it ends, however it ended', async () => {
    const shared = path.join(dir, 'shared');
    const results = await Promise.allSettled([
      exportParquet(warehouse, shared, { tables: ['orders', 'order_lines', 'customers'] }),
      exportParquet(warehouse, shared, { tables: ['orders', 'order_lines', 'customers'] }),
    ]);
    // Either may take the lock first; exactly one writes.
    assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
    const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
    const refusal = refused.reason as Error & { code?: string };
    assert.equal(refusal.code, ERROR_CODES.EXPORT_LOCKED);
    assert.match(
      refusal.message,
      new RegExp(
        `another store-sync export \\(pid ${process.pid}, this process\\) is writing to .*Nothing was exported`,
      ),
    );
    for (const table of ['orders', 'order_lines', 'customers'])
      assert.ok((await stat(path.join(shared, table))).isDirectory(), `${table} resolves to its version`);
    assert.deepEqual(await locksOn(exportLockFile(shared)), [], 'released');

    // A failed export releases it too: a table in the way stops the next export before it writes.
    await writeFile(path.join(shared, 'carts'), 'in the way');
    await assert.rejects(exportParquet(warehouse, shared, { tables: ['carts'] }), {
      code: ERROR_CODES.USAGE,
    });
    await exportParquet(warehouse, shared, { tables: ['customers'] });

    // Six at once from one process: one writes, the others stop, and the link resolves.
    const racing = await Promise.allSettled(
      Array.from({ length: 6 }, () => exportParquet(warehouse, shared, { tables: ['orders'] })),
    );
    assert.equal(racing.filter((r) => r.status === 'fulfilled').length, 1);
    assert.ok((await stat(path.join(shared, 'orders'))).isDirectory(), 'the link resolves');

    // A file that is not a DuckDB database where the lock belongs is named, and nothing is written.
    const other = path.join(dir, 'not-a-lock');
    await mkdir(versionsFolder(other), { recursive: true });
    await writeFile(exportLockFile(other), 'some notes');
    await assert.rejects(
      exportParquet(warehouse, other, { tables: ['orders'] }),
      (error: Error & { code?: string }) =>
        error.code === ERROR_CODES.USAGE &&
        error.message.includes(`cannot take the export lock ${exportLockFile(other)}`) &&
        /Nothing was exported/.test(error.message),
    );
    await assert.rejects(stat(path.join(other, 'orders')));
  });

  it("an export in another process holds the folder until it ends; a killed export's lock dies with it", async () => {
    // Not a pid file, taken over when its pid is gone: three exports meeting at one dead lock could let two
    // of them write, and a reused pid keeps a dead lock alive. The kernel's lock has neither flaw.
    const fresh = await tempWarehouse();
    const children: ReturnType<typeof spawn>[] = [];
    try {
      await ingestPaths(
        fresh.warehouse,
        [
          path.join(FIXTURES, 'order-2023.json'),
          path.join(FIXTURES, 'order-2024.json'),
          path.join(FIXTURES, 'others.ndjson'),
        ],
        { store: 'shop', runId: 'race', logger: silentLogger },
      );
      await fresh.warehouse.close();
      const out = path.join(fresh.dir, 'race');
      const lockFile = exportLockFile(out);
      const exporter = (go: string, tables: 'orders' | 'all' = 'orders') => {
        const child = spawn(process.execPath, ['--import', 'tsx', EXPORT_CHILD, fresh.file, out, go, tables]);
        children.push(child);
        let stdout = '';
        let stderr = '';
        child.stderr.on('data', (d: Buffer) => {
          stderr += d.toString();
        });
        const ready = new Promise<void>((resolve) =>
          child.stdout.on('data', (d: Buffer) => {
            stdout += d.toString();
            if (stdout.includes('ready')) resolve();
          }),
        );
        const done = once(child, 'exit').then(() => stdout.split('\n')[1]?.trim() ?? '');
        return { child, ready, done, stderr: () => stderr.trim() };
      };

      // An export of every table, frozen (SIGSTOP) while it holds the lock.
      const held = exporter(path.join(fresh.dir, 'go-held'), 'all');
      await held.ready;
      await writeFile(path.join(fresh.dir, 'go-held'), '');
      const pid = held.child.pid!;
      for (let waited = 0; !(await locksOn(lockFile)).includes(pid); waited += 2) {
        assert.ok(waited < 30_000, 'the exporting child never took the lock');
        await sleep(2);
      }
      held.child.kill('SIGSTOP');

      // Every other export stops at once, naming it: in other processes, and in this one.
      const blocked = [0, 1, 2].map(() => exporter(path.join(fresh.dir, 'go-blocked')));
      await Promise.all(blocked.map((c) => c.ready));
      await writeFile(path.join(fresh.dir, 'go-blocked'), '');
      assert.deepEqual(
        await Promise.all(blocked.map((c) => c.done)),
        Array(3).fill(ERROR_CODES.EXPORT_LOCKED),
      );
      const here = await openWarehouse(fresh.file, { readOnly: true });
      try {
        await assert.rejects(
          exportParquet(here, out, { tables: ['orders'] }),
          (error: Error & { code?: string }) =>
            error.code === ERROR_CODES.EXPORT_LOCKED && error.message.includes(`(pid ${pid})`),
        );

        // Killed while it holds the lock: the next export takes it at once, with nothing to clean up.
        held.child.kill('SIGKILL');
        await held.done;
        const racing = [0, 1, 2].map(() => exporter(path.join(fresh.dir, 'go-after')));
        await Promise.all(racing.map((c) => c.ready));
        await writeFile(path.join(fresh.dir, 'go-after'), '');
        const outcomes = await Promise.all(racing.map((c) => c.done));
        assert.ok(
          outcomes.includes('ok'),
          `one of them writes: ${outcomes.join(', ')}; their errors: ${racing.map((c) => c.stderr()).join(' | ')}`,
        );
        assert.deepEqual(
          outcomes.filter((o) => o !== 'ok'),
          outcomes.filter((o) => o === ERROR_CODES.EXPORT_LOCKED),
          'the others stop on the lock',
        );
        await exportParquet(here, out, { tables: ['orders', 'customers'] });
        assert.ok((await stat(path.join(out, 'orders'))).isDirectory(), 'the link resolves');
        assert.deepEqual(await locksOn(lockFile), [], 'released');
      } finally {
        await here.close();
      }
    } finally {
      for (const child of children)
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await fresh.cleanup();
    }
  });

  it('an export that dies while making its lock file leaves a lock the next export takes', async () => {
    // DuckDB locks a database it creates before it writes the header: an export killed in between left a lock
    // file no DuckDB could open, and every later export then failed on it ("not a valid DuckDB database file")
    // until someone removed it (a loaded CI run killed one there). The lock file now appears whole
    // (createLockFile in pipelines/export.ts). The exporting child fails at that very point, every time: once
    // it is ready, its file size limit is set to 0 (prlimit), so the first byte it writes to any file, a lock
    // database's header, fails (EFBIG; Node ignores SIGXFSZ), after the file was created, as a kill there would.
    const fresh = await tempWarehouse();
    let child: ReturnType<typeof spawn> | null = null;
    try {
      await ingestPaths(fresh.warehouse, [path.join(FIXTURES, 'order-2024.json')], {
        store: 'shop',
        runId: 'killed',
        logger: silentLogger,
      });
      await fresh.warehouse.close();
      const out = path.join(fresh.dir, 'killed');
      const lockFile = exportLockFile(out);
      const go = path.join(fresh.dir, 'go');
      const exporting = spawn(process.execPath, [
        '--import',
        'tsx',
        EXPORT_CHILD,
        fresh.file,
        out,
        go,
        'all',
      ]);
      child = exporting;
      let stdout = '';
      exporting.stdout.on('data', (d: Buffer) => {
        stdout += d.toString();
      });
      for (let waited = 0; !stdout.includes('ready'); waited += 5) {
        assert.ok(waited < 60_000, 'the exporting child never got ready');
        await sleep(5);
      }
      const limited = spawn('prlimit', ['--pid', String(exporting.pid), '--fsize=0']);
      assert.deepEqual(await once(limited, 'exit'), [0, null], 'prlimit set the limit');
      const exited = once(exporting, 'exit');
      await writeFile(go, '');
      const [code] = await exited;
      assert.equal(code, 0, 'the child reported its failure');
      assert.notEqual(stdout.split('\n')[1]?.trim(), 'ok', 'the child could not export');
      // What a child killed between making its lock database and removing it would leave (its pid is gone),
      // and one of a live process (this one), which is that process's own.
      const dead = `${lockFile}.${exporting.pid}.0f0e0d0c-0b0a-4009-8807-060504030201.tmp`;
      const live = `${lockFile}.${process.pid}.0f0e0d0c-0b0a-4009-8807-060504030201.tmp`;
      await writeFile(dead, 'half a database');
      await writeFile(live, 'half a database');

      const exportOnce = async () => {
        const reader = await openWarehouse(fresh.file, { readOnly: true });
        try {
          await exportParquet(reader, out, { tables: ['orders'] });
        } finally {
          await reader.close();
        }
      };
      await exportOnce();
      assert.ok((await stat(path.join(out, 'orders'))).isDirectory(), 'the next export wrote');
      // The lock file is kept from one export to the next (never replaced: another export may hold it), and
      // no database made on the way is left beside it but the live process's.
      const kept = (await stat(lockFile)).ino;
      await exportOnce();
      assert.equal((await stat(lockFile)).ino, kept, 'the lock file is the same file');
      assert.deepEqual(
        (await readdir(versionsFolder(out))).filter(
          (name) => name.startsWith(LOCK_FILE) && name !== LOCK_FILE,
        ),
        [path.basename(live)],
        "the dead child's creation is removed, the live process's kept",
      );
    } finally {
      if (child && child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await fresh.cleanup();
    }
  });

  it("stamps a partitioned table's file names, so a listing made before a swap cannot open the next version's files", async () => {
    const names = async () =>
      (await parquetFiles(path.join(out, 'orders'))).map((f) => path.relative(path.join(out, 'orders'), f));
    await exportParquet(warehouse, out, { tables: ['orders'] });
    const before = await names();
    await exportParquet(warehouse, out, { tables: ['orders'] });
    const after = await names();
    assert.equal(after.length, before.length);
    for (const name of before) assert.ok(!after.includes(name), `${name} is not a name in the new version`);
  });

  it("a writer exports with DuckDB's default memory, not its loading limit, and gets its own limit back", async () => {
    // A partitioned COPY keeps a Parquet row group in progress per month: 5,000 orders over many months
    // need more than 32 MB, as two million need more than 256 MB.
    const fresh = await tempDir();
    try {
      const file = path.join(fresh.dir, 'w.duckdb');
      await writeOrderFiles(path.join(fresh.dir, 'docs'), 5_000);
      const loader = await openWarehouse(file);
      await ingestPaths(loader, [path.join(fresh.dir, 'docs')], {
        store: 's',
        runId: 'r',
        logger: silentLogger,
      });
      await loader.close();
      const writer = await openWarehouse(file, { memoryLimit: '32MB' });
      try {
        const summary = await exportParquet(writer, path.join(fresh.dir, 'pq'), {
          tables: ['orders', 'order_lines'],
        });
        assert.equal(summary.tables.find((t) => t.table === 'orders')?.rows, 5_000);
        assert.equal((await readTable(path.join(fresh.dir, 'pq', 'orders'))).length, 5_000);
        assert.equal(
          await currentSetting(writer.connection, 'memory_limit'),
          '30.5 MiB',
          "the writer's limit is restored",
        );
      } finally {
        await writer.close();
      }
    } finally {
      await fresh.cleanup();
    }
  });
});
