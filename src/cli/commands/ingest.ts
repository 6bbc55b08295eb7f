import type { CommandModule } from 'yargs';
import type { IngestProgress, IngestSummary } from '../../../pipelines/ingest.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import { runBulk } from '../bulk-run.js';
import {
  applyWaitForLock,
  cliLogger,
  type FastPathArgs,
  integerOption,
  type JobArgs,
  resolveJob,
  selectStores,
  useFastPathSwitch,
  type WaitForLockArgs,
  type WorkersArgs,
  withFastPathOption,
  withJobOptions,
  withWaitForLockOption,
  withWorkersOption,
  workersFrom,
} from '../context.js';
import { exitCodeForOutcome } from '../exit-codes.js';
import { type HeartbeatArgs, heartbeatBounds, ingestPulse, withHeartbeatOptions } from '../heartbeat.js';
import { renderRunSummary } from '../output.js';
import { ingestSpool, SPOOL_OPTION } from './ingest-spool.js';
import { ingestSummary } from './ingest-summary.js';
import { type SchemaContractArgs, withSchemaContract, withSchemaContractOption } from './schema-contract.js';

interface IngestArgs
  extends JobArgs,
    WorkersArgs,
    FastPathArgs,
    SchemaContractArgs,
    HeartbeatArgs,
    WaitForLockArgs {
  inputs: string[];
  'max-document-bytes'?: number;
  spool?: string;
  json?: boolean;
}

export const ingestCommand: CommandModule<object, IngestArgs> = {
  command: 'ingest [inputs..]',
  describe:
    'Load captured API documents (orders, fulfillments, carts, tickets …) from files, folders or - for stdin',
  builder: (yargs) =>
    withWaitForLockOption(
      withHeartbeatOptions(
        withSchemaContractOption(withFastPathOption(withWorkersOption(withJobOptions(yargs)))),
      ),
    )
      .positional('inputs', {
        type: 'string',
        array: true,
        description:
          'JSON, JSON array, NDJSON or .gz files, folders (read recursively), named pipes or <(…), or - for stdin',
      })
      .option('max-document-bytes', {
        type: 'number',
        description:
          'Largest document read; a larger one is rejected with its size and the rest of its file loads (default: maxDocumentBytes in the config, 64 MB)',
      })
      .example(
        '$0 ingest captured/ --warehouse w.duckdb',
        'Ingest every document under captured/ (again: only new files)',
      )
      .option('spool', SPOOL_OPTION)
      .option('json', {
        type: 'boolean',
        description:
          'Print the summary as one JSON object (files, documents, rows, rejections, newFields …) instead of a table',
      })
      .example('zcat orders.ndjson.gz | $0 ingest - --warehouse w.duckdb', 'Ingest from stdin')
      .example('$0 ingest --spool', "Drain the webhook receivers' spools (docs/receiver.md)") as never,
  handler: async (args) => {
    useFastPathSwitch(args);
    if (args.spool !== undefined) return ingestSpool({ ...args, spool: args.spool });
    if (!args.inputs?.length)
      throw new StoreSyncError(ERROR_CODES.USAGE, 'ingest needs a file, folder or - (stdin), or --spool');
    const config = withSchemaContract(
      await resolveJob(args, { needsApi: false, oneWarehouse: 'ingest' }),
      args,
    );
    applyWaitForLock(config, args);
    const workers = workersFrom(args);
    const limit = args['max-document-bytes'];
    const maxDocumentBytes =
      limit === undefined
        ? config.maxDocumentBytes
        : integerOption('max-document-bytes', limit, 1, Number.MAX_SAFE_INTEGER);
    const [store] = selectStores(config, args.store);
    // Documents carry no store of their own: with several stores, guessing the first would misfile them.
    if (args.store === undefined && config.stores.length > 1) {
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        `the config has ${config.stores.length} stores (${config.stores.map((s) => s.name).join(', ')}): pass --store NAME to say whose documents these are.`,
      );
    }
    const { ingestBar, progressFor } = await import('../progress.js');
    const progress = progressFor(args);
    const logger = cliLogger(args, progress.log);
    const { ingestPaths } = await import('../../../pipelines/ingest.js');
    const { INGEST_WAREHOUSE_BLOCK_BYTES, openWarehouse } = await import('../../load/index.js');
    const { expandInputs } = await import('../../ingest/inputs.js');
    // Read in the order given: for records without a version (carts, fulfillment orders without updated_at) the one read last
    // wins, so `cat new.ndjson | store-sync ingest old.ndjson -` reads stdin after old.ndjson.
    const inputs = args.inputs;
    // A missing input or a bad heartbeat flag is a usage error (exit 2), found before the warehouse is
    // created or a run recorded.
    const bounds = heartbeatBounds(config, args);
    const files = await expandInputs(inputs);
    // Exit 0 is right (a capture folder can be empty tonight), but a typo'd folder should not pass silently.
    if (files.length === 0) {
      logger.warn('ingest.no_files', {
        inputs: inputs.join(' '),
        expected: 'files named *.json, *.ndjson, *.jsonl or their .gz forms',
      });
    }
    // Closing it after the run publishes the read copy (src/load/read-copy.ts).
    const warehouse = await openWarehouse(config.warehouse, {
      logger,
      readCopy: config.readCopy,
      waitForLockSeconds: config.waitForLockSeconds,
      newFileBlockBytes: INGEST_WAREHOUSE_BLOCK_BYTES,
    });
    try {
      const runId = await warehouse.startRun({
        store: store!.name,
        command: 'ingest',
        mode: 'incremental',
        streams: ['documents'],
      });
      // Ctrl-C or SIGTERM stops at the next batch boundary and commits what was read, with each file's
      // position, so the next run resumes there. A second signal ends the process at once (DuckDB then keeps
      // only what was committed, and the next writer marks the run interrupted).
      await runBulk<IngestSummary, IngestProgress>(
        {
          logger,
          command: 'ingest',
          whatStoppingDoes: 'stopping after the batch being written and committing what was read',
          whyNotStopped: 'the ingest had read every input when the signal came, and completed',
          bounds,
          watched: { store: store!.name, runId },
          pulse: ingestPulse,
          progress,
          bar: ingestBar,
        },
        (signal, onProgress) =>
          ingestPaths(warehouse, inputs, {
            store: store!.name,
            runId,
            logger,
            signal,
            onProgress,
            maxDocumentBytes,
            files,
            contract: store!.documents.schemaContract,
            ...(workers === undefined ? {} : { workers }),
          }),
        async ({ result: summary, failure, signal: interrupted, stopped, rejections, finish, startedAt }) => {
          await warehouse.finishRun(runId, { ...finish, counts: summary ? { documents: summary } : {} });
          if (failure) throw failure;
          if (args.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
          else {
            const { newFieldsText } = await import('../../load/schema-changes.js');
            const run = {
              outcome: finish.outcome,
              seconds: (Date.now() - startedAt) / 1000,
              runId,
            };
            process.stdout.write(renderRunSummary(ingestSummary(store!.name, summary!, run), newFieldsText));
          }
          if (stopped) {
            // stdin and pipes are read in one pass: nothing of them is remembered to resume by.
            const streams = files.filter((f) => f.path === '-' || f.stream);
            const stdin =
              streams.length === 1 && streams[0]!.path === '-'
                ? 'stdin is not remembered: piping it again reads it from the start.'
                : 'stdin and pipes are not remembered: piping them again reads them from the start.';
            const again =
              streams.length === 0
                ? 'Run the same command again: it resumes where this one stopped.'
                : streams.length === files.length
                  ? stdin
                  : `Files resume where this run stopped; ${stdin}`;
            throw new StoreSyncError(
              ERROR_CODES.INTERNAL,
              `interrupted by ${interrupted ?? 'a signal'} after ${summary!.documents} documents, which are committed. ${again}`,
            );
          }
          process.exitCode = exitCodeForOutcome({ failedStreams: 0, rejections });
        },
      );
    } finally {
      await warehouse.close();
    }
  },
};
