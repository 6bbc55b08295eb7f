import path from 'node:path';
import type { CommandModule } from 'yargs';
import { cliLogger, type JobArgs } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { renderTable } from '../output.js';

interface DemoArgs extends Pick<JobArgs, 'log-format' | 'verbose'> {
  dir: string;
}

/** `store-sync demo` (`npm start`): the whole product on the embedded sandbox, in well under a minute. */
export const demoCommand: CommandModule<object, DemoArgs> = {
  command: 'demo',
  describe: 'Run the whole pipeline on the embedded sandbox store and show what landed (what npm start runs)',
  builder: (yargs) =>
    yargs.option('dir', {
      type: 'string',
      default: 'data/demo',
      description: 'Where the demo writes (replaced on every run; a folder holding anything else is refused)',
    }) as never,
  handler: async (args) => {
    const started = Date.now();
    const logger = cliLogger(args);
    const out = (text = '') => process.stdout.write(`${text}\n`);
    const dir = path.resolve(args.dir);
    const { runDemo } = await import('../../../pipelines/demo.js');
    const result = await runDemo({ dir, logger });
    const relative = (p: string) => path.relative(process.cwd(), p) || '.';
    const warehouse = relative(result.warehouse);

    out(`\nstore-sync demo: a seeded sandbox store synced into ${warehouse}`);
    out(
      `  sync: ${result.sync.outcome.replace(/_/g, ' ')}, ${result.sync.requests} requests, ${result.sync.retries} retries`,
    );
    out(
      `  receive: ${result.webhooks.delivered} orders (both versions) delivered as signed webhooks, spooled in ${relative(result.webhooks.spoolDir)}/ and drained: ${result.webhooks.loaded} loaded, ${result.webhooks.rejections} rejected`,
    );
    out(
      `  ingest: ${result.documents} captured API documents (order updates, fulfillments, carts, a ticket) from ${relative(path.join(dir, 'inbox'))}/`,
    );
    out(`  parquet: ${relative(result.parquetDir)}/<table>/`);
    out(
      `  report: ${relative(result.report)} (open it in a browser: freshness, runs, tables, new fields, rejections, the tables and keys)\n`,
    );
    out(
      renderTable(
        ['table', 'rows'],
        result.tables.filter((t) => t.rows > 0).map((t) => [t.table, t.rows]),
      ),
    );
    const empty = result.tables.filter((t) => t.rows === 0).map((t) => t.table);
    if (empty.length) out(`(empty: ${empty.join(', ')})`);
    // The API lists no orders: say how much of the store's order book the captured ones are.
    const { orderCoverageLine } = await import('../../load/models.js');
    for (const coverage of result.coverage) out(`\n${orderCoverageLine(coverage)}`);
    for (const answer of result.answers) {
      out(`\n${answer.title}`);
      out(renderTable(answer.columns, answer.rows));
    }
    out('\nQuery further:');
    out(
      `  npx store-sync query "SELECT status, count(*) FROM subscriptions GROUP BY ALL" --warehouse ${warehouse}`,
    );
    out(`  npx store-sync query "FROM order_lines LIMIT 5" --format json --warehouse ${warehouse}`);
    // The warehouse is in DuckDB 1.5's storage format (src/load/open.ts): older clients cannot open it.
    out(
      `  duckdb ${warehouse}        # the DuckDB CLI 1.5 or newer, if installed (older ones cannot open the file)`,
    );
    out(
      `  python -c "import duckdb; print(duckdb.connect('${warehouse}', read_only=True).sql('FROM orders LIMIT 5'))"   # duckdb>=1.5`,
    );
    out(
      `  the tables and columns are described in docs/warehouse.md and in the database: SELECT * FROM duckdb_columns() WHERE comment IS NOT NULL`,
    );
    out(
      '  analyst models (fct_orders, daily_sales, inventory_levels …) and questions they answer: docs/analytics.md',
    );
    out(`\nfinished in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    process.exitCode = EXIT.OK;
  },
};
