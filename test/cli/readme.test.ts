import assert from 'node:assert/strict';
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from 'node:test';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  BIN,
  killChildren,
  REPO_ROOT,
  runCli,
  TOKEN,
  tempDir,
} from './helpers.js';

/**
 * README "Using it on a store", step by step as a new user would: the config block copied from the README
 * (pointed at a separately started `store-sync sandbox`, with the default rate limit of 4 a second), then
 * doctor, sync twice, the README's backfill, ingest and query commands, in a fresh folder.
 */

const STEPS = [
  'npx store-sync doctor',
  'npx store-sync sync',
  'npx store-sync backfill --from 2024-01-01 --to 2024-06-30 --streams subscriptions',
  'npx store-sync ingest captured/',
  'npx store-sync query "SELECT status, count(*) FROM subscriptions GROUP BY ALL"',
];

describe('the README, followed from a fresh folder', () => {
  let readme: string;
  let sandbox: ChildProcess;
  let baseUrl: string;
  let dir: string;
  let cleanup: () => Promise<void>;
  const env = { STORE_SYNC_TOKEN: TOKEN };

  before(async () => {
    readme = await readFile(path.join(REPO_ROOT, 'README.md'), 'utf8');
    ({ dir, cleanup } = await tempDir());
    sandbox = spawn(process.execPath, [BIN, 'sandbox', '--port', '0', '--scale', '20', '--token', TOKEN], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    for await (const line of createInterface({ input: sandbox.stdout! })) {
      baseUrl = line;
      break;
    }
    assert.match(baseUrl, /^http:\/\/127\.0\.0\.1:\d+\/api\/$/);
  });

  after(async () => {
    sandbox?.kill('SIGTERM');
    killChildren();
    await cleanup?.();
  });

  it('the config block works as written, with the sandbox base URL', async () => {
    const block = /Describe the store in `sync\.config\.json`[\s\S]*?```json\n([\s\S]*?)```/.exec(readme);
    assert.ok(block, 'the README shows a sync.config.json');
    const config = JSON.parse(block[1]!) as {
      stores: { baseUrl: string; tokenEnv: string }[];
      warehouse: string;
    };
    assert.equal(config.stores[0]!.tokenEnv, 'STORE_SYNC_TOKEN');
    config.stores[0]!.baseUrl = baseUrl;
    await writeFile(path.join(dir, 'sync.config.json'), JSON.stringify(config, null, 2));
    // data/ does not exist: doctor says the first sync creates it, and the sync does.
    assert.equal(existsSync(path.join(dir, path.dirname(config.warehouse))), false);
    for (const step of STEPS) assert.ok(readme.includes(step), `the README no longer says ${step}`);
  });

  it('doctor passes', async () => {
    const result = await runCli(['doctor'], { cwd: dir, env });
    assertExit(result, 0);
    assert.match(result.stdout, /^all checks passed$/m);
    assert.match(
      result.stdout,
      /^\[ok\] {3}warehouse folder: \S+\/data does not exist yet; the first sync or ingest creates it$/m,
    );
  });

  it('sync, then sync again reading only what changed', async () => {
    const first = await runCli(['sync'], { cwd: dir, env });
    assertExit(first, 0);
    assert.match(first.stdout, /^main\s+subscriptions\s+ok\s+1\s+20\s/m);
    const second = await runCli(['sync'], { cwd: dir, env });
    assertExit(second, 0);
    assert.match(second.stdout, /^main\s+subscriptions\s+ok\s+\d+\s+0\s/m);
  });

  it('the backfill, ingest and query commands as printed', async () => {
    const backfill = await runCli(
      ['backfill', '--from', '2024-01-01', '--to', '2024-06-30', '--streams', 'subscriptions'],
      { cwd: dir, env },
    );
    assertExit(backfill, 0);
    assert.match(backfill.stdout, /^main: succeeded in /m);

    await mkdir(path.join(dir, 'captured'));
    await copyFile(
      path.join(REPO_ROOT, 'test', 'fixtures', 'documents', 'order-2024.json'),
      path.join(dir, 'captured', 'order.json'),
    );
    const ingest = await runCli(['ingest', 'captured/'], { cwd: dir, env });
    assertExit(ingest, 0);
    // The same kind of summary as the sync's: a row per file, a line for the run.
    assert.match(ingest.stdout, /^store\s+file\s+status\s+documents\s+rejections\s+note$/m);
    assert.match(ingest.stdout, /^main\s+\S*captured\/order\.json\s+loaded\s+1\s+0$/m);
    assert.match(ingest.stdout, /^main: succeeded in [\d.]+ s, 1 file, 1 document, \d+ rows \(run \S+\)$/m);

    const query = await runCli(['query', 'SELECT status, count(*) FROM subscriptions GROUP BY ALL'], {
      cwd: dir,
      env,
    });
    assertExit(query, 0);
    const lines = query.stdout.trimEnd().split('\n');
    assert.match(lines[0]!, /^status\s+count_star\(\)$/);
    const total = lines.slice(2).reduce((sum, line) => sum + Number(line.trim().split(/\s+/).at(-1)), 0);
    assert.equal(total, 20);
  });

  it('never printed the token, and printed no ANSI escapes into pipes', () => {
    assertNoSecretsOrEscapes();
  });
});
