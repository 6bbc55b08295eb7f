/**
 * The switch that turns observed-version history (history.ts) off, in a module of its own so that the command
 * line can set it without loading the model. `STORE_SYNC_HISTORY=0` writes no `<table>_history` version (and a
 * rebuild re-derives none); unset or `1` keeps them. The config's `keepHistory: false` sets it for a command's
 * run (context.ts), and ingest's worker threads and `sync --parallel`'s children inherit it with the environment.
 */
export const HISTORY_VARIABLE = 'STORE_SYNC_HISTORY';

/** Whether loads write history versions (any value but `0`). */
export const historyOn = (env: NodeJS.ProcessEnv = process.env): boolean => env[HISTORY_VARIABLE] !== '0';
