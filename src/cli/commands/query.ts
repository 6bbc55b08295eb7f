import type { CommandModule } from 'yargs';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import {
  integerOption,
  type JobArgs,
  type ReadCopyArgs,
  readWarehouseOrCopy,
  resolveJob,
  withJobOptions,
  withReadCopyOption,
} from '../context.js';
import { EXIT } from '../exit-codes.js';
import { type OutputFormat, renderRows } from '../output.js';

interface QueryArgs extends JobArgs, ReadCopyArgs {
  sql: string;
  format: OutputFormat;
  limit?: number;
}

/**
 * Rows a table shows unless --limit says otherwise: a table is for reading, and `FROM order_lines` would
 * print the whole warehouse into the terminal. CSV and JSON are for programs, which get every row.
 */
export const DEFAULT_TABLE_ROWS = 1000;

const count = (n: number) => n.toLocaleString('en-US');

/** The rows to show: --limit (0 is all), else the table's default, else all. */
function rowLimit(args: QueryArgs): number | undefined {
  if (args.limit !== undefined) {
    const limit = integerOption('limit', args.limit, 0, Number.MAX_SAFE_INTEGER);
    return limit === 0 ? undefined : limit;
  }
  return args.format === 'table' ? DEFAULT_TABLE_ROWS : undefined;
}

export const queryCommand: CommandModule<object, QueryArgs> = {
  command: 'query <sql>',
  describe:
    'Run one read-only SQL statement against the warehouse and your own files (while a run writes the warehouse: against its published read copy, saying how old it is)',
  builder: (yargs) =>
    withReadCopyOption(withJobOptions(yargs))
      .positional('sql', { type: 'string', demandOption: true, description: 'The SQL to run, in quotes' })
      .option('format', {
        choices: ['table', 'csv', 'json'] as const,
        default: 'table' as OutputFormat,
        description: 'Output: aligned table, CSV or JSON rows',
      })
      .option('limit', {
        type: 'number',
        description: `Most rows printed (0: all). Default ${count(DEFAULT_TABLE_ROWS)} for --format table, which then says how many it left out; every row for csv and json`,
      })
      .example('$0 query "select count(*) from orders"', 'Count the orders')
      .example('$0 query "from subscriptions limit 5" --format json', 'Rows as JSON')
      .example('$0 query "from order_lines" --limit 0', 'Every row as a table, however many')
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
    const config = await resolveJob(args, { needsApi: false, oneWarehouse: 'query' });
    const { runReadOnlyQuery } = await import('../../load/query.js');
    const limit = rowLimit(args);
    const result = await readWarehouseOrCopy(config, args, (file) =>
      runReadOnlyQuery(file, args.sql, limit === undefined ? {} : { maxRows: limit }),
    );
    const text = renderRows(args.format, result.columns, result.rows);
    process.stdout.write(`${text}\n`);
    if (result.totalRows > result.rows.length) {
      const note = `(showing ${count(result.rows.length)} of ${count(result.totalRows)} rows; --limit 0 for all)\n`;
      // Under a table the note is part of what a person reads; CSV and JSON stay parseable, so it goes to stderr.
      if (args.format === 'table') process.stdout.write(note);
      else process.stderr.write(note);
    }
    process.exitCode = EXIT.OK;
  },
};
