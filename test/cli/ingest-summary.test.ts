import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { FILE_ROWS } from '../../src/cli/commands/ingest-summary.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  type CliResult,
  killChildren,
  queryJson,
  REPO_ROOT,
  runCli,
  scratchWarehouses,
} from './helpers.js';

/**
 * `ingest` prints the same kind of summary table as `sync` (issue 30 point 5): a row per file where the sync has
 * a row per stream, then a line per store with the outcome, the time, the figures and the run id, and the
 * fields no column maps that the run saw first. `--json` prints the object it printed before.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents');
const ORDER = path.join(FIXTURES, 'order-2024.json');

interface IngestJson {
  files: { path: string; status: string; documents: number; rejections: number }[];
  documents: number;
  rows: number;
  rejections: number;
}

/** The table's rows (after the header and the rule), split into cells: store, file, status, counts, note. */
function tableRows(stdout: string): string[][] {
  const lines = stdout.split('\n');
  const end = lines.findIndex((line, i) => i > 1 && !/^\S+\s{2}/.test(line));
  return lines.slice(2, end).map((line) => line.split(/\s{2,}/).map((cell) => cell.trim()));
}

const summaryLine = (stdout: string, store: string) =>
  new RegExp(`^${store}: (.+) in ([\\d.]+) s, (.+) \\((run|spool) (\\S+)\\)$`, 'm').exec(stdout);

describe('ingest prints a summary table', () => {
  const scratch = scratchWarehouses();
  after(async () => {
    killChildren();
    await scratch.removeAll();
  });

  it('a row per file and a line for the run, agreeing with --json', async () => {
    const inputs = [
      path.join(FIXTURES, 'others.ndjson'),
      ORDER,
      path.join(FIXTURES, 'pages', 'records.json'),
    ];
    const { dir, warehouse } = await scratch.create();
    const text = await runCli(['ingest', ...inputs, '--warehouse', warehouse], { cwd: dir });
    // pages/records.json holds a record that is rejected: exit 3, as with --json.
    assertExit(text, 3);
    const lines = text.stdout.split('\n');
    assert.match(lines[0]!, /^store\s+file\s+status\s+documents\s+rejections\s+note$/);
    assert.match(lines[1]!, /^-+(\s+-+)+$/);

    const { warehouse: other } = await scratch.create();
    const json = await runCli(['ingest', '--json', ...inputs, '--warehouse', other], { cwd: dir });
    assertExit(json, 3);
    const summary = JSON.parse(json.stdout) as IngestJson;
    assert.deepEqual(
      tableRows(text.stdout),
      summary.files.map((f) => ['default', f.path, f.status, String(f.documents), String(f.rejections)]),
    );
    const line = summaryLine(text.stdout, 'default');
    assert.ok(line, text.stdout);
    assert.equal(line[1], 'completed with rejections');
    assert.equal(
      line[3],
      `${summary.files.length} files, ${summary.documents} documents, ${summary.rows} rows`,
    );
    const runs = await queryJson<{ runId: string }>(
      ['--warehouse', warehouse],
      "SELECT _run_id AS runId FROM _sync_runs WHERE command = 'ingest'",
      { cwd: dir },
    );
    assert.equal(runs.length, 1, JSON.stringify(runs));
    assert.equal(line[5], runs[0]!.runId);

    // Again: every file is unchanged, nothing is read, exit 0.
    const again = await runCli(['ingest', ...inputs, '--warehouse', warehouse], { cwd: dir });
    assertExit(again, 0);
    assert.deepEqual(
      tableRows(again.stdout).map((cells) => cells.slice(2)),
      inputs.map(() => ['unchanged', '0', '0']),
    );
    assert.match(again.stdout, /^default: succeeded in [\d.]+ s, 3 files, 0 documents, 0 rows \(run \S+\)$/m);
  });

  it(`lists ${FILE_ROWS} files, and adds up the rest per status`, async () => {
    const { dir, warehouse } = await scratch.create();
    const folder = path.join(dir, 'many');
    await mkdir(folder);
    const order = JSON.parse(await readFile(ORDER, 'utf8')) as Record<string, unknown>;
    const count = FILE_ROWS + 5;
    for (let i = 0; i < count; i++)
      await writeFile(
        path.join(folder, `order-${String(i).padStart(3, '0')}.json`),
        JSON.stringify({ ...order, number: `many-${i}` }),
      );
    const result = await runCli(['ingest', folder, '--warehouse', warehouse], { cwd: dir });
    assertExit(result, 0);
    const rows = tableRows(result.stdout);
    assert.equal(rows.length, FILE_ROWS + 1);
    assert.deepEqual(rows.at(-1), ['default', '… 5 more files', 'loaded', '5', '0']);
    assert.match(
      result.stdout,
      new RegExp(`^default: succeeded in [\\d.]+ s, ${count} files, ${count} documents, \\d+ rows`, 'm'),
    );
  });

  it('names the fields no column maps that the run saw first, as the sync does', async () => {
    const { dir, warehouse } = await scratch.create();
    const order = JSON.parse(await readFile(ORDER, 'utf8')) as Record<string, unknown>;
    const file = path.join(dir, 'new-field.json');
    await writeFile(file, JSON.stringify({ ...order, zz_summary_field: 1 }));
    const result = await runCli(['ingest', file, '--warehouse', warehouse], { cwd: dir });
    assertExit(result, 0);
    assert.match(result.stdout, /^default: orders: 1 new field: `zz_summary_field` → see _schema_changes$/m);
  });

  it('ingest --spool prints the drained files and a line per spool', async () => {
    const { dir, warehouse } = await scratch.create();
    const spool = path.join(dir, 'spool');
    await mkdir(spool);
    const name = 'events-20260101T000000000Z-000001-abcdef.ndjson';
    await copyFile(path.join(FIXTURES, 'others.ndjson'), path.join(spool, name));
    const result: CliResult = await runCli(['ingest', '--spool', spool, '--warehouse', warehouse], {
      cwd: dir,
    });
    assertExit(result, 0);
    assert.match(result.stdout, /^store\s+file\s+status\s+documents\s+rejections\s+note$/m);
    const [row] = tableRows(result.stdout);
    assert.deepEqual(row!.slice(2), ['loaded', '6', '0', 'deleted']);
    assert.ok(row![1]!.endsWith(name), row![1]);
    assert.match(
      result.stdout,
      new RegExp(
        `^default: succeeded in [\\d.]+ s, 1 file, 6 documents, \\d+ rows \\(spool ${spool}\\)$`,
        'm',
      ),
    );
    assertNoSecretsOrEscapes();
  });
});
