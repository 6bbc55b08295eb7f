import { existsSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { exportParquet } from '../../../pipelines/export.js';
import { openWarehouse } from '../../../src/load/index.js';

/**
 * Test helper: exports the warehouse argv[2] to argv[3] once the file argv[4] exists (so that several children
 * start together), after printing `ready`; then prints `ok` or the error's code. It exports `orders` alone,
 * or every table when argv[5] is `all` (a longer export, for a test to catch while it holds the lock).
 */
const warehouse = await openWarehouse(process.argv[2]!, { readOnly: true });
process.stdout.write('ready\n');
while (!existsSync(process.argv[4]!)) await sleep(1);
try {
  await exportParquet(warehouse, process.argv[3]!, process.argv[5] === 'all' ? {} : { tables: ['orders'] });
  process.stdout.write('ok\n');
} catch (error) {
  process.stdout.write(`${String((error as { code?: string }).code ?? error)}\n`);
  // The message too, for a test that fails on the code to say what happened.
  process.stderr.write(`${(error as Error).message ?? String(error)}\n`);
} finally {
  await warehouse.close();
}
