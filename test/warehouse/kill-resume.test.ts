import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openWarehouse } from '../../src/load/index.js';
import { dataTables } from '../../src/model/index.js';
import { orderDoc, snapshot, tableRows, tempDir } from './helpers.js';

/**
 * Atomic progress (docs/operations.md, "What a run promises"): a load killed with SIGKILL at any instant
 * resumes from the last commit, and the tables end up equal, row for row, to those of an uninterrupted run
 * (apart from `_synced_at` and `_run_id`; and `_deleted_at`, which holds the start time of the scan that
 * noticed the deletion and so differs between two runs made at different times: whether it is set must still
 * be the same).
 */

const CHILD = new URL('./children/load-child.ts', import.meta.url).pathname;
const KILLS = 20;

type Outcome = 'done' | 'killed';

/** Runs the child; with `killAfterMs` it is SIGKILLed that long after it has opened the warehouse. */
async function run(file: string, docs: string, killAfterMs?: number): Promise<Outcome> {
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, file, docs], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  let timer: NodeJS.Timeout | undefined;
  child.stdout.on('data', (d: Buffer) => {
    out += d.toString();
    if (killAfterMs !== undefined && out.includes('started') && !timer) {
      timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    }
  });
  const [code, signal] = (await once(child, 'exit')) as [number | null, string | null];
  clearTimeout(timer);
  if (signal === 'SIGKILL') return 'killed';
  assert.equal(code, 0, `the child failed: ${out}`);
  assert.ok(out.includes('done'));
  return 'done';
}

async function writeDocuments(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (let f = 0; f < 2; f++) {
    const lines: string[] = [];
    for (let i = 0; i < 600; i++) {
      const g = f * 600 + i;
      // Order numbers repeat across files with shuffled times: newest-wins decides, whatever the batches.
      const doc = orderDoc(
        g % 700,
        new Date(Date.UTC(2024, 0, 1) + ((g * 7919) % 5000) * 60_000).toISOString(),
      );
      (doc.lines as unknown[]).length = 1 + (g % 3 === 0 ? 0 : 1);
      lines.push(g % 150 === 0 ? '{"number": broken' : JSON.stringify(doc));
    }
    await writeFile(path.join(dir, `part-${f}.ndjson`), `${lines.join('\n')}\n`);
  }
}

async function tablesOf(file: string) {
  const warehouse = await openWarehouse(file, { readOnly: true });
  try {
    const tables = [...dataTables().map((t) => t.name), '_rejected_records', '_ingested_files'];
    const rows = await snapshot(warehouse.connection, ['_synced_at', '_run_id', '_deleted_at'], tables);
    const deleted = await tableRows(warehouse.connection, 'products', { where: '_deleted_at IS NOT NULL' });
    return { rows, deleted: deleted.map((r) => r.id) };
  } finally {
    await warehouse.close();
  }
}

describe('SIGKILL at random points, then resume', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let docs: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    docs = path.join(dir, 'docs');
    await writeDocuments(docs);
  });
  after(() => cleanup());

  it(`ends with the tables of an uninterrupted run after ${KILLS} kills`, async () => {
    // The uninterrupted reference runs beside the killed one.
    const reference = path.join(dir, 'reference.duckdb');
    const referenceRun = run(reference, docs);
    const target = path.join(dir, 'killed.duckdb');
    let kills = 0;
    let outcome: Outcome = 'killed';
    while (kills < KILLS && outcome === 'killed') {
      outcome = await run(target, docs, Math.floor(Math.random() * 120));
      if (outcome === 'killed') kills++;
    }
    assert.equal(kills, KILLS, 'the load was still running at every kill point');
    if (outcome === 'killed') assert.equal(await run(target, docs), 'done');
    assert.equal(await referenceRun, 'done');
    const expected = await tablesOf(reference);
    assert.deepEqual(
      expected.deleted,
      Array.from({ length: 14 }, (_, i) => (i + 1) * 7),
    );
    assert.equal(expected.rows.orders!.length, 699, 'order T-600 only comes in a broken line');
    const actual = await tablesOf(target);
    assert.deepEqual(actual.deleted, expected.deleted);
    for (const table of Object.keys(expected.rows)) {
      assert.deepEqual(actual.rows[table], expected.rows[table], `${table} equals the uninterrupted run`);
    }
  });
});
