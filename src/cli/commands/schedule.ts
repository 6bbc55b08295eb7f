import type { Cron } from 'croner';
import type { CommandModule } from 'yargs';
import type { StoreConfig, SyncConfig } from '../../config.js';
import { asStoreSyncError, ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { Logger } from '../../log.js';
import {
  cliLogger,
  type JobArgs,
  parseStreamList,
  resolveJob,
  selectStores,
  withJobOptions,
} from '../context.js';
import { EXIT } from '../exit-codes.js';
import {
  Heartbeat,
  type HeartbeatArgs,
  heartbeatBounds,
  streamPulse,
  withHeartbeatOptions,
} from '../heartbeat.js';
import { childResultText, parallelStores } from './sync.js';

interface ScheduleArgs extends JobArgs, HeartbeatArgs {
  cron: string;
  parallel?: number;
  streams?: string;
  timezone?: string;
}

/**
 * The --timezone value, checked at start: croner only checks it when it first computes a run time, which
 * came after the checks that turn a bad flag into a usage error (exit 2), and it said so in its own words.
 */
function parseTimezone(value: string | undefined): string {
  if (value === undefined) return 'UTC';
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: value });
    return value;
  } catch {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `--timezone "${value}" is not a time zone: expected an IANA time zone name, e.g. Europe/Berlin, America/New_York or UTC.`,
    );
  }
}

/**
 * The signal one store's run stops on: the schedule's own (SIGTERM, SIGINT), or `maxRunMinutes` after it
 * started. Either way the run stops as an interrupt does, at a page boundary, is recorded as interrupted, and
 * the next run resumes it; a run stopped by its bound does not stop the schedule, and the next store runs.
 */
function runBound(
  stop: AbortSignal,
  maxRunMinutes: number | null,
  store: string,
  logger: Logger,
): { signal: AbortSignal; expired: () => boolean; release: () => void } {
  // Past setTimeout's range (about 24.8 days) a bound could never be reached before the next run anyway.
  if (maxRunMinutes === null || maxRunMinutes * 60_000 > 2 ** 31 - 1)
    return { signal: stop, expired: () => false, release: () => {} };
  const controller = new AbortController();
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    const message = `the run of store "${store}" went on past maxRunMinutes (${maxRunMinutes} min): stopped after the current page commits; the next run resumes it`;
    logger.warn('schedule.run_stopping', { store, maxRunMinutes, message });
    controller.abort(new StoreSyncError(ERROR_CODES.INTERNAL, message));
  }, maxRunMinutes * 60_000);
  const forward = () => controller.abort(stop.reason);
  if (stop.aborted) forward();
  else stop.addEventListener('abort', forward, { once: true });
  return {
    signal: controller.signal,
    expired: () => expired,
    release: () => {
      clearTimeout(timer);
      stop.removeEventListener('abort', forward);
    },
  };
}

/**
 * `store-sync schedule --cron "15 2 * * *"`: a long-running process that runs `sync` at each tick, for
 * containers that prefer one process to an external scheduler. Ticks never overlap (croner's protect),
 * the config is re-read every run so an edit takes effect without a restart, SIGTERM stops cleanly, and
 * a run still going after the config's maxRunMinutes is stopped the same way (see runBound).
 */
export const scheduleCommand: CommandModule<object, ScheduleArgs> = {
  command: 'schedule',
  describe: 'Run sync on a cron schedule in the foreground (for containers)',
  builder: (yargs) =>
    withHeartbeatOptions(withJobOptions(yargs))
      .option('cron', {
        type: 'string',
        demandOption: true,
        description: 'Cron pattern, e.g. "15 2 * * *" (02:15 every night)',
      })
      .option('timezone', {
        type: 'string',
        description: 'Time zone of the pattern (default UTC), e.g. Europe/Berlin',
      })
      .option('streams', {
        type: 'string',
        description: 'Comma-separated streams (default: every enabled stream)',
      })
      .option('parallel', {
        type: 'number',
        description:
          'Sync up to N stores at once at each tick, each in a child process with its own warehouse file (needs "warehouseLayout": "per-store"), as sync --parallel does',
      })
      .example('$0 schedule --cron "15 2 * * *"', 'Nightly at 02:15 UTC')
      .example('$0 schedule --cron "15 2 * * *" --parallel 4', 'Four stores at a time, a file each') as never,
  handler: async (args) => {
    const logger = cliLogger(args);
    const streams = parseStreamList(args.streams);
    const timezone = parseTimezone(args.timezone);
    // Validate the job now so a broken config, a missing token or a store with nothing to sync fails at start,
    // not at 02:15.
    const { runSync } = await import('../../../pipelines/sync.js');
    const { checkStores, syncStores } = await import('../../../pipelines/stores.js');
    const initial = await resolveJob(args, { needsApi: true });
    const chosen = selectStores(initial, args.store);
    checkStores(chosen, streams);
    // The flags are checked at start; the config's settings again at each run, which re-reads it.
    heartbeatBounds(initial, args);
    const parallel = args.parallel;
    // --parallel as sync checks it: a whole number, and refused over one warehouse file.
    parallelStores(initial, chosen, parallel);
    const { Cron } = await import('croner');
    let job: Cron;
    try {
      job = new Cron(args.cron, {
        timezone,
        protect: (running) =>
          logger.warn('schedule.skipped', {
            message: `the run started at ${running.currentRun()?.toISOString()} is still going; this tick is skipped`,
          }),
        paused: true,
      });
    } catch (error) {
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `--cron "${args.cron}" is not a cron pattern: ${(error as Error).message}`,
      );
    }
    const stop = new AbortController();
    // Every store runs, whatever became of the one before (an expired token, an API that is down, a failed
    // export): one store's failure must not stop the nightly run of the others. A signal stops the running
    // store at its next page boundary (logged as schedule.run with outcome interrupted), and no further
    // store starts.
    // With the run it belongs to, when it got as far as starting one (its _sync_runs row has the details).
    const runFailed = (store: string, failure: StoreSyncError) => {
      const runId = failure.details.runId;
      logger.error('schedule.run_failed', {
        store,
        ...(runId ? { runId } : {}),
        code: failure.code,
        message: failure.message,
      });
    };
    /**
     * With a file per store, a tick runs each store as `store-sync sync --store NAME` in a child (up to
     * --parallel at once); maxRunMinutes bounds the whole tick, and a stop reaches every child as SIGTERM.
     */
    const runChildren = async (config: SyncConfig, stores: StoreConfig[]) => {
      const { syncInParallel } = await import('../../../pipelines/parallel.js');
      const bound = runBound(stop.signal, config.maxRunMinutes, stores.map((s) => s.name).join(', '), logger);
      try {
        const outcomes = await syncInParallel({
          stores,
          parallel: parallel ?? 1,
          argv: process.argv.slice(2),
          rewrite: { drop: ['--cron', '--timezone'], command: { from: 'schedule', to: 'sync' } },
          logger,
          signal: bound.signal,
        });
        for (const o of outcomes) {
          const fields = {
            store: o.store,
            exitCode: o.exitCode,
            seconds: Number(o.seconds.toFixed(1)),
            ...(bound.expired() ? { stoppedBy: 'maxRunMinutes' } : {}),
          };
          if (o.exitCode === EXIT.OK || o.exitCode === EXIT.PARTIAL)
            logger.info('schedule.run', { ...fields, outcome: childResultText(o) });
          else
            logger.error('schedule.run_failed', {
              ...fields,
              message: o.exitCode === null ? childResultText(o) : (o.lastError ?? ''),
            });
        }
      } finally {
        bound.release();
      }
    };
    const runStores = async (config: SyncConfig, stores: StoreConfig[]) => {
      if (config.warehouseLayout === 'per-store' && stores.length > 1) return runChildren(config, stores);
      // Whether the last store's run was stopped by its bound (runBound).
      let expired = false;
      await syncStores(stores, {
        stopped: () => stop.signal.aborted,
        sync: async (store) => {
          const bound = runBound(stop.signal, config.maxRunMinutes, store.name, logger);
          // The config is re-read every run: so are the heartbeat's settings.
          const heartbeat = new Heartbeat({
            logger,
            prefix: 'stream',
            ...heartbeatBounds(config, args),
          }).start();
          try {
            return await runSync({
              config,
              store,
              streams,
              mode: 'incremental',
              logger,
              watch: (run, peek) =>
                heartbeat.watch({ ...run, stream: peek().stream }, () => streamPulse(peek())),
              signal: bound.signal,
            });
          } finally {
            heartbeat.stop();
            expired = bound.expired();
            bound.release();
          }
        },
        ran: ({ store, result }) =>
          logger.info('schedule.run', {
            store,
            runId: result.runId,
            outcome: result.outcome,
            requests: result.requests,
            seconds: Number(result.seconds.toFixed(1)),
            ...(expired ? { stoppedBy: 'maxRunMinutes' } : {}),
          }),
        failed: ({ store, error }) => runFailed(store, error),
      });
    };
    const tick = async () => {
      try {
        const config = await resolveJob(args, { needsApi: true });
        await runStores(config, selectStores(config, args.store));
      } catch (error) {
        // The config, re-read at each tick, no longer holds: no store runs this time.
        const failure = asStoreSyncError(error);
        logger.error('schedule.run_failed', { code: failure.code, message: failure.message });
      }
      const next = job.nextRun();
      if (next) logger.info('schedule.next', { at: next.toISOString() });
    };
    job.schedule(tick);
    job.resume();
    logger.info('schedule.start', { cron: args.cron, next: job.nextRun()?.toISOString() });
    await new Promise<void>((resolve) => {
      const finish = (signal: string) => {
        logger.info('schedule.stopping', { signal, message: 'stopping after the current page commits' });
        job.stop();
        stop.abort(new StoreSyncError(ERROR_CODES.INTERNAL, `stopped by ${signal}`));
        // A run in progress ends at its next page boundary; wait for it so its last commit lands. The
        // stop is logged last, once nothing runs any more.
        const wait = () => {
          if (job.isBusy()) setTimeout(wait, 100);
          else {
            logger.info('schedule.stop', { signal });
            resolve();
          }
        };
        wait();
      };
      process.once('SIGTERM', () => finish('SIGTERM'));
      process.once('SIGINT', () => finish('SIGINT'));
    });
    process.exitCode = EXIT.OK;
  },
};
