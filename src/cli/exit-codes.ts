import { ERROR_CODES, type ErrorCode, isStoreSyncError } from '../errors.js';

/**
 * Exit codes of every command (docs/operations.md, "Exit codes"): the only place that maps an error or a run's
 * outcome to one. Commands whose answer is a plain yes or no (doctor's checks, a verify that finds stale files)
 * pick one of these constants themselves.
 */
export const EXIT = {
  OK: 0,
  FAILED: 1,
  USAGE: 2,
  PARTIAL: 3,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

const USAGE_CODES = new Set<ErrorCode>([
  ERROR_CODES.USAGE,
  ERROR_CODES.CONFIG_INVALID,
  ERROR_CODES.TOKEN_MISSING,
  ERROR_CODES.UNSAFE_URL,
  ERROR_CODES.WAREHOUSE_PATH,
  ERROR_CODES.WAREHOUSE_LOCKED,
  ERROR_CODES.EXPORT_LOCKED,
]);

/** The exit code for an error that ended a command. */
export function exitCodeForError(error: unknown): ExitCode {
  if (isStoreSyncError(error) && USAGE_CODES.has(error.code)) return EXIT.USAGE;
  return EXIT.FAILED;
}

/** The exit code for a command that finished: rejections or a failed stream make it partial. */
export function exitCodeForOutcome(outcome: {
  failedStreams: number;
  rejections: number;
  skippedStreams?: number;
}): ExitCode {
  if (outcome.failedStreams > 0 || outcome.rejections > 0 || (outcome.skippedStreams ?? 0) > 0)
    return EXIT.PARTIAL;
  return EXIT.OK;
}

/**
 * The exit code of a command over several stores' runs: the worst store decides. A failed run makes it 1 (a
 * store whose run ended in an error ends the command with that error, also 1); else a run with a failed or
 * skipped stream, or rejections, makes it 3.
 */
export function exitCodeForRuns(runs: readonly { outcome: string }[]): ExitCode {
  if (runs.some((r) => r.outcome === 'failed')) return EXIT.FAILED;
  if (runs.some((r) => r.outcome !== 'succeeded')) return EXIT.PARTIAL;
  return EXIT.OK;
}

/**
 * The exit code of `status`: 3 when a stream is stale (no success within the freshness bound, or none ever) or
 * its last run did not complete it (failed, interrupted, skipped), so `status || alert` catches both.
 */
export function exitCodeForStatus(streams: readonly { stale: boolean; failing: boolean }[]): ExitCode {
  return streams.some((s) => s.stale || s.failing) ? EXIT.PARTIAL : EXIT.OK;
}
