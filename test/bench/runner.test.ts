import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CLI, quantiles, runCli } from '../../bench/lib.js';
import { BIN, REPO_ROOT } from '../cli/helpers.js';

/**
 * The benchmarks time the command users run: bin/store-sync.js through its `#!` line (its Node flags), as a
 * whole process, through one runner (bench/lib.ts runCli). A benchmark that names the bin itself would start
 * it some other way (`node bin/store-sync.js` reads no `#!` flags).
 */
describe('bench: the command runs through one runner', () => {
  it('no benchmark but bench/lib.ts names bin/store-sync.js in its code (the sandbox is not measured)', async () => {
    const dir = path.join(REPO_ROOT, 'bench');
    const files = (await readdir(dir, { recursive: true })).filter((f) => f.endsWith('.ts'));
    const naming: string[] = [];
    for (const file of files) {
      if (file === 'lib.ts' || file === 'extract-support.ts') continue;
      // Code only: comments may say what the benchmark runs.
      const code = (await readFile(path.join(dir, file), 'utf8')).replace(/\/\*[\s\S]*?\*\/|\/\/.*$/gm, '');
      if (/bin\/store-sync\.js|['"]store-sync\.js['"]/.test(code)) naming.push(file);
    }
    assert.deepEqual(naming, []);
  });

  it('runCli runs the bin itself under GNU time: wall, CPU and peak RSS', {
    skip: !existsSync('/usr/bin/time'),
  }, async () => {
    assert.equal(CLI, BIN);
    const run = await runCli(['--version']);
    assert.match(run.stdout, /\d+\.\d+\.\d+/);
    assert.ok(run.wall > 0 && run.cpu >= 0 && run.peakRssMb > 10, JSON.stringify(run));
    await assert.rejects(runCli(['no-such-command']), /exited with [1-9]/);
  });

  it('quantiles: min, median (the mean of the middle two of an even count) and max', () => {
    assert.deepEqual(quantiles([3, 1, 2]), { min: 1, median: 2, max: 3 });
    assert.deepEqual(quantiles([4, 1, 3, 2]), { min: 1, median: 2.5, max: 4 });
  });
});
