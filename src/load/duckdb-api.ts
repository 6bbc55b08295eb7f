import { createRequire } from 'node:module';

/**
 * @duckdb/node-api, loaded with require. It is a CommonJS package of many files that re-export each other,
 * and an ESM `import` of a CommonJS module makes Node first scan the source of each of those files for its
 * named exports (cjs-module-lexer, following every re-export): on Node 20 that scan cost about 0.13 s of CPU,
 * as much again as the rest of loading the package, on every command that opens a warehouse. require runs
 * the same files without it (docs/performance.md, "Start-up"). Its types are imported from the package as
 * usual (`import type`), which is erased from the built code.
 */
export const duckdbApi: typeof import('@duckdb/node-api') = createRequire(import.meta.url)(
  '@duckdb/node-api',
);
