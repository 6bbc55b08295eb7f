import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { partialPrefixHash } from '../../src/ingest/ledger.js';

/**
 * The hash a stopped run keeps of a file it was inside: of the bytes before the position it reached, which the
 * reader counts after dropping a byte order mark; none for gzip, whose positions count uncompressed bytes.
 */
describe('partialPrefixHash', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'store-sync-prefix-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');
  const lines = Buffer.from('{"a":1}\n{"a":2}\n{"a":3}\n');

  it('hashes the bytes before the position', async () => {
    const file = path.join(dir, 'plain.ndjson');
    await writeFile(file, lines);
    assert.equal(await partialPrefixHash(file, 8), sha256(lines.subarray(0, 8)));
    assert.equal(await partialPrefixHash(file, lines.length), sha256(lines));
  });

  it('counts a byte order mark, which the position leaves out', async () => {
    const file = path.join(dir, 'bom.ndjson');
    const withBom = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), lines]);
    await writeFile(file, withBom);
    assert.equal(await partialPrefixHash(file, 8), sha256(withBom.subarray(0, 11)));
  });

  it('keeps none for a gzipped file', async () => {
    const file = path.join(dir, 'lines.ndjson.gz');
    await writeFile(file, gzipSync(lines));
    assert.equal(await partialPrefixHash(file, 8), null);
  });
});
