import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readFile, rm, symlink, utimes, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { BIN, REPO_ROOT } from './helpers.js';

const run = promisify(execFile);

/**
 * bin/store-sync.js runs the compiled CLI in dist/. Without a build it says what to do instead of failing
 * on a missing module, and with sources edited since the build it says the old code is what runs.
 */
describe('cli: the command runs the build', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bin-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  /** A copy of the command in a folder of its own, with or without the build beside it. */
  async function layout(name: string, withBuild: boolean): Promise<string> {
    const root = path.join(dir, name);
    await mkdir(path.join(root, 'bin'), { recursive: true });
    await copyFile(BIN, path.join(root, 'bin', 'store-sync.js'));
    await writeFile(path.join(root, 'package.json'), '{"type": "module"}\n');
    if (withBuild) {
      await symlink(path.join(REPO_ROOT, 'dist'), path.join(root, 'dist'));
      await symlink(path.join(REPO_ROOT, 'node_modules'), path.join(root, 'node_modules'));
    }
    return path.join(root, 'bin', 'store-sync.js');
  }

  it('not built: exits 1 and says to build', async () => {
    const bin = await layout('unbuilt', false);
    const failure = await run(process.execPath, [bin, '--help']).then(
      () => assert.fail('ran without a build'),
      (error: { code: number; stderr: string }) => error,
    );
    assert.equal(failure.code, 1);
    assert.match(failure.stderr, /store-sync is not built: run `npm run build`/);
  });

  it('built: runs it, and warns only when a source is newer than the build', async () => {
    const bin = await layout('built', true);
    const quiet = await run(process.execPath, [bin, '--help']);
    assert.match(quiet.stdout, /store-sync <command>/);
    assert.equal(quiet.stderr, '');

    const source = path.join(dir, 'built', 'src', 'cli', 'main.ts');
    await mkdir(path.dirname(source), { recursive: true });
    await writeFile(source, 'export {};\n');
    const later = new Date(Date.now() + 60_000);
    await utimes(source, later, later);
    const warned = await run(process.execPath, [bin, '--help']);
    assert.match(warned.stdout, /store-sync <command>/);
    assert.match(warned.stderr, /sources changed since the last build; run `npm run build`/);
  });

  it("--version is store-sync's own, whatever folder it runs in", async () => {
    // yargs left to itself reads the package.json nearest the folder it runs in once the command is bundled
    // (or, installed in a project, the project's): there a project of version 9.9.9 would be what it printed.
    const project = path.join(dir, 'project');
    await mkdir(project, { recursive: true });
    await writeFile(path.join(project, 'package.json'), '{"name": "project", "version": "9.9.9"}\n');
    const { version } = JSON.parse(await readFile(path.join(REPO_ROOT, 'package.json'), 'utf8'));
    const printed = await run(process.execPath, [BIN, '--version'], { cwd: project });
    assert.equal(printed.stdout.trim(), version);
  });

  it("help is in one language: yargs's own words follow the command's English", async () => {
    // The bundle cannot reach yargs's translations at all, so the command as users run it would pass without
    // the setting; the compiled, unbundled module, beside which yargs finds them, is what shows it holds.
    const entries = [BIN, path.join(REPO_ROOT, 'dist', 'src', 'cli', 'main.js')];
    for (const entry of entries) {
      const { stdout } = await run(process.execPath, [entry, 'query', '--help'], {
        env: { ...process.env, LANG: 'de_DE.UTF-8', LC_ALL: 'de_DE.UTF-8' },
      });
      assert.match(stdout, /^Options:$/m, entry);
      assert.match(stdout, /\[choices: "table", "csv", "json"\]/, entry);
      assert.doesNotMatch(stdout, /Optionen|Möglichkeiten/, entry);
    }
  });

  it('runs by its own #! line, with the Node flags the benchmarks give their measured steps', async () => {
    // As npm links it (node_modules/.bin/store-sync): executed, not handed to node.
    const direct = await run(BIN, ['--help']);
    assert.match(direct.stdout, /store-sync <command>/);
    const { commandNodeFlags } = await import('../../bench/warehouse-lib.js');
    assert.deepEqual(commandNodeFlags(), ['--max-semi-space-size=2', '--heap-growing-percent=100']);
  });

  it("sets DuckDB's allocator before anything can load DuckDB", async () => {
    // jemalloc reads DUCKDB_JE_MALLOC_CONF once, when DuckDB's library loads: the entry imports the
    // setting before any other module, and the setting's module imports nothing.
    const firstImport = (file: string) =>
      readFile(path.join(REPO_ROOT, file), 'utf8').then((text) => /^import .*$/m.exec(text)?.[0]);
    assert.equal(await firstImport('src/cli/main.ts'), "import '../load/allocator.js';");
    assert.equal(await firstImport('bench/warehouse-child.ts'), "import '../src/load/allocator.js';");
    assert.equal(await firstImport('src/load/allocator.ts'), undefined);
    // The command is the first argument after the script (process.argv[2]), as bin/store-sync.js runs it.
    const settingAfterImport = async (env: NodeJS.ProcessEnv, command?: string) => {
      const allocator = JSON.stringify(path.join(REPO_ROOT, 'dist/src/load/allocator.js'));
      const script = `await import(${allocator}); console.log(process.env.DUCKDB_JE_MALLOC_CONF)`;
      const args = [
        '--input-type=module',
        '-e',
        script,
        'script',
        ...(command ? [command, '--warehouse', 'w'] : []),
      ];
      const { stdout } = await run(process.execPath, args, { env });
      return stdout.trim();
    };
    const { DUCKDB_JE_MALLOC_CONF: _unset, ...env } = process.env;
    assert.equal(await settingAfterImport(env), 'dirty_decay_ms:250,muzzy_decay_ms:0');
    // The bulk loads keep freed pages longer: they are taken back at once (allocator.ts). Every command is
    // asked, so a command renamed away from allocator.ts's list shows here.
    const { COMMANDS } = await import('../../src/cli/commands/index.js');
    const settings = new Map<string, string[]>();
    for (const [name] of COMMANDS) {
      const setting = await settingAfterImport(env, name);
      settings.set(setting, [...(settings.get(setting) ?? []), name]);
    }
    assert.deepEqual(Object.fromEntries(settings), {
      'dirty_decay_ms:250,muzzy_decay_ms:0': COMMANDS.map(([name]) => name).filter(
        (name) => name !== 'ingest' && name !== 'rebuild',
      ),
      'dirty_decay_ms:2000,muzzy_decay_ms:0': ['ingest', 'rebuild'],
    });
    // A benchmark's parent reads the command's settings without taking the allocator's: the peers it starts
    // (DuckDB alone) inherit its environment and must run with DuckDB's own defaults.
    const lib = JSON.stringify(path.join(REPO_ROOT, 'bench/ingest.ts'));
    const parent = `await import(${lib}); console.log(process.env.DUCKDB_JE_MALLOC_CONF ?? 'unset')`;
    const benchParent = await run(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', parent, 'bench/run.ts', 'ingest'],
      { env, cwd: REPO_ROOT },
    );
    assert.equal(benchParent.stdout.trim(), 'unset');
    // One set by whoever runs the command is kept.
    assert.equal(await settingAfterImport({ ...env, DUCKDB_JE_MALLOC_CONF: 'narenas:1' }), 'narenas:1');
  });
});
