/** State: stream cursors and watermarks (`_sync_state`) and the run log (`_sync_runs`). */

export {
  CLOSE_ABANDONED_RUNS_SQL,
  finishRunSql,
  newRunId,
  type RunFinish,
  type RunStart,
  startRunSql,
} from './runs.js';
export { cursorInProgress, listStates, readState, type SavedState, writeStateSql } from './store.js';
