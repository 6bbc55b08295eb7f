import { ingestPaths } from '../../../pipelines/ingest.js';
import { openWarehouse } from '../../../src/load/index.js';
import { silentLogger } from '../../../src/log.js';

/**
 * Test helper for the torn-commit test: ingests the inputs in one transaction, then dies by SIGKILL before
 * the warehouse is closed (closing would checkpoint), leaving the database file and its write-ahead log as
 * a crash right after the commit leaves them.
 */

const [file, ...inputs] = process.argv.slice(2) as [string, ...string[]];
const warehouse = await openWarehouse(file);
const summary = await ingestPaths(warehouse, inputs, { store: 'shop', runId: 'torn', logger: silentLogger });
process.stdout.write(`${JSON.stringify({ documents: summary.documents })}\n`);
process.kill(process.pid, 'SIGKILL');
