import type { Logger } from '../log.js';

/**
 * Ctrl-C and SIGTERM for a command that stops at a safe point (sync at a page boundary, ingest at a batch
 * boundary, rebuild before a block): the first signal is logged as `event`, with what stopping will do, and
 * aborts `signal` (with `reason`, when given, as the abort reason that the work in flight rejects with). The
 * handlers are once-only, so a second signal ends the process at once, by Node's default handling.
 */
export class StopOnSignal {
  private readonly controller = new AbortController();
  readonly signal = this.controller.signal;
  /** The signal that asked to stop, once one has. */
  received: NodeJS.Signals | null = null;
  private readonly onSignal: (signal: NodeJS.Signals) => void;

  constructor(logger: Logger, event: string, whatStoppingDoes: string, reason?: Error) {
    this.onSignal = (signal) => {
      this.received = signal;
      logger.warn(event, { signal, message: `${whatStoppingDoes}; signal again to stop at once` });
      this.controller.abort(reason);
    };
    process.once('SIGINT', this.onSignal);
    process.once('SIGTERM', this.onSignal);
  }

  /**
   * Runs the job with the handlers in place. Its failure is returned, not thrown, so that the caller records
   * the run's outcome first. The handlers stay until `release`: a signal that comes after the job, while the
   * caller records the run, is then taken as one that came too late to stop anything, instead of killing the
   * process between a committed job and its `_sync_runs` row.
   */
  async run<T>(job: (signal: AbortSignal) => Promise<T>): Promise<{ result?: T; failure?: unknown }> {
    try {
      return { result: await job(this.signal) };
    } catch (failure) {
      return { failure: failure ?? new Error('the job failed without an error') };
    }
  }

  /** Removes the handlers: from here on a signal has Node's default effect. */
  release(): void {
    process.off('SIGINT', this.onSignal);
    process.off('SIGTERM', this.onSignal);
  }
}

/** The `_sync_runs` outcome of a run that failed, was stopped, or finished with or without rejections. */
export function runOutcome(failure: unknown, stopped: boolean, rejections: number): string {
  if (failure) return 'failed';
  if (stopped) return 'interrupted';
  return rejections > 0 ? 'completed_with_rejections' : 'succeeded';
}
