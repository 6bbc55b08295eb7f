/**
 * The switch that turns the fast path (fast.ts) off, in a module of its own so that the command line can
 * check it without loading the normalizer. `STORE_SYNC_FAST_PATH=0` sends every document the object path's
 * way (JSON.parse and normalizer.ts); `1` or unset keeps the fast path on. `--no-fast-path` on ingest,
 * rebuild and sync (whose spool drain reads documents) sets it for their run, and worker threads inherit it
 * with the environment. A document loads the same either way, only slower without the fast path: a user
 * who suspects it can rule it out in one command (docs/ingest.md).
 */
export const FAST_PATH_VARIABLE = 'STORE_SYNC_FAST_PATH';

/** Whether the fast path is on (any value but `0`; the command refuses values other than `0` and `1`). */
export const fastPathOn = (env: NodeJS.ProcessEnv = process.env): boolean => env[FAST_PATH_VARIABLE] !== '0';
