import type { Argv, CommandModule } from 'yargs';
import type { ChildOutcome } from '../../../pipelines/parallel.js';
import type { StoreFailure, StoreOutcome } from '../../../pipelines/stores.js';
import type { StoreConfig, SyncConfig } from '../../config.js';
import type { SyncMode } from '../../contracts.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { DateWindow } from '../../extract/index.js';
import { STREAM_NAMES } from '../../streams.js';
import {
  applyRateLimit,
  applyWaitForLock,
  cliLogger,
  type FastPathArgs,
  integerOption,
  type JobArgs,
  parseStreamList,
  type RateLimitArgs,
  resolveJob,
  selectStores,
  useFastPathSwitch,
  type WaitForLockArgs,
  withFastPathOption,
  withJobOptions,
  withRateLimitOption,
  withWaitForLockOption,
} from '../context.js';
import { EXIT, exitCodeForError, exitCodeForRuns } from '../exit-codes.js';
import {
  Heartbeat,
  type HeartbeatArgs,
  heartbeatBounds,
  streamPulse,
  withHeartbeatOptions,
} from '../heartbeat.js';
import { type RunSummary, renderRunSummary } from '../output.js';
import { StopOnSignal } from '../stop.js';
import { type SchemaContractArgs, withSchemaContract, withSchemaContractOption } from './schema-contract.js';

interface SyncArgs
  extends JobArgs,
    FastPathArgs,
    RateLimitArgs,
    SchemaContractArgs,
    HeartbeatArgs,
    WaitForLockArgs {
  streams?: string;
  'full-refresh'?: boolean;
  parallel?: number;
}

interface BackfillArgs extends JobArgs, RateLimitArgs, SchemaContractArgs, HeartbeatArgs, WaitForLockArgs {
  streams?: string;
  parallel?: number;
  from: string;
  to?: string;
}

/** The sync's summary: a row per stream, a line per store (src/cli/output.ts renderRunSummary). */
function syncSummary(outcomes: StoreOutcome[]): RunSummary {
  return {
    part: 'stream',
    counts: ['pages', 'records', 'rejections', 'requests'],
    rows: outcomes.flatMap((o) => [
      ...(o.result?.streams ?? []).map((s) => ({
        store: o.store,
        part: s.stream,
        status: s.status,
        counts: [s.pages, s.records, s.rejections, s.requests],
        note: s.message ?? (s.resumed ? 'resumed' : ''),
      })),
      ...(o.error
        ? [
            {
              store: o.store,
              part: o.result ? 'export' : '-',
              status: 'failed',
              counts: [0, 0, 0, 0],
              note: o.error.message,
            },
          ]
        : []),
    ]),
    stores: outcomes.map((o) => {
      const run = o.result;
      const newFields = run?.newFields ?? [];
      return o.error || !run
        ? { store: o.store, error: o.error!.message, newFields }
        : {
            store: o.store,
            outcome: run.outcome,
            seconds: run.seconds,
            details: [`${run.requests} requests`, `${run.retries} retries`],
            ref: `run ${run.runId}`,
            newFields,
          };
    }),
  };
}

/** `describeNewFields` is schema-changes.ts's `newFieldsText`, loaded with the pipelines (see main.ts). */
function printSummary(
  outcomes: StoreOutcome[],
  describeNewFields: (entry: { table: string; fields: string[] }) => string,
): void {
  process.stdout.write(renderRunSummary(syncSummary(outcomes), describeNewFields));
}

const DAY = /^\d{4}-\d{2}-\d{2}$/;
function parseDay(value: string | undefined, flag: string): string | undefined {
  if (value === undefined) return undefined;
  const date = new Date(`${value}T00:00:00Z`);
  if (!DAY.test(value) || Number.isNaN(date.getTime()) || date.toISOString().slice(0, 10) !== value) {
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `${flag} "${value}" is not a date: expected YYYY-MM-DD, e.g. 2024-01-31.`,
    );
  }
  return value;
}

export function backfillWindow(from: string, to: string | undefined, today: Date = new Date()): DateWindow {
  const start = parseDay(from, '--from')!;
  const end = parseDay(to, '--to') ?? today.toISOString().slice(0, 10);
  if (start > end) throw new StoreSyncError(ERROR_CODES.USAGE, `--from ${start} is later than --to ${end}.`);
  return { from: start, to: end };
}

async function runSyncCommand(
  args: JobArgs &
    RateLimitArgs &
    SchemaContractArgs &
    HeartbeatArgs &
    WaitForLockArgs & { streams?: string; parallel?: number },
  mode: SyncMode,
  window?: DateWindow,
): Promise<void> {
  const streams = parseStreamList(args.streams);
  const { runSync } = await import('../../../pipelines/sync.js');
  const { checkStores, syncStores } = await import('../../../pipelines/stores.js');
  const { newFieldsText } = await import('../../load/schema-changes.js');
  const config = withSchemaContract(await resolveJob(args, { needsApi: true }), args);
  applyRateLimit(config, args);
  applyWaitForLock(config, args);
  const stores = selectStores(config, args.store);
  checkStores(stores, streams);
  if (parallelStores(config, stores, args.parallel)) {
    await runInChildren(args, config, stores, args.parallel ?? 1);
    return;
  }
  const { progressFor } = await import('../progress.js');
  const progress = progressFor(args);
  const logger = cliLogger(args, progress.log);
  const heartbeat = new Heartbeat({ logger, prefix: 'stream', ...heartbeatBounds(config, args) }).start();
  const outcomes: StoreOutcome[] = [];
  // One interrupt stops the whole command: the running store stops at its next page boundary and no
  // further store starts. The requests in flight reject with the reason, which is the interrupt's story.
  const stop = new StopOnSignal(
    logger,
    'sync.stopping',
    'stopping at the next page boundary; no further store starts',
    new StoreSyncError(
      ERROR_CODES.INTERNAL,
      'interrupted; the next run resumes from the last committed page',
    ),
  );
  const storeFailed = (outcome: StoreFailure) => {
    const failure = outcome.error;
    // One store: its error is the command's, told as one paragraph after its summary, if it has one. So is a
    // usage error (another writer, an unusable warehouse or Parquet folder): the operator must change
    // something, and the stores after would meet most of them again.
    if (stores.length === 1 || exitCodeForError(failure) === EXIT.USAGE) {
      if (outcome.result) outcomes.push(outcome);
      if (outcomes.length > 0) printSummary(outcomes, newFieldsText);
      throw failure;
    }
    // Several stores: one store's failure (an expired token, an API that is down, an export that failed
    // after its sync) must not stop the nightly run of the others.
    const runId = outcome.result?.runId ?? failure.details.runId;
    logger.error('store.failed', {
      store: outcome.store,
      ...(runId ? { runId } : {}),
      code: failure.code,
      message: failure.message,
    });
    outcomes.push(outcome);
  };
  const { failure } = await stop.run((signal) =>
    syncStores(stores, {
      stopped: () => stop.received !== null,
      // An error that came with the interrupt: the interrupt is the story, told below.
      causedByStop: () => stop.received !== null,
      sync: (store) =>
        runSync({
          config,
          store,
          streams,
          mode,
          ...(window ? { window } : {}),
          logger,
          onProgress: progress.update,
          watch: (run, peek) => {
            // The bar appears as the stream starts: one whose first page is slow (or never comes) shows too.
            progress.update(peek());
            return heartbeat.watch({ ...run, stream: peek().stream }, () => streamPulse(peek()));
          },
          signal,
        }),
      ran: (outcome) => outcomes.push(outcome),
      // A store whose export failed after its sync: the summary shows what the sync did, then the export's row.
      failed: storeFailed,
    }),
  );
  // Every store's run is recorded by now (runSync records its own).
  stop.release();
  heartbeat.stop();
  progress.stop();
  if (failure) throw failure;
  printSummary(outcomes, newFieldsText);
  const interrupted = stop.received;
  if (interrupted) {
    const skipped = stores.filter((s) => !outcomes.some((o) => o.store === s.name)).map((s) => s.name);
    throw new StoreSyncError(
      ERROR_CODES.INTERNAL,
      `interrupted by ${interrupted}${skipped.length ? `; store ${skipped.join(', ')} not started` : ''}. Run the same command again: it resumes from the last committed page.`,
    );
  }
  const failures = outcomes.flatMap((o) => (o.error ? [{ store: o.store, error: o.error }] : []));
  if (failures.length > 0) {
    // The command ends with one error (a command.failed event with --log-format json) naming each store
    // that failed and why; it exits 1 like any failure. The summary above shows what every store did.
    throw new StoreSyncError(
      failures[0]!.error.code,
      `${failures.length === stores.length ? `all ${stores.length} stores failed` : `${failures.length} of ${stores.length} stores failed; the others ran`} (see the summary). ${failures.map((f) => `${f.store}: ${f.error.message}`).join(' ')}`,
      { cause: failures[0]!.error },
    );
  }
  process.exitCode = exitCodeForRuns(outcomes.flatMap((o) => (o.result ? [o.result] : [])));
}

/**
 * Whether the stores run in child processes: with `--parallel N` over several stores, and always over several
 * stores with a file each (one process then writes one file). One warehouse file admits one writer, so
 * `--parallel` above 1 with warehouseLayout "single" is refused before anything runs.
 */
export function parallelStores(
  config: SyncConfig,
  stores: readonly StoreConfig[],
  parallel: number | undefined,
): boolean {
  if (parallel !== undefined) integerOption('parallel', parallel, 1, 64);
  if (config.warehouseLayout === 'single') {
    if ((parallel ?? 1) > 1)
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `--parallel ${parallel}: every store is in the one warehouse ${config.warehouse}, and a DuckDB file has one writer; set "warehouseLayout": "per-store" in the config (each store in warehouses/<store>.duckdb) to sync stores in parallel, or leave --parallel out.`,
      );
    return false;
  }
  return stores.length > 1;
}

const CHILD_RESULTS: Readonly<Record<number, string>> = {
  [EXIT.OK]: 'succeeded',
  [EXIT.FAILED]: 'failed',
  [EXIT.USAGE]: 'usage error',
  [EXIT.PARTIAL]: 'partial',
};

/** What became of a store's child process, by its exit code (any other code: failed), signal, or neither. */
export function childResultText(outcome: ChildOutcome): string {
  if (outcome.exitCode === null) return outcome.signal ? `killed by ${outcome.signal}` : 'not started';
  return CHILD_RESULTS[outcome.exitCode] ?? 'failed';
}

/** Runs each store in a child process (pipelines/parallel.ts), prints a table of the stores, exits the worst code. */
async function runInChildren(
  args: JobArgs & { parallel?: number },
  config: SyncConfig,
  stores: readonly StoreConfig[],
  parallel: number,
): Promise<void> {
  const { syncInParallel, worstExitCode } = await import('../../../pipelines/parallel.js');
  const { storeWarehouse } = await import('../../config.js');
  const logger = cliLogger(args);
  const stop = new StopOnSignal(logger, 'sync.stopping', 'stopping every store at its next page boundary');
  let outcomes: Awaited<ReturnType<typeof syncInParallel>>;
  try {
    outcomes = await syncInParallel({
      stores,
      parallel,
      argv: process.argv.slice(2),
      logger,
      signal: stop.signal,
    });
  } finally {
    stop.release();
  }
  const { renderTable } = await import('../output.js');
  process.stdout.write(
    `${renderTable(
      ['store', 'exit', 'result', 'seconds', 'warehouse', 'note'],
      outcomes.map((o) => [
        o.store,
        o.exitCode,
        childResultText(o),
        Number(o.seconds.toFixed(1)),
        storeWarehouse(config, o.store),
        o.exitCode === 0 ? '' : (o.lastError ?? ''),
      ]),
    )}\n${outcomes.length} stores, up to ${parallel} at once; ${outcomes.filter((o) => o.exitCode === 0).length} succeeded\n`,
  );
  process.exitCode = worstExitCode(outcomes);
}

const withStreams = <T>(yargs: Argv<T>) =>
  withWaitForLockOption(
    withHeartbeatOptions(
      withRateLimitOption(
        withSchemaContractOption(withJobOptions(yargs))
          .option('streams', {
            type: 'string',
            description: `Comma-separated streams: ${STREAM_NAMES.join(', ')}`,
          })
          .option('parallel', {
            type: 'number',
            description:
              'Sync up to N stores at once, each in a child process with its own warehouse file (needs "warehouseLayout": "per-store"); one store\'s failure never stops the others, the exit code is the worst store\'s',
          }),
      ),
    ),
  );

export const syncCommand: CommandModule<object, SyncArgs> = {
  command: 'sync',
  describe: 'Incremental sync of every enabled stream (resumes an interrupted run)',
  builder: (yargs) =>
    // The fast path reads the documents of the receivers' spools, which a sync drains after its streams.
    withFastPathOption(withStreams(yargs))
      .option('full-refresh', {
        type: 'boolean',
        description: 'Re-read everything (does not move the nightly watermarks)',
      })
      .example('$0 sync', 'Nightly run from ./sync.config.json')
      .example('$0 sync --store eu --streams subscriptions', 'One store, one stream')
      .example('$0 sync --parallel 4', 'Four stores at a time, each into warehouses/<store>.duckdb')
      .example('$0 sync --rate-limit 1', 'One request per second this time, whatever the config says')
      .example(
        '$0 sync --base-url https://shop.example.com/api/ --token-env SHOP_TOKEN --warehouse shop.duckdb',
        'One-off job, no config file',
      ) as never,
  handler: async (args) => {
    useFastPathSwitch(args);
    await runSyncCommand(args, args['full-refresh'] ? 'full_refresh' : 'incremental');
  },
};

export const backfillCommand: CommandModule<object, BackfillArgs> = {
  command: 'backfill',
  describe: 'Load a date range once, without moving the nightly watermarks',
  builder: (yargs) =>
    withStreams(yargs)
      .option('from', { type: 'string', demandOption: true, description: 'First day, YYYY-MM-DD' })
      .option('to', { type: 'string', description: 'Last day, YYYY-MM-DD (default today)' })
      .example(
        '$0 backfill --from 2024-01-01 --to 2024-06-30 --streams subscriptions',
        'Half a year of subscriptions',
      ) as never,
  handler: async (args) => runSyncCommand(args, 'backfill', backfillWindow(args.from, args.to)),
};
