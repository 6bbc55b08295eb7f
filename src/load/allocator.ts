/**
 * How DuckDB's allocator (the jemalloc it bundles, as `duckdb_je_*`) gives freed memory back to the system.
 * DuckDB builds it to keep freed pages for 5 s and then to keep them, marked lazily free, for 5 s more, all
 * counted in the process's resident memory. Through an ingest that is memory DuckDB has freed and still
 * holds, so freed pages are returned after 250 ms: a lower peak for no measurable time
 * (docs/performance.md, "Settings and the measurements behind them").
 *
 * jemalloc reads `DUCKDB_JE_MALLOC_CONF` once, when DuckDB's library is loaded, so this module must be
 * evaluated before anything imports `@duckdb/node-api`: the command's entry (src/cli/main.ts) and the
 * benchmark's child import it first. A value already in the environment is kept.
 */
export const DUCKDB_ALLOCATOR_CONF = 'dirty_decay_ms:250,muzzy_decay_ms:0';

process.env.DUCKDB_JE_MALLOC_CONF ??= DUCKDB_ALLOCATOR_CONF;
