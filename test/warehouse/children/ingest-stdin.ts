import { ingestPaths } from '../../../pipelines/ingest.js';
import { openWarehouse } from '../../../src/load/index.js';
import { silentLogger } from '../../../src/log.js';

/** Test helper: ingests stdin into the warehouse named by argv[2] and prints the summary. */
const warehouse = await openWarehouse(process.argv[2]!);
const summary = await ingestPaths(warehouse, ['-'], { store: 'shop', runId: 'stdin', logger: silentLogger });
await warehouse.close();
process.stdout.write(JSON.stringify(summary));
