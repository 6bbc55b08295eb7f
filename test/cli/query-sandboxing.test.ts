import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import { EXIT } from '../../src/cli/exit-codes.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  type CliResult,
  killChildren,
  REPO_ROOT,
  runCli,
  tempDir,
} from './helpers.js';

/**
 * Query writes nothing (docs/reliability.md, "Hardening"): `store-sync query` reads the warehouse and the
 * user's own files. `COPY … TO` the warehouse's own path, if let through, replaces it with a 7-byte CSV and
 * exits 0. Each refused statement exits 1 with a message that names what query cannot do and points to
 * `store-sync export`, and the whole folder (the warehouse, the user's files and the HOME the child runs
 * with, where DuckDB keeps extensions and secrets) is byte for byte what it was. A loopback server stands for
 * an extension repository and a remote file: it must see no request.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents');

/** Every file and folder under `root`, with each file's size and content hash. */
async function tree(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const entry of await readdir(root, { withFileTypes: true, recursive: true })) {
    const file = path.join(entry.parentPath, entry.name);
    const key = path.relative(root, file);
    if (entry.isDirectory()) out[key] = 'dir';
    else {
      const info = await stat(file);
      out[key] = `${info.size}:${info.mtimeMs}:${createHash('sha256')
        .update(await readFile(file))
        .digest('hex')}`;
    }
  }
  return out;
}

describe('store-sync query: reads, and writes nothing', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouse: string;
  let home: string;
  let files: string;
  let server: Server;
  let origin: string;
  const requests: string[] = [];
  /** Row counts of the tables the ingest filled, as query reports them. */
  let counts: Record<string, unknown>[];
  const COUNTS_SQL = `SELECT (SELECT count(*) FROM orders) AS orders, (SELECT count(*) FROM order_lines) AS lines,
    (SELECT count(*) FROM _ingested_files) AS files, (SELECT count(*) FROM _rejected_records) AS rejected`;

  const query = (sql: string, format = 'json'): Promise<CliResult> =>
    runCli(['query', sql, '--warehouse', warehouse, '--format', format], { cwd: dir, env: { HOME: home } });

  /** Runs SQL that must be refused: exit 1, the message, nothing on stdout, and not one file changed. */
  async function refused(sql: string, message: RegExp): Promise<CliResult> {
    const before = await tree(dir);
    const seen = requests.length;
    const result = await query(sql);
    assertCleanError(result, EXIT.FAILED, message);
    assert.match(
      result.stderr,
      /store-sync query only reads .*store-sync export writes the warehouse as Parquet/,
    );
    assert.equal(result.stdout, '', 'nothing on stdout');
    assert.deepEqual(await tree(dir), before, `the folder changed after: ${sql}`);
    assert.deepEqual(requests.slice(seen), [], `a request went out for: ${sql}`);
    return result;
  }

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    warehouse = path.join(dir, 'warehouse.duckdb');
    home = path.join(dir, 'home');
    files = path.join(dir, 'files');
    await mkdir(home);
    await mkdir(files);
    // The fixtures hold one record that is rejected on purpose: exit 3.
    assertExit(await runCli(['ingest', FIXTURES, '--warehouse', warehouse], { cwd: dir }), EXIT.PARTIAL);
    // The user's own files, to read.
    await writeFile(path.join(files, 'refunds.csv'), 'number,amount\nG-2023,1.50\nX-1,2.25\n');
    await writeFile(path.join(files, 'notes.json'), '[{"number": "G-2023", "note": "called"}]\n');
    const scratch = await DuckDBInstance.create(':memory:');
    const connection = await scratch.connect();
    await connection.run(
      `COPY (SELECT 'G-2023' AS number, 3 AS boxes) TO '${path.join(files, 'boxes.parquet')}' (FORMAT parquet)`,
    );
    connection.closeSync();
    scratch.closeSync();
    server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(404).end();
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const result = await query(COUNTS_SQL);
    assertExit(result, 0);
    counts = JSON.parse(result.stdout);
    assert.ok(Number(counts[0]!.orders) > 0, 'the ingest loaded orders');
  });

  after(async () => {
    killChildren();
    if (server) await new Promise((resolve) => server.close(resolve));
    await cleanup?.();
  });

  it('COPY … TO a new path is refused, and the file is not created', async () => {
    const target = path.join(files, 'copied.csv');
    await refused(`COPY (SELECT 'gone' AS x) TO '${target}' (FORMAT csv)`, /cannot run COPY/);
    await refused(
      `COPY orders TO '${path.join(files, 'orders.parquet')}' (FORMAT parquet)`,
      /cannot run COPY/,
    );
    assert.equal(existsSync(target), false);
  });

  it("COPY … TO the warehouse's own path is refused, and the warehouse stays whole and queryable", async () => {
    await refused(`COPY (SELECT 'gone' AS x) TO '${warehouse}' (FORMAT csv)`, /cannot run COPY/);
    await refused(`COPY (SELECT 'gone' AS x) TO 'warehouse.duckdb' (FORMAT csv)`, /cannot run COPY/);
    const after = await query(COUNTS_SQL);
    assertExit(after, 0);
    assert.deepEqual(JSON.parse(after.stdout), counts);
  });

  it('EXPORT DATABASE, IMPORT DATABASE and EXPLAIN ANALYZE of a COPY are refused; nothing is written', async () => {
    const exported = path.join(dir, 'exported');
    // DuckDB creates the folder of an EXPORT DATABASE while it merely prepares the statement.
    await refused(`EXPORT DATABASE '${exported}'`, /cannot run EXPORT DATABASE/);
    await refused(
      `/* a comment */ export database '${exported}' (FORMAT parquet)`,
      /cannot run EXPORT DATABASE/,
    );
    assert.equal(existsSync(exported), false);
    // A folder whose load.sql writes a file: IMPORT DATABASE would run it.
    const importable = path.join(dir, 'importable');
    await mkdir(importable);
    await writeFile(path.join(importable, 'schema.sql'), '\n');
    await writeFile(
      path.join(importable, 'load.sql'),
      `COPY (SELECT 'gone' AS x) TO '${path.join(files, 'imported.csv')}';\n`,
    );
    await refused(`IMPORT DATABASE '${importable}'`, /cannot import databases/);
    await refused(`PRAGMA import_database('${importable}')`, /cannot import databases/);
    // EXPLAIN ANALYZE runs the statement it explains.
    const explained = path.join(files, 'explained.csv');
    await refused(`EXPLAIN ANALYZE COPY (SELECT 1 AS x) TO '${explained}'`, /cannot run COPY/);
    await refused(`EXPLAIN (ANALYZE, FORMAT json) COPY orders TO '${explained}'`, /cannot run COPY/);
    assert.equal(existsSync(explained), false);
    assert.equal(existsSync(path.join(files, 'imported.csv')), false);
  });

  it('ATTACH is refused, for writing above all: no database file is created', async () => {
    const other = path.join(dir, 'other.duckdb');
    await refused(`ATTACH '${other}' AS other (READ_WRITE)`, /cannot attach databases/);
    await refused(`ATTACH '${other}' AS other`, /cannot attach databases/);
    await refused('DETACH warehouse', /cannot detach databases/);
    assert.equal(existsSync(other), false);
  });

  it('INSTALL, LOAD and extension autoloading are refused, with no request to any repository', async () => {
    await refused(`INSTALL httpfs FROM '${origin}'`, /cannot install or load DuckDB extensions/);
    await refused(`FORCE INSTALL httpfs FROM '${origin}'`, /cannot install or load DuckDB extensions/);
    await refused('LOAD httpfs', /cannot install or load DuckDB extensions/);
    await refused('UPDATE EXTENSIONS', /cannot install or load DuckDB extensions/);
    // A remote path needs httpfs: DuckDB would download it, then fetch the file.
    await refused(`SELECT * FROM read_csv('${origin}/remote.csv')`, /this needs the httpfs extension/);
    assert.equal(existsSync(path.join(home, '.duckdb')), false, 'nothing under ~/.duckdb');
  });

  it('settings cannot be changed, and persistent secrets cannot be stored', async () => {
    await refused('SET enable_external_access = true', /cannot change DuckDB's settings/);
    await refused('SET lock_configuration = false', /cannot change DuckDB's settings/);
    await refused('RESET lock_configuration', /cannot change DuckDB's settings/);
    await refused('PRAGMA threads = 1', /cannot change DuckDB's settings/);
    await refused(
      "CREATE PERSISTENT SECRET kept (TYPE http, BEARER_TOKEN 'not-a-token')",
      /cannot store secrets in files/,
    );
    assert.equal(existsSync(path.join(home, '.duckdb')), false, 'no secret stored under ~/.duckdb');
    const settings = await query(
      `SELECT current_setting('lock_configuration') AS locked,
        current_setting('autoinstall_known_extensions') AS autoinstall,
        current_setting('autoload_known_extensions') AS autoload,
        current_setting('allow_persistent_secrets') AS persistent_secrets,
        current_setting('TimeZone') AS zone`,
    );
    assertExit(settings, 0);
    assert.deepEqual(JSON.parse(settings.stdout), [
      { locked: true, autoinstall: false, autoload: false, persistent_secrets: false, zone: 'UTC' },
    ]);
  });

  it("reads the user's own CSV, Parquet and JSON files, beside the warehouse's tables", async () => {
    const before = await tree(dir);
    const csv = await query(
      `SELECT number, amount FROM read_csv('${path.join(files, 'refunds.csv')}') ORDER BY 1`,
    );
    assertExit(csv, 0);
    assert.deepEqual(JSON.parse(csv.stdout), [
      { number: 'G-2023', amount: 1.5 },
      { number: 'X-1', amount: 2.25 },
    ]);
    const joined = await query(
      `SELECT o.number, b.boxes, n.note FROM orders o
       JOIN read_parquet('${path.join(files, 'boxes.parquet')}') b USING (number)
       JOIN read_json('${path.join(files, 'notes.json')}') n USING (number)`,
    );
    assertExit(joined, 0);
    assert.deepEqual(JSON.parse(joined.stdout), [{ number: 'G-2023', boxes: 3, note: 'called' }]);
    // Statements that only read still run: EXPLAIN ANALYZE of a SELECT, SHOW, PRAGMA, a temporary table. File
    // logging, which the configuration lock does not cover, starts with the statement after it: there is none.
    for (const sql of [
      'EXPLAIN ANALYZE SELECT count(*) FROM orders',
      'SHOW TABLES',
      'PRAGMA show_tables',
      "CREATE TEMP TABLE t AS SELECT * FROM read_csv('files/refunds.csv')",
      "CALL enable_logging(storage = 'file', storage_config = {'path': 'logs'}, level = 'trace')",
    ])
      assertExit(await query(sql), 0);
    assert.deepEqual(await tree(dir), before, 'reading changed the folder');
    assert.deepEqual(requests, []);
  });

  it('no output carries the token or a terminal escape', () => {
    assertNoSecretsOrEscapes();
  });
});
