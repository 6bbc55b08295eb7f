/**
 * How DuckDB's allocator (the jemalloc it bundles, as `duckdb_je_*`) gives freed memory back to the system.
 * DuckDB builds it to keep freed pages for 5 s and then to keep them, marked lazily free, for 5 s more, all
 * counted in the process's resident memory.
 * - Most commands (a sync, export, query) return freed pages after 250 ms: their peak is what bounds them
 *   (a sync's 512 MB), and their DuckDB work is small pieces between waits.
 * - A bulk load (`ingest`, `rebuild`) keeps them for 2 s. Its DuckDB side frees and takes back the same
 *   memory all the time (a row group's blocks, each column's compression state as a full row group is
 *   written), and every page returned after 250 ms was faulted in again moments later: on a virtual machine
 *   where a page fault is dear, an ingest of 200,000 documents made 384,000–406,000 page faults with
 *   5.2–6.4 s of system time when pages are kept for 2 s, against 521,000–578,000 and 7.5–7.7 s, at about
 *   10 MB more peak (docs/performance.md, "Issue 31: freed pages kept through a bulk load").
 *
 * jemalloc reads `DUCKDB_JE_MALLOC_CONF` once, when DuckDB's library is loaded, so this module must be
 * evaluated before anything imports `@duckdb/node-api`: the command's entry (src/cli/main.ts) and the
 * benchmark's child import it first. The command is the first argument, as src/cli/commands/index.ts reads
 * it. A value already in the environment is kept.
 */
const DUCKDB_ALLOCATOR_CONF = 'dirty_decay_ms:250,muzzy_decay_ms:0';

/** DuckDB's allocator through a bulk load: freed pages kept 2 s (see above). */
const BULK_LOAD_ALLOCATOR_CONF = 'dirty_decay_ms:2000,muzzy_decay_ms:0';

/** The commands that load in bulk (names of src/cli/commands/index.ts's COMMANDS). */
const BULK_LOAD_COMMANDS: readonly string[] = ['ingest', 'rebuild'];

/** DuckDB's allocator setting for a run of `command` (the CLI's first argument). */
function duckdbAllocatorConf(command: string | undefined): string {
  return command !== undefined && BULK_LOAD_COMMANDS.includes(command)
    ? BULK_LOAD_ALLOCATOR_CONF
    : DUCKDB_ALLOCATOR_CONF;
}

process.env.DUCKDB_JE_MALLOC_CONF ??= duckdbAllocatorConf(process.argv[2]);
