import type { CommandModule } from 'yargs';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import { type JobArgs, readerBlocked, resolveJob, withJobOptions } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { type OutputFormat, renderRows } from '../output.js';

interface QueryArgs extends JobArgs {
  sql: string;
  format: OutputFormat;
}

export const queryCommand: CommandModule<object, QueryArgs> = {
  command: 'query <sql>',
  describe:
    'Run one read-only SQL statement against the warehouse and your own files (refused, exit 1, while another process is writing to it)',
  builder: (yargs) =>
    withJobOptions(yargs)
      .positional('sql', { type: 'string', demandOption: true, description: 'The SQL to run, in quotes' })
      .option('format', {
        choices: ['table', 'csv', 'json'] as const,
        default: 'table' as OutputFormat,
        description: 'Output: aligned table, CSV or JSON rows',
      })
      .example('$0 query "select count(*) from orders"', 'Count the orders')
      .example('$0 query "from subscriptions limit 5" --format json', 'Rows as JSON')
      .example('$0 query "select * from read_csv(\'refunds.csv\')"', 'Read a file of your own')
      .epilog(
        'query reads: the tables and views, and your own files through read_csv, read_parquet and read_json. It cannot write any file (COPY … TO, EXPORT DATABASE), attach databases, install or load extensions, or change settings: those are refused with exit 1. store-sync export writes the warehouse as Parquet; --format csv or json with a redirect saves a result.',
      ) as never,
  handler: async (args) => {
    if (args.sql.replace(/[\s;]/g, '') === '')
      throw new StoreSyncError(
        ERROR_CODES.USAGE,
        'no SQL given: pass one statement, e.g. "SELECT count(*) FROM orders"',
      );
    const config = await resolveJob(args, { needsApi: false });
    const { runReadOnlyQuery } = await import('../../load/index.js');
    const result = await runReadOnlyQuery(config.warehouse, args.sql).catch((error: unknown) => {
      throw readerBlocked(error);
    });
    const text = renderRows(args.format, result.columns, result.rows);
    process.stdout.write(`${text}\n`);
    process.exitCode = EXIT.OK;
  },
};
