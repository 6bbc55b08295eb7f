import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { FIXTURES } from '../warehouse/helpers.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  ingestWithSummary,
  killChildren,
  REPO_ROOT,
  runCli,
  tempDir,
} from './helpers.js';

/**
 * Start-up (docs/performance.md, "Start-up"): `--help` and `query` load only what they run. The modules a
 * command loads are recorded by a module hook in the real command (test/cli/children/record-imports.mjs);
 * what must stay out is what costs start-up time and is not needed: DuckDB for --help, the API client,
 * progress bars, the scheduler, the pipelines and the normalizer for either, the config's zod schemas
 * for --help.
 */

const HOOK = pathToFileURL(path.join(REPO_ROOT, 'test/cli/children/record-imports.mjs')).href;

/** The modules the command loads, as paths in the repository or `package/…` in node_modules. */
async function loadedBy(args: string[], dir: string, name: string): Promise<string[]> {
  const file = path.join(dir, `${name}.imports`);
  const result = await runCli(args, {
    env: { NODE_OPTIONS: `--import=${HOOK}`, STORE_SYNC_IMPORTS_FILE: file },
  });
  assertExit(result, 0);
  const root = pathToFileURL(REPO_ROOT).href;
  return (await readFile(file, 'utf8'))
    .trim()
    .split('\n')
    .map((url) => url.replace(/^.*\/node_modules\//, '').replace(root, ''));
}

const HEAVY_EVERYWHERE = [
  /^undici\//,
  /^cli-progress\//,
  /^croner\//,
  /^dist\/pipelines\//,
  /^dist\/src\/(extract\/index\.js|ingest\/|normalize\/(index|normalizer|fast|scan)\.js|sandbox\/|model\/tables\/)/,
  /^dist\/src\/load\/(index|warehouse|batch-writer)\.js/,
];

function assertNone(loaded: string[], patterns: RegExp[]): void {
  const found = loaded.filter((module) => patterns.some((p) => p.test(module)));
  assert.deepEqual(found, [], `loaded: ${loaded.join(', ')}`);
}

describe('start-up: commands load only what they run', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouse: string;

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    warehouse = path.join(dir, 'w.duckdb');
    const { result } = await ingestWithSummary([path.join(FIXTURES, 'order-2024.json')], warehouse);
    assertExit(result, 0);
  });
  after(async () => {
    killChildren();
    await cleanup?.();
    assertNoSecretsOrEscapes();
  });

  it('every command is listed under the name its module declares', async () => {
    for (const [name, load] of COMMANDS) {
      const { command } = await load();
      assert.equal(String(command).split(' ')[0], name);
    }
  });

  it('--help loads no DuckDB, no zod and nothing heavy, and still lists every command', async () => {
    const loaded = await loadedBy(['--help'], dir, 'help');
    assertNone(loaded, [...HEAVY_EVERYWHERE, /^@duckdb\//, /^zod\//, /^dist\/src\/config\.js/]);
    const { stdout } = await runCli(['--help']);
    for (const [name] of COMMANDS) assert.match(stdout, new RegExp(`store-sync ${name}\\b`));
  });

  it('query loads DuckDB and its own command module, not the others nor what they run', async () => {
    const loaded = await loadedBy(['query', 'SELECT 1', '--warehouse', warehouse], dir, 'query');
    assert.ok(loaded.includes('@duckdb/node-api/lib/index.js'), loaded.join(', '));
    assertNone(loaded, [
      ...HEAVY_EVERYWHERE,
      /^dist\/src\/cli\/commands\/(?!query\.js|index\.js)/,
      /^dist\/src\/model\/index\.js/,
    ]);
  });
});
