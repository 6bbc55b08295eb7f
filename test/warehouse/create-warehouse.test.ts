import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { openWarehouse } from '../../src/load/index.js';
import { tempDir } from './helpers.js';

/**
 * A writer that finds no warehouse makes one under a name of its own and links it into place
 * (src/load/open.ts, createWarehouse), so the path never holds a database in the making.
 */

const OPEN_ONCE = new URL('./children/open-once.ts', import.meta.url).pathname;
const run = promisify(execFile);

function isDuckDbFile(file: string): boolean {
  return readFileSync(file).toString('latin1', 8, 12) === 'DUCK';
}

describe('creating a warehouse', () => {
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  it('an empty file at the path, what DuckDB leaves when it stops right after creating one, becomes a warehouse', async () => {
    const folder = path.join(dir, 'empty');
    mkdirSync(folder);
    const file = path.join(folder, 'w.duckdb');
    closeSync(openSync(file, 'w'));
    // DuckDB refuses an empty file ("not a valid DuckDB database file"), and every run stopped on it.
    const warehouse = await openWarehouse(file);
    await warehouse.close();
    assert.ok(isDuckDbFile(file));
    assert.deepEqual(readdirSync(folder), ['w.duckdb'], 'nothing left beside it');
  });

  it('a file that is not empty is never replaced', async () => {
    const folder = path.join(dir, 'other');
    mkdirSync(folder);
    const file = path.join(folder, 'w.duckdb');
    writeFileSync(file, 'notes');
    await assert.rejects(openWarehouse(file), /is another kind of file, not a DuckDB warehouse/);
    assert.equal(readFileSync(file, 'utf8'), 'notes');
  });

  it('writers creating the same new warehouse at once: each opens it or is told another writes; none finds it half made', async () => {
    for (let round = 0; round < 4; round += 1) {
      const folder = path.join(dir, `race-${round}`);
      mkdirSync(folder);
      const file = path.join(folder, 'w.duckdb');
      // Far enough ahead that all four have loaded DuckDB and spin when it comes.
      const startAt = Date.now() + 3_000;
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () =>
          run(process.execPath, ['--import', 'tsx', OPEN_ONCE, file, String(startAt)]).then(({ stdout }) =>
            stdout.trim(),
          ),
        ),
      );
      for (const outcome of outcomes) assert.match(outcome, /^(opened|warehouse_locked)$/, `round ${round}`);
      assert.ok(outcomes.includes('opened'), `round ${round}: one writer opened it`);
      assert.ok(isDuckDbFile(file));
      assert.deepEqual(readdirSync(folder), ['w.duckdb'], `round ${round}: no draft left beside it`);
    }
  });
});
