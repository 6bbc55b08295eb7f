import type { Argv, CommandModule } from 'yargs';
import type { SyncResult } from '../../../pipelines/sync.js';
import { readToken } from '../../config.js';
import type { SyncMode } from '../../contracts.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { DateWindow } from '../../extract/index.js';
import { redact } from '../../log.js';
import {
  cliLogger,
  type JobArgs,
  parseStreamList,
  resolveJob,
  selectStores,
  withJobOptions,
} from '../context.js';
import { EXIT, type ExitCode } from '../exit-codes.js';
import { renderTable } from '../output.js';
import { createProgressDisplay } from '../progress.js';

interface SyncArgs extends JobArgs {
  streams?: string;
  'full-refresh'?: boolean;
}

interface BackfillArgs extends JobArgs {
  streams?: string;
  from: string;
  to?: string;
}

const SUMMARY_COLUMNS = ['store', 'stream', 'status', 'pages', 'records', 'rejections', 'requests', 'note'];

function summaryRows(results: SyncResult[]): unknown[][] {
  return results.flatMap((run) =>
    run.streams.map((s) => [
      run.store,
      s.stream,
      s.status,
      s.pages,
      s.records,
      s.rejections,
      s.requests,
      s.message ?? (s.resumed ? 'resumed' : ''),
    ]),
  );
}

/** Exit code of a whole command over several stores: the worst store decides. */
function exitCodeOf(results: SyncResult[]): ExitCode {
  if (results.some((r) => r.outcome === 'failed')) return EXIT.FAILED;
  if (results.some((r) => r.outcome !== 'succeeded')) return EXIT.PARTIAL;
  return EXIT.OK;
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
  args: JobArgs & { streams?: string },
  mode: SyncMode,
  window?: DateWindow,
): Promise<void> {
  const streams = parseStreamList(args.streams);
  const { runSync } = await import('../../../pipelines/sync.js');
  const config = await resolveJob(args, { needsApi: true });
  const stores = selectStores(config, args.store);
  // Every store's token is checked before the first store runs: a missing variable for the second store
  // must not leave the warehouse half-updated by the first (issue 5: bad input changes nothing).
  for (const store of stores) readToken(store);
  // Bars only on a terminal, and never with JSON logs: a log shipper wants lines, not redraws.
  const progress = createProgressDisplay(Boolean(process.stderr.isTTY) && args['log-format'] !== 'json');
  const logger = cliLogger(args, progress.log);
  const results: SyncResult[] = [];
  // One interrupt stops the whole command: the running store stops at its next page boundary and no
  // further store starts.
  const stop = new AbortController();
  let interrupted: string | null = null;
  const onSignal = (signal: NodeJS.Signals) => {
    interrupted = signal;
    stop.abort(
      new StoreSyncError(
        ERROR_CODES.INTERNAL,
        'interrupted; the next run resumes from the last committed page',
      ),
    );
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    for (const store of stores) {
      if (interrupted) break;
      try {
        results.push(
          await runSync({
            config,
            store,
            streams,
            mode,
            ...(window ? { window } : {}),
            logger,
            onProgress: progress.update,
            signal: stop.signal,
          }),
        );
      } catch (error) {
        // Stopped before its streams began (during the access probe): the interrupt is the story.
        if (!interrupted) throw error;
      }
    }
  } finally {
    progress.stop();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
  // Messages come from errors that may quote a server's reply; masking again costs nothing.
  process.stdout.write(redact(`${renderTable(SUMMARY_COLUMNS, summaryRows(results))}\n`));
  for (const run of results) {
    process.stdout.write(
      redact(
        `${run.store}: ${run.outcome.replace(/_/g, ' ')} in ${run.seconds.toFixed(1)} s, ${run.requests} requests, ${run.retries} retries (run ${run.runId})\n`,
      ),
    );
  }
  if (interrupted) {
    const skipped = stores.filter((s) => !results.some((r) => r.store === s.name)).map((s) => s.name);
    throw new StoreSyncError(
      ERROR_CODES.INTERNAL,
      `interrupted by ${interrupted}${skipped.length ? `; store ${skipped.join(', ')} not started` : ''}. Run the same command again: it resumes from the last committed page.`,
    );
  }
  process.exitCode = exitCodeOf(results);
}

const withStreams = <T>(yargs: Argv<T>) =>
  withJobOptions(yargs).option('streams', {
    type: 'string',
    description:
      'Comma-separated streams: locations, metadata_definitions, products, subscriptions, fulfillment_orders',
  });

export const syncCommand: CommandModule<object, SyncArgs> = {
  command: 'sync',
  describe: 'Incremental sync of every enabled stream (resumes an interrupted run)',
  builder: (yargs) =>
    withStreams(yargs)
      .option('full-refresh', {
        type: 'boolean',
        description: 'Re-read everything (does not move the nightly watermarks)',
      })
      .example('$0 sync', 'Nightly run from ./sync.config.json')
      .example('$0 sync --store eu --streams subscriptions', 'One store, one stream')
      .example(
        '$0 sync --base-url https://shop.example.com/api/ --token-env SHOP_TOKEN --warehouse shop.duckdb',
        'One-off job, no config file',
      ) as never,
  handler: async (args) => runSyncCommand(args, args['full-refresh'] ? 'full_refresh' : 'incremental'),
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
