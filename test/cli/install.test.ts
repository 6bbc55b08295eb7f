import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT, tempDir } from './helpers.js';

const run = promisify(execFile);

/**
 * The README's "Install": the command runs anywhere once installed from a packed tarball. `npm pack` of this
 * folder (its build, without running the build again: npm test has just made it) is installed with
 * `npm install -g --prefix` into a temporary folder, and the installed `store-sync` runs from an unrelated
 * folder: its help, and the whole demo. The dependencies come from npm's cache where it has them, else from
 * the npm registry (nothing else is fetched: DuckDB's binary is an npm package of its own).
 */

/** npm's environment, minus what an enclosing `npm test` sets about this package and where it lives. */
function npmEnv(): NodeJS.ProcessEnv {
  return Object.fromEntries(
    Object.entries(process.env).filter(
      ([key]) => !/^npm_(package_|lifecycle_|config_(local_prefix|global_prefix|prefix)$)/i.test(key),
    ),
  );
}

describe('cli: installed from a packed tarball, run from anywhere', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let bin: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup?.());

  it('npm pack holds the built command and its docs, not the sources or tests', async () => {
    await run('npm', ['pack', REPO_ROOT, '--ignore-scripts', '--pack-destination', dir, '--silent'], {
      cwd: dir,
      env: npmEnv(),
      timeout: 120_000,
    });
    const [tarball] = (await readdir(dir)).filter((name) => name.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const { stdout: listing } = await run('tar', ['-tzf', path.join(dir, tarball)]);
    const files = listing.trim().split('\n');
    for (const needed of [
      'package/bin/store-sync.js',
      'package/dist/.built',
      'package/dist/cli/main.js',
      'package/dist/cli/worker.js',
      'package/schemas/sync.config.schema.json',
      'package/README.md',
      'package/docs/configuration.md',
    ])
      assert.ok(files.includes(needed), `the tarball holds ${needed}`);
    assert.deepEqual(
      files.filter((f) => /\.ts$/.test(f) || f.startsWith('package/test/') || f.startsWith('package/bench/')),
      [],
      'no TypeScript source, test or benchmark is packed',
    );

    const prefix = path.join(dir, 'prefix');
    await run(
      'npm',
      [
        'install',
        '--global',
        '--prefix',
        prefix,
        '--prefer-offline',
        '--no-audit',
        '--no-fund',
        '--loglevel',
        'error',
        path.join(dir, tarball),
      ],
      { cwd: dir, env: npmEnv(), timeout: 240_000 },
    );
    bin = path.join(prefix, 'bin', 'store-sync');
    assert.ok(existsSync(bin), `npm linked the command at ${bin}`);
  });

  it('store-sync --help and store-sync demo run from a folder of their own', async () => {
    assert.ok(bin, 'installed by the test before');
    const elsewhere = path.join(dir, 'elsewhere');
    await mkdir(elsewhere);
    // Only the system's PATH (the one `node` of the #! line is found on) and a home: nothing of this repository.
    const env = { PATH: process.env.PATH, HOME: dir, CI: 'true' };
    const help = await run(bin, ['--help'], { cwd: elsewhere, env });
    assert.match(help.stdout, /^store-sync <command> \[options\]/);
    assert.match(help.stdout, /store-sync demo/);
    assert.equal(help.stderr, '', 'no warning about a missing or stale build');
    // From inside a project of its own, the version is still store-sync's.
    await writeFile(path.join(elsewhere, 'package.json'), '{"name": "elsewhere", "version": "9.9.9"}\n');
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    assert.equal((await run(bin, ['--version'], { cwd: elsewhere, env })).stdout.trim(), version);

    const demo = await run(bin, ['demo'], { cwd: elsewhere, env, timeout: 120_000 });
    assert.match(
      demo.stdout,
      /store-sync demo: a seeded sandbox store synced into data\/demo\/warehouse\.duckdb/,
    );
    assert.match(demo.stdout, /^orders\s+\d+$/m);
    assert.ok(existsSync(path.join(elsewhere, 'data', 'demo', 'warehouse.duckdb')));
  });
});
