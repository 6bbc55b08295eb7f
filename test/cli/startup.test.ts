import assert from 'node:assert/strict';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pathToFileURL } from 'node:url';
import { COMMANDS } from '../../src/cli/commands/index.js';
import { openWarehouse } from '../../src/load/index.js';
import { tableDefinitions } from '../../src/model/index.js';
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
 * Start-up (docs/performance.md, "Start-up"): `--help` and `query` load only what they run. The command runs
 * bundled (scripts/bundle.ts): the files a command loads are recorded by a module hook in the real command
 * (test/cli/children/record-imports.mjs), and each file of the bundle is named by the sources in it, from
 * the bundle's meta.json. What must stay out is what costs start-up time and is not needed: DuckDB for
 * --help, the API client, progress bars, the scheduler, the pipelines and the normalizer for either, the
 * config's zod schemas for --help.
 */

const HOOK = pathToFileURL(path.join(REPO_ROOT, 'test/cli/children/record-imports.mjs')).href;
const BUNDLE = path.join(REPO_ROOT, 'dist', 'cli');

/** The sources in each file of the bundle, by the file's URL. */
async function bundleInputs(): Promise<Map<string, string[]>> {
  const meta = JSON.parse(await readFile(path.join(BUNDLE, 'meta.json'), 'utf8')) as {
    outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
  };
  return new Map(
    Object.entries(meta.outputs).map(([file, { inputs }]) => [
      pathToFileURL(path.join(REPO_ROOT, file)).href,
      Object.entries(inputs)
        .filter(([, { bytesInOutput }]) => bytesInOutput > 0)
        .map(([input]) => input),
    ]),
  );
}

/**
 * The modules the command loads: sources as their paths in the repository (`src/…`, `pipelines/…`), packages
 * as `package/…` whether bundled or loaded from node_modules.
 */
async function loadedBy(args: string[], dir: string, name: string): Promise<string[]> {
  const file = path.join(dir, `${name}.imports`);
  const result = await runCli(args, {
    env: { NODE_OPTIONS: `--import=${HOOK}`, STORE_SYNC_IMPORTS_FILE: file },
  });
  assertExit(result, 0);
  const inputs = await bundleInputs();
  const urls = (await readFile(file, 'utf8')).trim().split('\n');
  assert.ok(
    urls.some((url) => inputs.has(url)),
    `the command ran from the bundle in dist/cli: ${urls.join(', ')}`,
  );
  return urls
    .flatMap((url) => inputs.get(url) ?? [url])
    .map((module) =>
      module.replace(/^.*node_modules\//, '').replace(pathToFileURL(path.join(REPO_ROOT, '/')).href, ''),
    );
}

const HEAVY_EVERYWHERE = [
  /^undici\//,
  /^cli-progress\//,
  /^croner\//,
  /^pipelines\//,
  /^src\/(extract\/index\.ts|ingest\/|normalize\/(index|normalizer|fast|scan)\.ts|sandbox\/|model\/tables\/)/,
  /^src\/load\/(index|warehouse|batch-writer)\.ts/,
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
    // DuckDB comes through require inside src/load/duckdb-api.ts: neither it nor anything it requires.
    assertNone(loaded, [
      ...HEAVY_EVERYWHERE,
      /^src\/load\/duckdb-api\.ts$/,
      /^dist\/cli\/duckdb-node-api\.cjs$/,
      /^@duckdb\//,
      /^zod\//,
      /^src\/config\.ts/,
    ]);
    const { stdout } = await runCli(['--help']);
    for (const [name] of COMMANDS) assert.match(stdout, new RegExp(`store-sync ${name}\\b`));
  });

  it('query loads DuckDB and its own command module, not the others nor what they run', async () => {
    const loaded = await loadedBy(['query', 'SELECT 1', '--warehouse', warehouse], dir, 'query');
    // DuckDB's API comes through require (src/load/duckdb-api.ts): an ESM import of the CommonJS package
    // would make Node scan every one of its files for exports first. Required, it is the bundle's one file
    // of it, not the package's 180; only the native bindings come from the package.
    assert.ok(loaded.includes('src/load/duckdb-api.ts'), loaded.join(', '));
    assert.ok(loaded.includes('dist/cli/duckdb-node-api.cjs'), loaded.join(', '));
    assert.deepEqual(
      loaded.filter((module) => module.startsWith('@duckdb/') && !module.startsWith('@duckdb/node-bindings')),
      [],
    );
    assertNone(loaded, [
      ...HEAVY_EVERYWHERE,
      /^src\/cli\/commands\/(?!query\.ts|index\.ts)/,
      /^src\/model\/index\.ts/,
    ]);
  });
});

describe('start-up: the bundle', () => {
  it("holds zod's English messages alone, not its other locales", async () => {
    // Every source imports zod as a namespace (`import * as z`), whose unused members the bundler drops; one
    // `import { z }` would bring every locale of zod back into each command that reads a config.
    const meta = JSON.parse(await readFile(path.join(BUNDLE, 'meta.json'), 'utf8')) as {
      outputs: Record<string, { inputs: Record<string, { bytesInOutput: number }> }>;
    };
    const locales = new Set(
      Object.values(meta.outputs).flatMap(({ inputs }) =>
        Object.entries(inputs)
          .filter(([input, { bytesInOutput }]) => bytesInOutput > 0 && /\/zod\/v4\/locales\//.test(input))
          .map(([input]) => path.basename(input)),
      ),
    );
    assert.deepEqual([...locales], ['en.js']);
  });
});

describe('start-up: DuckDB is never imported as an ES module', () => {
  it('no source outside src/load/duckdb-api.ts imports a value from @duckdb/node-api', async () => {
    const files = (await readdir(REPO_ROOT, { recursive: true }))
      .map(String)
      .filter((f) => /^(src|pipelines)\/.*\.ts$/.test(f) && f !== path.join('src', 'load', 'duckdb-api.ts'));
    assert.ok(files.length > 50, `only ${files.length} sources found`);
    const offenders: string[] = [];
    for (const file of files) {
      const source = await readFile(path.join(REPO_ROOT, file), 'utf8');
      // Every import of the package, with the braces of a multi-line one; `import type` is erased.
      for (const [statement] of source.matchAll(/^import\s+(?!type\b)[^;]*?from '@duckdb\/node-api';/gms))
        offenders.push(`${file}: ${statement.replace(/\s+/g, ' ')}`);
    }
    assert.deepEqual(offenders, []);
  });
});

describe('start-up: creating a fresh warehouse', () => {
  it('adds a column the registry has to an existing table that lacks it, and creates new tables whole', async () => {
    const { dir, cleanup } = await tempDir();
    try {
      const file = path.join(dir, 'w.duckdb');
      let warehouse = await openWarehouse(file);
      // An older warehouse: a table without one of its columns, another table missing, no fingerprint.
      await warehouse.connection.run(
        'ALTER TABLE orders DROP COLUMN currency; DROP TABLE order_lines; DELETE FROM _schema',
      );
      await warehouse.close();
      warehouse = await openWarehouse(file);
      try {
        const columns = async (table: string) =>
          (
            await warehouse.connection.runAndReadAll(
              `SELECT column_name FROM duckdb_columns() WHERE table_name = '${table}' AND database_name = current_database()`,
            )
          )
            .getRows()
            .map(([name]) => String(name));
        assert.ok((await columns('orders')).includes('currency'), 'orders.currency was not added back');
        const lines = await columns('order_lines');
        const expected = tableDefinitions
          .find((def) => def.name === 'order_lines')!
          .columns.map((c) => c.name);
        assert.deepEqual(lines, expected);
        const comments = await warehouse.connection.runAndReadAll(
          "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'order_lines' AND comment IS NOT NULL AND database_name = current_database()",
        );
        assert.equal(Number(comments.getRows()[0]![0]), expected.length);
      } finally {
        await warehouse.close();
      }
    } finally {
      await cleanup();
    }
  });
});
