import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, readFile, readlink, stat, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { asyncBufferFromFile, parquetMetadataAsync, parquetReadObjects, parquetSchema } from 'hyparquet';
import { exportParquet } from '../../pipelines/export.js';
import { ingestPaths } from '../../pipelines/ingest.js';
import { ERROR_CODES } from '../../src/errors.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, FIXTURES, tempWarehouse } from './helpers.js';

const EXPORT_CHILD = new URL('./children/export-child.ts', import.meta.url).pathname;

/** Parquet export read back with an independent reader (hyparquet): row counts, decimals, timestamps. */

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

  it('replaces a table atomically: the name points at a complete version, the previous one is kept once', async () => {
    const link = path.join(out, 'orders');
    const first = await readlink(link);
    await exportParquet(warehouse, out, { tables: ['orders'] });
    const second = await readlink(link);
    assert.notEqual(second, first);
    assert.ok(
      (await stat(path.join(out, first))).isDirectory(),
      'the previous version stays for readers that listed it',
    );
    await exportParquet(warehouse, out, { tables: ['orders'] });
    await assert.rejects(stat(path.join(out, first)), 'older versions are removed');
    assert.equal((await readTable(link)).length, 2);
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
    assert.deepEqual(await readdir(path.join(mine, '.versions')), []);
  });

  it('one export writes a folder at a time; a lock left by a dead process is taken over', async () => {
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
      new RegExp(`another store-sync export \\(pid ${process.pid}\\) is writing to`),
    );
    for (const table of ['orders', 'order_lines', 'customers'])
      assert.ok((await stat(path.join(shared, table))).isDirectory(), `${table} resolves to its version`);
    await assert.rejects(stat(path.join(shared, '.versions', 'lock')), 'released');

    // A killed export's lock names a process that is gone.
    await writeFile(path.join(shared, '.versions', 'lock'), '2147483646\n');
    await exportParquet(warehouse, shared, { tables: ['customers'] });
    await assert.rejects(stat(path.join(shared, '.versions', 'lock')));

    // Or this process's own pid, after a restart (pid 1 in a container again), with none of its tokens.
    await writeFile(path.join(shared, '.versions', 'lock'), `${process.pid} from-an-earlier-process\n`);
    await exportParquet(warehouse, shared, { tables: ['customers'] });

    // Several exports finding the same dead lock: one takes it over, the others stop (removing the dead
    // lock and creating one each let two of them write, and one's link dangled after the other pruned).
    for (let round = 0; round < 5; round++) {
      await writeFile(path.join(shared, '.versions', 'lock'), '2147483646\n');
      const racing = await Promise.allSettled(
        Array.from({ length: 6 }, () => exportParquet(warehouse, shared, { tables: ['orders'] })),
      );
      assert.equal(racing.filter((r) => r.status === 'fulfilled').length, 1, `round ${round}`);
      assert.ok((await stat(path.join(shared, 'orders'))).isDirectory(), 'the link resolves');
    }
  });

  it('two processes finding the same dead lock: one takes it over and writes, the other stops', async () => {
    // Each removed the dead lock and created its own, so both wrote, and one's link dangled after the other pruned.
    const fresh = await tempWarehouse();
    try {
      await ingestPaths(fresh.warehouse, [path.join(FIXTURES, 'order-2024.json')], {
        store: 'shop',
        runId: 'race',
        logger: silentLogger,
      });
      await fresh.warehouse.close();
      const out = path.join(fresh.dir, 'race');
      await mkdir(path.join(out, '.versions'), { recursive: true });
      // Two children that start their exports together, each once the other is ready.
      const race = async (go: string) => {
        const children = [0, 1].map(() => {
          const child = spawn(process.execPath, ['--import', 'tsx', EXPORT_CHILD, fresh.file, out, go]);
          let stdout = '';
          const ready = new Promise<void>((resolve) =>
            child.stdout.on('data', (d: Buffer) => {
              stdout += d.toString();
              if (stdout.includes('ready')) resolve();
            }),
          );
          const done = once(child, 'exit').then(() => ({ outcome: stdout.split('\n')[1]!.trim() }));
          return { ready, done };
        });
        await Promise.all(children.map((c) => c.ready));
        await writeFile(go, '');
        return Promise.all(children.map((c) => c.done));
      };
      // On a busy machine one child may see the signal late and reach the lock only after the other has
      // released it: both then succeed, one after the other, which is right (the times around the calls cannot
      // tell, as each export does work before taking the lock). Such rounds are judged by what they leave: the
      // link resolves and the lock is released. Rounds where both met at the lock must have one winner.
      let contested = 0;
      for (let round = 0; round < 12 && contested < 4; round++) {
        await writeFile(path.join(out, '.versions', 'lock'), '2147483646\n');
        const [a, b] = await race(path.join(fresh.dir, `go-${round}`));
        const outcomes = [a!.outcome, b!.outcome].sort();
        if (outcomes[0] !== 'ok' || outcomes[1] !== 'ok') {
          assert.deepEqual(outcomes, [ERROR_CODES.EXPORT_LOCKED, 'ok'].sort(), `round ${round}`);
          contested++;
        }
        assert.ok((await stat(path.join(out, 'orders'))).isDirectory(), 'the link resolves');
        await assert.rejects(stat(path.join(out, '.versions', 'lock')), 'released');
      }
      assert.ok(contested >= 2, `only ${contested} of the rounds had both children at the lock together`);
    } finally {
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
});
