import assert from 'node:assert/strict';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { expandInputs } from '../../src/ingest/inputs.js';
import { tempDir } from './helpers.js';

/** What `store-sync ingest` reads, in what order: folders walked through links, stdin where it was named. */

describe('ingest inputs', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  it('follows links to files and folders in a folder, reading a folder or file reached twice (or in a loop) once', async () => {
    // Skipped before: a capture folder of links loaded nothing and warned that it held no document file.
    const real = path.join(dir, 'real');
    const other = path.join(dir, 'other');
    const links = path.join(dir, 'links');
    for (const folder of [real, other, links]) await mkdir(folder, { recursive: true });
    await writeFile(path.join(real, 'order.json'), '{}');
    await writeFile(path.join(other, 'cart.json'), '{}');
    await symlink(path.join(other, 'cart.json'), path.join(links, 'linked.json'));
    await symlink(path.join(other, 'cart.json'), path.join(links, 'same-file.json'));
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

  it('reads a folder by its real paths when a link to it sorts first (the paths earlier runs recorded)', async () => {
    const top = path.join(dir, 'captures');
    await mkdir(path.join(top, 'sub'), { recursive: true });
    await writeFile(path.join(top, 'sub', 'x.ndjson'), '{}\n');
    await symlink(path.join(top, 'sub'), path.join(top, 'alias'));
    await symlink(path.join(top, 'sub', 'x.ndjson'), path.join(top, 'latest.ndjson'));
    const files = await expandInputs([top]);
    assert.deepEqual(
      files.map((f) => path.relative(top, f.path)),
      ['sub/x.ndjson'],
    );
  });
});
