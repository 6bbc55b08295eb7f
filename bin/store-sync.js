#!/usr/bin/env -S MALLOC_ARENA_MAX=2 MALLOC_MMAP_THRESHOLD_=131072 node --max-semi-space-size=2 --heap-growing-percent=100
// The allocator's settings and Node's flags for every run are on the line above because glibc and V8 read
// them only when the process starts: they are MALLOC_ENV and NODE_FLAGS in src/load/runtime-profile.ts, which
// says why, and test/cli/runtime-profile.test.ts keeps this line equal to them (SHEBANG). `node
// bin/store-sync.js` runs without them.
// The CLI is written in TypeScript and runs compiled to JavaScript, bundled in dist/cli (`npm run build`, which
// `npm install`, `npm start` and `npm test` run first; scripts/bundle.ts says why a bundle): a TypeScript
// loader would add a loader thread per JavaScript thread to every run, in memory and in start-up time.
import { existsSync, readdirSync, statSync } from 'node:fs';

const main = new URL('../dist/cli/main.js', import.meta.url);
// Written by `npm run build` once tsc and the bundle have finished (tsc leaves unchanged outputs alone, so
// their times say nothing).
const built = new URL('../dist/.built', import.meta.url);
if (!existsSync(main) || !existsSync(built)) {
  process.stderr.write(
    'store-sync is not built: run `npm run build` (or `npm install`) in its folder first.\n',
  );
  process.exit(1);
}

// A source edited since the build would not run: say so rather than run the old code silently.
const builtAt = statSync(built).mtimeMs;
const edited = ['src', 'pipelines', 'schemas'].some((folder) => {
  const root = new URL(`../${folder}/`, import.meta.url);
  if (!existsSync(root)) return false;
  return readdirSync(root, { recursive: true }).some(
    (name) => String(name).endsWith('.ts') && statSync(new URL(String(name), root)).mtimeMs > builtAt,
  );
});
if (edited)
  process.stderr.write(
    'store-sync: sources changed since the last build; run `npm run build` to run them.\n',
  );

// Stack traces, printed only with --verbose, name the TypeScript sources' lines through the maps the build
// writes beside the code. Only then: with maps enabled Node reads and parses every loaded module's map, a
// cost to every command's start-up (docs/performance.md, "Start-up").
if (process.argv.includes('--verbose')) process.setSourceMapsEnabled(true);
await import(main.href);
