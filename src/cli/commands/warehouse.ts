import type { CommandModule } from 'yargs';
import type { RebuildProgress, RebuildSummary } from '../../../pipelines/rebuild.js';
import type { SyncConfig } from '../../config.js';
import type { SchemaContract } from '../../contracts.js';
import { ERROR_CODES, isStoreSyncError, StoreSyncError } from '../../errors.js';
import { runBulk } from '../bulk-run.js';
import {
  applyWaitForLock,
  cliLogger,
  expectedStreams,
  type FastPathArgs,
  type FreshnessArgs,
  freshnessHours,
  type JobArgs,
  jobFromFlags,
  type ReadCopyArgs,
  readWarehouseOrCopy,
  resolveJob,
  selectStores,
  useFastPathSwitch,
  type WaitForLockArgs,
  type WorkersArgs,
  withFastPathOption,
  withFreshnessOption,
  withJobOptions,
  withReadCopyOption,
  withWaitForLockOption,
  withWorkersOption,
  workersFrom,
} from '../context.js';
import { EXIT, exitCodeForOutcome, exitCodeForStatus } from '../exit-codes.js';
import { type HeartbeatArgs, heartbeatBounds, rebuildPulse, withHeartbeatOptions } from '../heartbeat.js';
import { renderTable } from '../output.js';

/** Commands that work on the warehouse alone, with no API: status, export, rebuild. */

interface StatusArgs extends JobArgs, ReadCopyArgs, FreshnessArgs {
  json?: boolean;
}

export const statusCommand: CommandModule<object, StatusArgs> = {
  command: 'status',
  describe:
    'Per store and stream: last success and its age, rows, watermark, cursor in progress, rejections, the last run (ok, failed, interrupted, skipped) and the last error; then how many orders the store references that `orders` does not hold (order_coverage), and the fields no column maps first seen in the last 7 days; while a run writes the warehouse, the read copy and what the running run has committed. Exit 3 when a stream is stale or its last run did not complete it',
  builder: (yargs) =>
    withFreshnessOption(
      withReadCopyOption(withJobOptions(yargs)),
      'Flag streams whose last success is older than this, or that the config enables or a run read and never succeeded; exit 3 if any',
    ).option('json', { type: 'boolean', description: 'JSON instead of a table' }) as never,
  handler: async (args) => {
    const config = await resolveJob(args, { needsApi: false, oneWarehouse: 'status' });
    const hours = freshnessHours(config, args);
    // A config file says which streams should have synced; a one-off job's flags do not.
    const expected = expectedStreams(config, args, jobFromFlags(args));
    const { openWarehouse } = await import('../../load/index.js');
    const { newFieldsText } = await import('../../load/schema-changes.js');
    const {
      NEW_FIELDS_DAYS,
      ageText,
      completedSinceText,
      errorRunText,
      freshText,
      lastRunText,
      readJudgedStatus,
      recentNewFields,
      runningLines,
      runningOf,
      shownLastError,
    } = await import('../../load/status.js');
    const { readRunning } = await import('../../state/index.js');
    // While a run writes the warehouse, its read copy (the state after the last run) is what can be read,
    // and what the run has committed since is in its running file (src/state/running.ts).
    let warehouse: Awaited<ReturnType<typeof openWarehouse>> | null;
    let running: ReturnType<typeof runningOf>;
    try {
      warehouse = await readWarehouseOrCopy(config, args, (file) => openWarehouse(file, { readOnly: true }));
      running = runningOf(readRunning(config.warehouse), args.store);
    } catch (error) {
      // A warehouse's first run: no read copy is published yet, but the run's progress can be told.
      running = runningOf(readRunning(config.warehouse), args.store);
      if (running === null || !isStoreSyncError(error, ERROR_CODES.QUERY)) throw error;
      process.stderr.write(`${error.message}\n`);
      warehouse = null;
    }
    const now = Date.now();
    let report: Awaited<ReturnType<typeof readJudgedStatus>> = [];
    let recent: Awaited<ReturnType<typeof recentNewFields>> = [];
    const { orderCoverageLine, readOrderCoverage } = await import('../../load/models.js');
    let coverage: Awaited<ReturnType<typeof readOrderCoverage>> = [];
    if (warehouse !== null)
      try {
        report = await readJudgedStatus(warehouse, {
          expected,
          store: args.store,
          nowMs: now,
          freshnessHours: hours,
        });
        recent = await recentNewFields(warehouse, now);
        // `orders` holds captured documents only: how many the store references beyond them (docs/analytics.md).
        coverage = (await readOrderCoverage(warehouse)).filter(
          (c) => args.store === undefined || c.store === args.store,
        );
      } finally {
        await warehouse.close();
      }
    // Field paths no column maps, first seen in the last NEW_FIELDS_DAYS days (values in the rows' `_extra`).
    const newFields = recent.filter((entry) => args.store === undefined || entry.store === args.store);
    // A receiver's spool: events received and not yet drained into the warehouse (docs/receiver.md).
    const { receiverSpools, spoolRows } = await import('../../receive/status.js');
    const spools = jobFromFlags(args) ? [] : await receiverSpools(config, args.store, now);
    if (args.json) {
      const receivers = spools.length ? { receivers: spools } : {};
      process.stdout.write(
        `${JSON.stringify({ freshnessHours: hours, streams: report, running, ...receivers, newFields, orderCoverage: coverage }, null, 2)}\n`,
      );
    } else if (report.length === 0) {
      process.stdout.write(
        running
          ? 'nothing published yet: the first run is in progress (below)\n'
          : 'nothing synced yet: run store-sync sync (or ingest)\n',
      );
    } else {
      const columns = [
        'store',
        'stream',
        'last success',
        'age',
        'rows',
        'watermark',
        'cursor in progress',
        'rejections',
        'fresh',
        'last run',
      ];
      const table = report.map((r) => [
        r.store,
        r.stream,
        r.lastSuccessAt ?? '',
        ageText(r.lastSuccessAt, now),
        r.rows,
        r.watermark ?? '',
        r.cursorInProgress ? new URL(r.cursorInProgress).search || r.cursorInProgress : '',
        r.rejectionsSinceLastSuccess,
        freshText(r),
        r.lastRun ? `${lastRunText(r)}, ${ageText(r.lastRun.at, now)} ago` : '',
      ]);
      process.stdout.write(`${renderTable(columns, table)}\n`);
      // The error that makes a stream fail now, and those of the last days that a later run got past (a
      // stream that fails one night in three is worth knowing about). The stored messages are masked.
      const errors = report.filter((r) => shownLastError(r, now));
      if (errors.length) {
        // Streams that one failed run stopped together share its error: told once, naming them all.
        const groups = new Map<string, typeof errors>();
        for (const row of errors) {
          const e = row.lastError!;
          const group = [row.store, e.runId, e.outcome, e.error, row.failing].join('\u0000');
          groups.set(group, [...(groups.get(group) ?? []), row]);
        }
        const lines = [...groups.values()].map((rows) => {
          const { store, lastError } = rows[0]!;
          const e = lastError!;
          const streams = rows.map((r) => r.stream).join(', ');
          return `  ${store} ${streams}: ${e.outcome} at ${e.at} (${ageText(e.at, now)} ago, ${errorRunText(e)})${completedSinceText(rows[0]!)}: ${e.error}`;
        });
        process.stdout.write(`\nlast errors:\n${lines.join('\n')}\n`);
      }
    }
    if (!args.json && running) process.stdout.write(`\n${runningLines(running, now).join('\n')}\n`);
    if (!args.json && coverage.length) {
      const several = coverage.length > 1;
      const lines = coverage.map((c) => `${several ? `${c.store} ` : ''}${orderCoverageLine(c)}`);
      process.stdout.write(`\n${lines.join('\n')}\n`);
    }
    if (!args.json && newFields.length) {
      const lines: string[] = [];
      for (const [i, entry] of newFields.entries()) {
        if (entry.store !== newFields[i - 1]?.store) lines.push(`${entry.store}:`);
        lines.push(`  ${newFieldsText(entry)}`);
      }
      process.stdout.write(
        `\nnew fields, first seen in the last ${NEW_FIELDS_DAYS} days (values in each row's _extra):\n${lines.join('\n')}\n`,
      );
    }
    if (!args.json && spools.length) {
      const { columns, rows } = spoolRows(spools);
      process.stdout.write(`\n${renderTable(columns, rows)}\n`);
    }
    process.exitCode = exitCodeForStatus(report);
  },
};

interface ExportArgs extends JobArgs, ReadCopyArgs {
  out?: string;
  tables?: string;
  lake?: string;
}

export const exportCommand: CommandModule<object, ExportArgs> = {
  command: 'export',
  describe:
    'Write every table to Parquet under <dir>/<table>/ (orders and children by month); replaces atomically',
  builder: (yargs) =>
    withReadCopyOption(withJobOptions(yargs))
      .option('out', {
        type: 'string',
        description: 'Folder (default: parquetDir from the config or --parquet-dir)',
      })
      .option('tables', { type: 'string', description: 'Comma-separated tables (default: all)' })
      .option('lake', {
        type: 'string',
        description:
          "Write every store's tables (or --store's) into one Hive-partitioned lake DIR/<table>/_store=<name>/…, each store replaced atomically, and DIR/catalog.duckdb: a view per table over it",
      })
      .example(
        '$0 export --lake /srv/lake',
        "Every store's tables into one lake, with a catalog of views",
      ) as never,
  handler: async (args) => {
    const config = await resolveJob(args, {
      needsApi: false,
      ...(args.lake === undefined ? { oneWarehouse: 'export' } : {}),
    });
    if (args.lake !== undefined) {
      await exportToLake(config, args, args.lake);
      return;
    }
    const out = args.out ?? config.parquetDir;
    if (!out)
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        'no Parquet folder: pass --out DIR, or set parquetDir in the config.',
      );
    const { openWarehouse } = await import('../../load/index.js');
    const { exportParquet } = await import('../../../pipelines/export.js');
    const { exportBar, progressFor } = await import('../progress.js');
    // A running writer blocks readers: exit 1 as for query and status, not a configuration error.
    const progress = progressFor(args);
    const warehouse = await readWarehouseOrCopy(config, args, (file) =>
      openWarehouse(file, { readOnly: true, logger: cliLogger(args, progress.log) }),
    );
    try {
      const tables = tablesOption(args.tables);
      const started = Date.now();
      const summary = await exportParquet(warehouse, out, {
        ...(tables ? { tables } : {}),
        onProgress: (now) => progress.show(exportBar(now, (Date.now() - started) / 1000)),
      }).finally(() => progress.stop());
      process.stdout.write(
        `${renderTable(
          ['table', 'rows', 'partitioned', 'path'],
          summary.tables.map((t) => [t.table, t.rows, t.partitioned ? 'by month' : '', t.path]),
        )}\nexported ${summary.tables.length} tables to ${summary.outDir} in ${summary.seconds.toFixed(1)} s\n`,
      );
    } finally {
      await warehouse.close();
    }
    process.exitCode = EXIT.OK;
  },
};

/** `--tables a,b`: the names, or undefined for all; a value that names none is refused. */
function tablesOption(value: string | undefined): string[] | undefined {
  const tables = value
    ?.split(',')
    .map((t) => t.trim())
    .filter(Boolean);
  if (tables?.length === 0)
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `--tables ${JSON.stringify(value)} names no table: give comma-separated table names, or leave it out for all`,
    );
  return tables;
}

/** `export --lake DIR`: each store from its own warehouse file (per-store) or from the one, filtered. */
async function exportToLake(config: SyncConfig, args: ExportArgs, dir: string): Promise<void> {
  const { storeWarehouse } = await import('../../config.js');
  const { openWarehouse } = await import('../../load/index.js');
  const { exportLake } = await import('../../../pipelines/lake.js');
  const tables = tablesOption(args.tables);
  const logger = cliLogger(args);
  const stores = selectStores(config, args.store);
  const opened = new Map<string, Awaited<ReturnType<typeof openWarehouse>>>();
  try {
    const sources = [];
    for (const store of stores) {
      const file = storeWarehouse(config, store.name);
      let warehouse = opened.get(file);
      if (!warehouse) {
        // A store being synced is read from its read copy, as export reads it (readWarehouseOrCopy).
        warehouse = await readWarehouseOrCopy({ ...config, warehouse: file }, args, (f) =>
          openWarehouse(f, { readOnly: true, logger }),
        );
        opened.set(file, warehouse);
      }
      sources.push({ store: store.name, warehouse });
    }
    const summary = await exportLake(dir, sources, tables ? { tables } : {});
    process.stdout.write(
      `${renderTable(
        ['store', 'tables', 'rows', 'version'],
        summary.stores.map((s) => [
          s.store,
          s.tables.length,
          s.tables.reduce((n, t) => n + t.rows, 0),
          s.version,
        ]),
      )}\nexported ${summary.stores.length} stores to the lake ${summary.dir} in ${summary.seconds.toFixed(1)} s; catalog ${summary.catalog}\n`,
    );
  } finally {
    for (const warehouse of opened.values()) await warehouse.close();
  }
  process.exitCode = EXIT.OK;
}

/**
 * What rebuild does with fields the model does not map, per store and stream: the config's
 * `schemaContract` (a one-off job's flags set none, so everything evolves), `evolve` for stores it lacks.
 */
async function replayContracts(config: SyncConfig): Promise<Map<string, Map<string, SchemaContract>>> {
  const { DOCUMENTS_OPTIONS } = await import('../../config.js');
  return new Map(
    config.stores.map((store) => [
      store.name,
      new Map<string, SchemaContract>([
        ...Object.entries(store.streams).map(([name, o]): [string, SchemaContract] => [
          name,
          o.schemaContract,
        ]),
        [DOCUMENTS_OPTIONS, store.documents.schemaContract],
      ]),
    ]),
  );
}

export const rebuildCommand: CommandModule<
  object,
  JobArgs & WorkersArgs & FastPathArgs & HeartbeatArgs & WaitForLockArgs
> = {
  command: 'rebuild',
  describe:
    'Re-derive every table from the raw landing, with no API calls (after an upgrade or a fix), in one transaction: Ctrl-C rolls it back',
  builder: (yargs) =>
    withWaitForLockOption(
      withHeartbeatOptions(withFastPathOption(withWorkersOption(withJobOptions(yargs)))),
    ) as never,
  handler: async (args) => {
    const config = await resolveJob(args, { needsApi: false, oneWarehouse: 'rebuild' });
    applyWaitForLock(config, args);
    const contracts = await replayContracts(config);
    const workers = workersFrom(args);
    // A bad flag is refused before a run is recorded (a run left without an outcome reads as interrupted).
    const bounds = heartbeatBounds(config, args);
    useFastPathSwitch(args);
    const { progressFor, rebuildBar } = await import('../progress.js');
    const progress = progressFor(args);
    const logger = cliLogger(args, progress.log);
    const { openWarehouse } = await import('../../load/index.js');
    const { rebuildWarehouse } = await import('../../../pipelines/rebuild.js');
    // A mistyped path must not become a new, empty warehouse "rebuilt" from nothing.
    const warehouse = await openWarehouse(config.warehouse, {
      logger,
      existing: true,
      readCopy: config.readCopy,
      waitForLockSeconds: config.waitForLockSeconds,
    });
    try {
      // Recorded before the rebuild's transaction begins and finished after it ends, so the row is neither
      // rolled back with a failed or stopped rebuild nor touched by it. The rebuild covers every store.
      const runId = await warehouse.startRun({
        store: null,
        command: 'rebuild',
        mode: null,
        streams: await warehouse.landedStreams(),
      });
      // Ctrl-C or SIGTERM stops before the next block and rolls the one transaction back, so the warehouse is
      // as it was. A second signal ends the process at once (the transaction, never committed, is lost as
      // well, and the next writer marks the run interrupted).
      await runBulk<RebuildSummary, RebuildProgress>(
        {
          logger,
          command: 'rebuild',
          whatStoppingDoes:
            'stopping and rolling the rebuild back, which leaves the warehouse as it was (unless it is already committing)',
          whyNotStopped: 'the rebuild was already committing when the signal came, and completed',
          bounds,
          watched: { runId },
          pulse: rebuildPulse,
          progress,
          bar: rebuildBar,
        },
        (signal, onProgress) =>
          rebuildWarehouse(warehouse, {
            logger,
            signal,
            onProgress,
            contracts,
            ...(workers === undefined ? {} : { workers }),
          }),
        async ({ result: summary, failure, signal: interrupted, stopped, rejections, finish }) => {
          await warehouse.finishRun(runId, {
            ...finish,
            // How far it got: a stopped rebuild's counts are of what it had replayed when it was rolled back.
            counts: summary ? { ...summary, interrupted: undefined } : {},
            ...(stopped
              ? { error: `stopped by ${interrupted ?? 'a signal'}; the rebuild was rolled back` }
              : {}),
          });
          if (failure) throw failure;
          if (stopped)
            throw new StoreSyncError(
              ERROR_CODES.INTERNAL,
              `interrupted by ${interrupted ?? 'a signal'}; the rebuild was rolled back and the warehouse is unchanged. Run it again: a rebuild starts over from the raw landing.`,
            );
          process.stdout.write(
            `rebuilt ${summary!.tables} tables from ${summary!.records} landed records: ${summary!.rows} rows, ${rejections} rejections\n`,
          );
          process.exitCode = exitCodeForOutcome({ failedStreams: 0, rejections });
        },
      );
    } finally {
      await warehouse.close();
    }
  },
};
