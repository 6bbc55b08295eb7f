import { rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { type BuildOptions, build } from 'esbuild';

/**
 * The command as it runs: bin/store-sync.js loads dist/cli/main.js, which this script bundles from the
 * TypeScript sources with esbuild (run by `npm run build`, after tsc has type-checked and compiled dist/src
 * for the tests and benchmarks that import compiled modules).
 *
 * Why a bundle: a short command such as `query "SELECT 1"` spent most of its start-up loading modules, not
 * running them. zod alone is some 95 ES modules (every one of its locales, through the `z` namespace), and
 * yargs and its helpers another 40; Node resolves, reads and compiles each in turn, about a quarter of the
 * command's time (docs/performance.md, "Start-up"). Bundled, the modules a command needs are a few files,
 * and the parts of zod the config does not use (its locales among them) are left out, because the sources
 * import zod as a namespace (`import * as z`) whose unused members esbuild can drop.
 *
 * What stays a package of its own, loaded by Node from node_modules as before:
 * - @duckdb/*: native code, required at run time (src/load/duckdb-api.ts);
 * - undici, cli-progress and croner: CommonJS packages loaded only by the commands that talk to an API, draw
 *   progress bars or schedule runs. Bundled into an ES module they would need a CommonJS `require` shim, for
 *   nothing a short command saves.
 *
 * Each command keeps loading only what it runs: every dynamic `import()` of the sources is a chunk of its
 * own (`splitting`), loaded when the import runs. The worker threads of ingest and rebuild start from
 * worker.js, an entry point of its own beside main.js, where src/ingest/parallel.ts looks for it. Chunks sit
 * in the same folder as the entry points for the same reason: a module's `import.meta.url` is its chunk's.
 *
 * meta.json, esbuild's account of which source went into which file, lets test/cli/startup.test.ts name the
 * sources a command loaded.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const BUNDLE_DIR = path.join(ROOT, 'dist', 'cli');

/** What both builds below share. */
const COMMON = {
  absWorkingDir: ROOT,
  bundle: true,
  platform: 'node',
  target: 'node20',
  // Minified, because Node compiles every byte a command loads before running any of it; names are kept,
  // because errors and stack traces show them.
  minify: true,
  keepNames: true,
  // Stack traces (--verbose) name the TypeScript sources through these maps, as the compiled files' do.
  sourcemap: true,
  logLevel: 'warning',
} satisfies BuildOptions;

export async function bundle(): Promise<void> {
  // Chunks are named by their content: a chunk of an earlier build would stay beside the new ones.
  await rm(BUNDLE_DIR, { recursive: true, force: true });
  const result = await build({
    ...COMMON,
    entryPoints: { main: 'src/cli/main.ts', worker: 'src/ingest/worker.ts' },
    outdir: BUNDLE_DIR,
    splitting: true,
    format: 'esm',
    external: ['@duckdb/*', 'undici', 'cli-progress', 'croner'],
    metafile: true,
  });
  await writeFile(path.join(BUNDLE_DIR, 'meta.json'), JSON.stringify(result.metafile));
  // DuckDB's JavaScript API as one CommonJS file, which src/load/duckdb-api.ts requires when it is there: the
  // package is some 180 files that require each other, about 15 ms of a short command's start-up to load one
  // by one. Its native bindings stay in node_modules, required by name.
  await build({
    ...COMMON,
    stdin: { contents: "module.exports = require('@duckdb/node-api');", resolveDir: ROOT, loader: 'js' },
    outfile: path.join(BUNDLE_DIR, 'duckdb-node-api.cjs'),
    format: 'cjs',
    external: ['@duckdb/node-bindings'],
  });
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await bundle();
