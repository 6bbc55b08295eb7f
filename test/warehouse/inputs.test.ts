import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { withStdin } from '../../src/cli/commands/ingest.js';
import { expandInputs } from '../../src/load/input/inputs.js';
import { tempDir } from './helpers.js';

/** What `store-sync ingest` reads, in what order: folders walked through links, stdin where it was named. */

describe('ingest inputs', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  it('follows links to files and folders in a folder, reading a folder linked twice (or in a loop) once', async () => {
    // Skipped before: a capture folder of links loaded nothing and warned that it held no document file.
    const real = path.join(dir, 'real');
    const links = path.join(dir, 'links');
    await mkdir(real, { recursive: true });
    await mkdir(links, { recursive: true });
    await writeFile(path.join(real, 'order.json'), '{}');
    await symlink(path.join(real, 'order.json'), path.join(links, 'linked.json'));
    await symlink(real, path.join(links, 'captures'));
    await symlink(real, path.join(links, 'again'));
    await symlink(links, path.join(links, 'loop'));
    await symlink(path.join(dir, 'nothing.json'), path.join(links, 'broken.json'));
    await symlink(path.join(real, 'order.json'), path.join(links, 'notes.txt'));
    const files = await expandInputs([links]);
    assert.deepEqual(
      files.map((f) => path.relative(links, f.path)),
      ['again/order.json', 'linked.json'],
    );
    assert.deepEqual(
      files.map((f) => f.size),
      [2, 2],
    );
  });

  it('reads stdin at its place among the inputs (the one read last wins for carts and fulfillment orders)', () => {
    assert.deepEqual(withStdin(['old.ndjson'], ['ingest', '-', 'old.ndjson', '--warehouse', 'w.duckdb']), [
      '-',
      'old.ndjson',
    ]);
    assert.deepEqual(withStdin(['old.ndjson'], ['ingest', 'old.ndjson', '-']), ['old.ndjson', '-']);
    assert.deepEqual(withStdin(['a.json', 'b.json'], ['ingest', 'a.json', '-', 'b.json', '-']), [
      'a.json',
      '-',
      'b.json',
    ]);
    assert.deepEqual(withStdin(['a.json'], ['ingest', 'a.json']), ['a.json']);
  });
});
