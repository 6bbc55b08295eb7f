/** State: stream cursors and watermarks (`_sync_state`) and the run log (`_sync_runs`). */

export {
  type CommittedProgress,
  type RunningFile,
  type RunningRun,
  RunningRuns,
  type RunningStream,
  readRunning,
  runningFilePath,
} from './running.js';
export {
  ABANDONED_RUN_MESSAGE,
  CLOSE_ABANDONED_RUNS_SQL,
  finishRunSql,
  newestStreamRuns,
  newRunId,
  type RunFinish,
  type RunStart,
  type StreamRun,
  type StreamRunOutcome,
  startRunSql,
} from './runs.js';
export { cursorInProgress, listStates, readState, type SavedState, writeStateSql } from './store.js';
