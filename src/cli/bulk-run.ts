import type { LogFields, Logger } from '../log.js';
import type { RunFinish } from '../state/runs.js';
import { Heartbeat, type Pulse } from './heartbeat.js';
import type { BarState, ProgressDisplay } from './progress.js';
import { runOutcome, StopOnSignal } from './stop.js';

/**
 * A bulk load as the CLI runs it (ingest, rebuild): Ctrl-C or SIGTERM stops it at its next safe point
 * (StopOnSignal), a heartbeat logs its pulse and warns when it stalls, and a bar shows it on a terminal.
 */
export interface BulkRunSpec<Progress> {
  logger: Logger;
  /** The command: its heartbeat's prefix, and the prefix of its `.stopping` and `.not_stopped` events. */
  command: string;
  /** What the first signal does, as the `.stopping` line says. */
  whatStoppingDoes: string;
  /** Why a signal that came once the work was done stopped nothing, as the `.not_stopped` line says. */
  whyNotStopped: string;
  bounds: { intervalMs: number; stallMs: number };
  /** The fields that name the work on its heartbeat lines. */
  watched: LogFields;
  pulse: (latest: Progress | null) => Pulse;
  progress: ProgressDisplay;
  bar: (latest: Progress, seconds: number) => BarState;
}

/** What a bulk load's summary says of how it ended. */
export interface BulkSummary {
  rejections: number;
  /** Stopped by a signal before it was done. */
  interrupted?: boolean;
}

/** What came of the work, for the command to record. */
export interface BulkRunEnd<T> {
  /** The work's result; undefined when it failed. */
  result: T | undefined;
  /** Its failure, returned rather than thrown so that the run's outcome is recorded first. */
  failure: unknown;
  /** The signal that asked it to stop, if one came. */
  signal: NodeJS.Signals | null;
  /** The work was stopped by the signal before it was done (its summary says so). */
  stopped: boolean;
  rejections: number;
  /** The `_sync_runs` fields that follow from the above: outcome, no requests, and the failure's message. */
  finish: Omit<RunFinish, 'counts'>;
  startedAt: number;
}

/**
 * Runs `job` as a bulk run (BulkRunSpec), then `end` with what came of it. The signal handlers stay in place
 * through `end`, so a signal that comes while `end` records the run is taken as one that came too late to
 * stop anything (StopOnSignal.run). `end` throws for a failed or stopped run; once it returns, a signal that
 * came anyway is logged as having stopped nothing.
 */
export async function runBulk<T extends BulkSummary, Progress>(
  spec: BulkRunSpec<Progress>,
  job: (signal: AbortSignal, onProgress: (latest: Progress) => void) => Promise<T>,
  end: (outcome: BulkRunEnd<T>) => Promise<void>,
): Promise<void> {
  const { logger, command, progress } = spec;
  const stop = new StopOnSignal(logger, `${command}.stopping`, spec.whatStoppingDoes);
  const heartbeat = new Heartbeat({ logger, prefix: command, ...spec.bounds }).start();
  const startedAt = Date.now();
  let latest: Progress | null = null;
  heartbeat.watch(spec.watched, () => spec.pulse(latest));
  try {
    const { result, failure } = await stop.run((signal) =>
      job(signal, (now) => {
        latest = now;
        progress.show(spec.bar(now, (Date.now() - startedAt) / 1000));
      }),
    );
    heartbeat.stop();
    progress.stop();
    const stopped = result?.interrupted === true;
    const rejections = result?.rejections ?? 0;
    const finish = {
      outcome: runOutcome(failure, stopped, rejections),
      requests: 0,
      retries: 0,
      ...(failure ? { error: failure instanceof Error ? failure.message : String(failure) } : {}),
    };
    await end({ result, failure, signal: stop.received, stopped, rejections, finish, startedAt });
    if (stop.received)
      logger.warn(`${command}.not_stopped`, { signal: stop.received, message: spec.whyNotStopped });
  } finally {
    heartbeat.stop();
    progress.stop();
    stop.release();
  }
}
