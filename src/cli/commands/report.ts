import path from 'node:path';
import type { CommandModule } from 'yargs';
import { registerSecret } from '../../log.js';
import {
  expectedStreams,
  type FreshnessArgs,
  freshnessHours,
  type JobArgs,
  jobFromFlags,
  type ReadCopyArgs,
  readWarehouseOrCopy,
  resolveJob,
  selectStores,
  withFreshnessOption,
  withJobOptions,
  withReadCopyOption,
} from '../context.js';
import { EXIT } from '../exit-codes.js';

interface ReportArgs extends JobArgs, ReadCopyArgs, FreshnessArgs {
  out?: string;
}

/** Where the report goes without --out: beside the warehouse, so it is found where the data is. */
export const REPORT_FILE = 'report.html';

export const reportCommand: CommandModule<object, ReportArgs> = {
  command: 'report',
  describe:
    'Write one self-contained HTML file (no network needed to view it): freshness per store and stream, run history charts, table sizes, new fields, rejections with examples, receiver spools, and a diagram of the tables and keys',
  builder: (yargs) =>
    withFreshnessOption(
      withReadCopyOption(withJobOptions(yargs)),
      'Mark streams whose last success is older than this as stale, as status does',
    ).option('out', {
      type: 'string',
      description: `The HTML file to write (default: ${REPORT_FILE} in the warehouse's folder); replaced whole`,
    }) as never,
  handler: async (args) => {
    const config = await resolveJob(args, { needsApi: false, oneWarehouse: 'report' });
    const hours = freshnessHours(config, args);
    const fromFlags = jobFromFlags(args);
    const stores = fromFlags ? config.stores : selectStores(config, args.store);
    // Nothing secret belongs in a warehouse; should a store have echoed its token into a stored value, the
    // report masks it as the logs do.
    for (const store of stores) {
      registerSecret(process.env[store.tokenEnv]);
      if (store.receiver) registerSecret(process.env[store.receiver.secretEnv]);
    }
    // The streams the config enables, as `status` lists them (a one-off job's flags enable none).
    const expected = expectedStreams(config, args, fromFlags);
    const out = path.resolve(args.out ?? path.join(path.dirname(config.warehouse), REPORT_FILE));
    const { openWarehouse } = await import('../../load/index.js');
    const { receiverSpools } = await import('../../receive/status.js');
    const { writeReport } = await import('../../report/index.js');
    // While a run writes the warehouse, the report is of its read copy (the state after the last run), and
    // names that file.
    let read = config.warehouse;
    const warehouse = await readWarehouseOrCopy(config, args, (file) => {
      read = file;
      return openWarehouse(file, { readOnly: true });
    });
    const now = Date.now();
    let written: Awaited<ReturnType<typeof writeReport>>;
    try {
      written = await writeReport(warehouse, out, {
        warehousePath: read,
        expected,
        freshnessHours: hours,
        ...(args.store === undefined ? {} : { store: args.store }),
        spools: fromFlags ? [] : await receiverSpools(config, args.store, now),
        now,
      });
    } finally {
      await warehouse.close();
    }
    process.stdout.write(`${written.file}\n`);
    process.exitCode = EXIT.OK;
  },
};
