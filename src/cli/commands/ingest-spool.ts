import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { DrainRun } from '../../../pipelines/drain.js';
import type { SyncConfig } from '../../config.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import {
  applyWaitForLock,
  cliLogger,
  type JobArgs,
  jobFromFlags,
  resolveJob,
  selectStores,
  type WaitForLockArgs,
  type WorkersArgs,
  workersFrom,
} from '../context.js';
import { exitCodeForOutcome } from '../exit-codes.js';
import { renderRunSummary } from '../output.js';
import { StopOnSignal } from '../stop.js';
import { drainSummary } from './ingest-summary.js';
import { type SchemaContractArgs, withSchemaContract } from './schema-contract.js';

/**
 * `store-sync ingest --spool [DIR]`: drains the closed files of the receivers' spools (every store with a
 * receiver block, or --store NAME; or the folder DIR) into the warehouse, one transaction per file, then
 * deletes or archives them (docs/receiver.md, "Draining into the warehouse").
 */

export const SPOOL_OPTION = {
  type: 'string',
  description:
    "Drain the closed files of the receivers' spools (each store with a receiver block, or --store), or of the spool folder given, instead of reading inputs",
} as const;

export interface IngestSpoolArgs extends JobArgs, WorkersArgs, SchemaContractArgs, WaitForLockArgs {
  spool: string;
  inputs?: string[];
  json?: boolean;
}

interface Spool {
  store: string;
  spoolDir: string;
}

/** The store's `streams.documents.schemaContract` (or --schema-contract's, already in the config). */
const contractOf = (config: SyncConfig, store: string) =>
  config.stores.find((s) => s.name === store)?.documents.schemaContract;

const usage = (message: string) => new StoreSyncError(ERROR_CODES.USAGE, message);

async function spoolsOf(config: SyncConfig, args: IngestSpoolArgs): Promise<Spool[]> {
  if (args.spool === '') {
    if (jobFromFlags(args))
      throw usage('--spool needs a folder when there is no config file: --spool DIR --warehouse PATH.');
    const { receiversFromConfig } = await import('../../receive/setup.js');
    return receiversFromConfig(config, args.store === undefined ? {} : { store: args.store }).map((s) => ({
      store: s.name,
      spoolDir: s.receiver.spoolDir,
    }));
  }
  const [store] = selectStores(config, args.store);
  if (args.store === undefined && config.stores.length > 1)
    throw usage(
      `the config has ${config.stores.length} stores: pass --store NAME to say whose spool ${args.spool} is.`,
    );
  const spoolDir = path.resolve(args.spool);
  if (!(await stat(spoolDir).catch(() => null))?.isDirectory())
    throw new StoreSyncError(ERROR_CODES.USAGE, `the spool folder ${spoolDir} does not exist`, {
      details: { field: 'spool' },
    });
  return [{ store: store!.name, spoolDir }];
}

export async function ingestSpool(args: IngestSpoolArgs): Promise<void> {
  if (args.inputs?.length)
    throw usage(
      '--spool drains the receiver spool and reads no other input: ingest the files in another run.',
    );
  const workers = workersFrom(args);
  const logger = cliLogger(args);
  const config = withSchemaContract(
    await resolveJob(args, { needsApi: false, oneWarehouse: 'ingest --spool' }),
    args,
  );
  applyWaitForLock(config, args);
  const spools = await spoolsOf(config, args);
  const { drainStoreRun, hasWaitingFiles, notDrained } = await import('../../../pipelines/drain.js');
  const drains = new Map<Spool, DrainRun>();
  const waiting: Spool[] = [];
  for (const spool of spools) {
    if (await hasWaitingFiles(spool.spoolDir)) waiting.push(spool);
    else drains.set(spool, notDrained(spool.store, spool.spoolDir));
  }
  let stopped: NodeJS.Signals | null = null;
  // Nothing to drain (a drain every minute, say): the warehouse is not even opened.
  if (waiting.length > 0) {
    const { openWarehouse } = await import('../../load/index.js');
    const warehouse = await openWarehouse(config.warehouse, {
      logger,
      readCopy: config.readCopy,
      waitForLockSeconds: config.waitForLockSeconds,
    });
    // Ctrl-C or SIGTERM stops after the file being loaded, which commits and is removed.
    const stop = new StopOnSignal(logger, 'ingest.stopping', 'stopping after the spool file being loaded');
    try {
      const { failure } = await stop.run(async (signal) => {
        for (const spool of waiting) {
          const contract = contractOf(config, spool.store);
          const drain = signal.aborted
            ? notDrained(spool.store, spool.spoolDir, true)
            : await drainStoreRun(warehouse, config, spool, {
                logger,
                signal,
                ...(contract === undefined ? {} : { contract }),
                ...(workers === undefined ? {} : { workers }),
              });
          drains.set(spool, drain);
        }
      });
      if (failure) throw failure;
      if ([...drains.values()].some((d) => d.interrupted)) stopped = stop.received ?? 'SIGTERM';
    } finally {
      stop.release();
      await warehouse.close();
    }
  }
  const report = spools.map((s) => drains.get(s)!);
  // The JSON is each spool's drain as before, without the run fields the table uses.
  if (args.json) {
    const spools = report.map(({ runId: _runId, seconds: _seconds, outcome: _outcome, ...drain }) => drain);
    process.stdout.write(`${JSON.stringify({ spools })}\n`);
  } else {
    const { newFieldsText } = await import('../../load/schema-changes.js');
    process.stdout.write(renderRunSummary(drainSummary(report), newFieldsText));
  }
  if (stopped)
    throw new StoreSyncError(
      ERROR_CODES.INTERNAL,
      `interrupted by ${stopped}: every spool file loaded is committed and removed; run the same command again to drain the rest.`,
    );
  process.exitCode = exitCodeForOutcome({
    failedStreams: 0,
    rejections: report.reduce((n, d) => n + d.rejections, 0),
  });
}
