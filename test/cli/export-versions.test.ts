import assert from 'node:assert/strict';
import {
  cp,
  lstat,
  mkdir,
  readdir,
  readFile,
  readlink,
  realpath,
  rm,
  stat,
  symlink,
  writeFile,
} from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { asyncBufferFromFile, parquetReadObjects } from 'hyparquet';
import { writeOrderFiles } from '../../bench/warehouse-data.js';
import { exportableTables, LOCK_FILE } from '../../pipelines/export.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  folderFingerprint,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  startCli,
  tempDir,
} from './helpers.js';

/**
 * The export's layout as readers glob it. `<dir>` is a link to one complete export kept in `<dir>.versions/`
 * beside it, and everything under `<dir>` is plain folders and files: `read_parquet('<dir>/**\/*.parquet')`
 * and `read_parquet('<dir>/<table>/**\/*.parquet')` read the current export's rows exactly once. The earlier
 * layout kept every table's versions in `<dir>/.versions/`, which DuckDB's `**` reads (it goes into hidden
 * folders, though not into linked ones): after a second export it reads each row twice.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents');
const TABLES = exportableTables().map((t) => t.name);

let db: DuckDBInstance;
let connection: DuckDBConnection;

async function rows<T = Record<string, unknown>>(sql: string): Promise<T[]> {
  const reader = await connection.runAndReadAll(sql);
  return reader.getRowObjectsJS() as T[];
}

/** DuckDB's own listing of a glob (the files `read_parquet` of it reads). */
async function globbed(pattern: string): Promise<string[]> {
  return (await rows<{ file: string }>(`SELECT file FROM glob('${pattern}') ORDER BY file`)).map(
    (r) => r.file,
  );
}

/** Rows per table, read by DuckDB through one glob over the whole export folder. */
async function countsThroughGlob(dir: string): Promise<Record<string, number>> {
  const found = await rows<{ t: string; n: bigint }>(
    `SELECT regexp_extract(filename, '^${dir}/([^/]+)/', 1) AS t, count(*) AS n ` +
      `FROM read_parquet('${dir}/**/*.parquet', filename = true, union_by_name = true) GROUP BY t`,
  );
  return Object.fromEntries(found.map((r) => [r.t, Number(r.n)]));
}

/** All rows under the folder, read by DuckDB through one glob. */
async function totalThroughGlob(dir: string): Promise<number> {
  const [{ n }] = (await rows<{ n: bigint }>(
    `SELECT count(*) AS n FROM read_parquet('${dir}/**/*.parquet', union_by_name = true)`,
  )) as [{ n: bigint }];
  return Number(n);
}

/** Rows per table, read with hyparquet (no DuckDB) from the files the glob lists. */
async function countsWithHyparquet(dir: string): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const file of await globbed(`${dir}/**/*.parquet`)) {
    const table = path.relative(dir, file).split(path.sep)[0]!;
    const read = await parquetReadObjects({ file: await asyncBufferFromFile(file) });
    counts[table] = (counts[table] ?? 0) + read.length;
  }
  return counts;
}

describe('store-sync export: what a glob over the export folder reads', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouse: string;
  /** Every exported table's row count in the warehouse (tables with no rows included). */
  let expected: Record<string, number>;
  const total = () => Object.values(expected).reduce((a, b) => a + b, 0);
  const nonEmpty = () => Object.fromEntries(Object.entries(expected).filter(([, n]) => n > 0));
  const exportTo = (out: string, ...more: string[]) =>
    runCli(['export', '--warehouse', warehouse, '--out', out, ...more], { withToken: false });

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    warehouse = path.join(dir, 'warehouse.duckdb');
    // Orders over many months (many partitions), and the fixtures' other documents for the other tables.
    await writeOrderFiles(path.join(dir, 'documents'), 600, 2);
    assertExit(
      await runCli(
        [
          'ingest',
          path.join(dir, 'documents'),
          ...['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) => path.join(FIXTURES, f)),
          '--warehouse',
          warehouse,
        ],
        {
          withToken: false,
        },
      ),
      0,
    );
    expected = {};
    for (const table of TABLES) {
      const [{ n }] = (await readWarehouse<{ n: number | bigint }>(
        warehouse,
        `SELECT count(*) AS n FROM "${table}"`,
      )) as [{ n: number | bigint }];
      expected[table] = Number(n);
    }
    assert.ok(expected.orders! > 500 && expected.order_lines! > 500 && expected.customers! > 0);
    db = await DuckDBInstance.create(':memory:');
    connection = await db.connect();
  });

  after(async () => {
    connection?.closeSync();
    db?.closeSync();
    killChildren();
    assertNoSecretsOrEscapes();
    await cleanup();
  });

  it('after two exports, <dir>/**/*.parquet and <dir>/<table>/**/*.parquet read every row exactly once', async () => {
    const out = path.join(dir, 'parquet');
    assertExit(await exportTo(out), 0);
    assertExit(await exportTo(out), 0);

    // Only the current export's files, each under its table's folder: nothing hidden, nothing older.
    const files = await globbed(`${out}/**`);
    assert.ok(files.length > 100, `${files.length} files`);
    for (const file of files) {
      const [table, ...rest] = path.relative(out, file).split(path.sep);
      assert.ok(TABLES.includes(table!), `${file} is in a table's folder`);
      assert.match(rest.at(-1)!, /\.parquet$/, file);
      assert.ok(!rest.some((part) => part.startsWith('.')), `${file} is in no hidden folder`);
    }

    // DuckDB, one glob over the folder (empty tables have one empty file each, so they count 0 rows here).
    assert.deepEqual(await countsThroughGlob(out), nonEmpty());
    // DuckDB, one glob per table, as docs/querying.md shows it.
    for (const table of TABLES) {
      const [{ n }] = (await rows<{ n: bigint }>(
        `SELECT count(*) AS n FROM read_parquet('${out}/${table}/**/*.parquet', hive_partitioning = true)`,
      )) as [{ n: bigint }];
      assert.equal(Number(n), expected[table], `rows of ${table}`);
    }
    // Another reader, of the same files: every table, the empty ones included (each has one file of no rows).
    assert.deepEqual(await countsWithHyparquet(out), expected);

    // The versions are beside the folder, outside any glob of it: the current one and the one before.
    const versions = `${out}.versions`;
    assert.ok((await lstat(out)).isSymbolicLink(), `${out} is the link to the current export`);
    const current = await readlink(out);
    assert.match(current, /^parquet\.versions\/\d+-\d+$/);
    const kept = (await readdir(versions)).sort();
    assert.equal(kept.length, 3, kept.join(', '));
    assert.ok(kept.includes(LOCK_FILE) && kept.includes(path.basename(current)));
    // The orders' month folders, with the current export's stamp in their files' names.
    const months = await readdir(path.join(out, 'orders'));
    assert.ok(months.length > 12 && months.every((m) => /^month=/.test(m)), months.join(', '));
  });

  it('readers globbing the folder while exports replace it always read the whole of one export', async () => {
    const out = path.join(dir, 'busy');
    assertExit(await exportTo(out), 0);
    let done = false;
    const seen: number[] = [];
    const failures: string[] = [];
    const reader = (async () => {
      while (!done) {
        try {
          seen.push(await totalThroughGlob(out));
        } catch (error) {
          failures.push((error as Error).message);
        }
      }
    })();
    for (let i = 0; i < 3; i++) assertExit(await exportTo(out), 0);
    done = true;
    await reader;
    assert.ok(seen.length >= 5, `${seen.length} reads`);
    assert.deepEqual([...new Set(seen)], [total()], 'every read saw every row once');
    // A reader that listed the files of a version two exports old may find them gone; never anything else.
    for (const failure of failures) assert.match(failure, /No such file|Cannot open file|No files found/i);
  });

  it("moves an earlier export's layout (a link per table into <dir>/.versions/) out of the folder, keeping what else is there", async () => {
    // The layout the previous store-sync wrote, after two exports: two versions of every table inside the
    // folder, the table names linking to the current ones, the lock, a link a killed export left, a user's file.
    const source = path.join(dir, 'source');
    assertExit(await exportTo(source), 0);
    const earlier = path.join(dir, 'earlier');
    await mkdir(path.join(earlier, '.versions'), { recursive: true });
    for (const table of TABLES) {
      const from = await realpath(path.join(source, table));
      await cp(from, path.join(earlier, '.versions', `${table}-1000-1`), { recursive: true });
      await cp(from, path.join(earlier, '.versions', `${table}-2000-1`), { recursive: true });
      await symlink(path.join('.versions', `${table}-2000-1`), path.join(earlier, table));
    }
    await symlink(path.join('.versions', 'orders-2000-1'), path.join(earlier, 'orders.link-4242'));
    const lock = await DuckDBInstance.create(path.join(earlier, '.versions', LOCK_FILE));
    lock.closeSync();
    await writeFile(path.join(earlier, 'README.md'), 'our notes on this folder\n');
    // What a glob read from it: every row twice.
    assert.equal(await totalThroughGlob(earlier), 2 * total(), 'the earlier layout reads everything twice');

    // One table exported: the others come along from the earlier layout, which leaves the folder.
    const exported = await exportTo(earlier, '--tables', 'orders');
    assertExit(exported, 0);
    assert.match(exported.stdout, /exported 1 tables to /);
    assert.ok((await lstat(earlier)).isSymbolicLink());
    assert.equal(await readFile(path.join(earlier, 'README.md'), 'utf8'), 'our notes on this folder\n');
    assert.deepEqual(
      (await readdir(earlier)).filter((name) => !TABLES.includes(name)),
      ['README.md'],
      'no .versions, no leftover link',
    );
    assert.deepEqual(await countsThroughGlob(earlier), nonEmpty());
    assert.deepEqual(await countsWithHyparquet(earlier), expected);
    const moved = (await readdir(`${earlier}.versions`)).filter((e) => e.startsWith('layout-'));
    assert.equal(moved.length, 1, 'the earlier layout is kept once, for readers that listed it');

    // The next export removes it; the user's file stays.
    assertExit(await exportTo(earlier), 0);
    assert.deepEqual(
      (await readdir(`${earlier}.versions`)).filter((e) => e.startsWith('layout-')),
      [],
      'removed at the next export',
    );
    assert.equal(await readFile(path.join(earlier, 'README.md'), 'utf8'), 'our notes on this folder\n');
    assert.deepEqual(await countsThroughGlob(earlier), nonEmpty());
  });

  it("refuses a folder where something of the user's has a table's name, changing nothing; follows a user's link", async () => {
    const mine = path.join(dir, 'mine');
    await mkdir(path.join(mine, 'customers'), { recursive: true });
    await writeFile(path.join(mine, 'customers', 'notes.txt'), 'mine');
    const before = await folderFingerprint(mine);
    assertCleanError(
      await exportTo(mine),
      2,
      /cannot export customers: \S+mine\/customers exists and was not written by store-sync export \(a folder\); move it away or choose another --out or parquetDir\. Nothing was exported/,
    );
    // Even when another table is exported: once in an export, the folder would be export's to replace.
    assertCleanError(
      await exportTo(mine, '--tables', 'orders'),
      2,
      /cannot export to \S+mine: \S+mine\/customers has the name of the table customers but was not written by store-sync export \(a folder\)/,
    );
    assert.deepEqual(await folderFingerprint(mine), before);
    assert.deepEqual(await readdir(`${mine}.versions`), [LOCK_FILE], 'nothing written');

    // `<dir>` a link of the user's to a folder elsewhere: export works there, and the link reads it.
    const elsewhere = path.join(dir, 'big-disk');
    await mkdir(elsewhere);
    await symlink(path.join(elsewhere, 'parquet'), path.join(dir, 'linked'));
    const result = await exportTo(path.join(dir, 'linked'));
    assertExit(result, 0);
    assert.ok((await stat(path.join(elsewhere, 'parquet.versions'))).isDirectory());
    assert.equal(
      await readlink(path.join(dir, 'linked')),
      path.join(elsewhere, 'parquet'),
      'the link is kept',
    );
    assert.deepEqual(await countsThroughGlob(path.join(dir, 'linked')), nonEmpty());
  });

  it('a killed export leaves the current export whole, and the next one clears what it left or finishes its move', async () => {
    const out = path.join(dir, 'killed');
    assertExit(await exportTo(out), 0);
    const current = await readlink(out);
    const run = startCli(['export', '--warehouse', warehouse, '--out', out], { withToken: false });
    // Killed once its new version has files in it.
    const versions = `${out}.versions`;
    for (let waited = 0; ; waited += 5) {
      const entries = (await readdir(versions)).filter(
        (e) => /^\d+-\d+$/.test(e) && e !== path.basename(current),
      );
      if (entries.length && (await readdir(path.join(versions, entries[0]!))).length) break;
      assert.ok(waited < 60_000, 'the export never began writing');
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    run.child.kill('SIGKILL');
    await run.done;
    assert.equal(await readlink(out), current, 'still the complete export');
    assert.deepEqual(await countsThroughGlob(out), nonEmpty());
    assertExit(await exportTo(out), 0);
    assert.deepEqual(await countsThroughGlob(out), nonEmpty());
    const left = (await readdir(versions)).filter((e) => e !== LOCK_FILE).sort();
    assert.equal(left.length, 2, `the new export and the one before: ${left.join(', ')}`);

    // Killed between the two renames that put an export over an earlier layout: the folder is gone, moved
    // into the versions, the link not yet in its place. The next export finishes the move: it carries the
    // tables it does not export from the complete version the link was to point at.
    const latest = path.basename(await readlink(out));
    await rm(out);
    await mkdir(path.join(versions, `layout-${latest}`));
    assertExit(await exportTo(out, '--tables', 'orders'), 0);
    assert.deepEqual(await countsThroughGlob(out), nonEmpty());
    assert.deepEqual(
      (await readdir(versions)).filter((e) => e.startsWith('layout-')),
      [],
      'the moved folder is removed',
    );
  });
});
