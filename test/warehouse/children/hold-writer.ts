import { openWarehouse } from '../../../src/load/index.js';

/** Test helper: opens a warehouse for writing, says so, and holds it until killed. */
const warehouse = await openWarehouse(process.argv[2]!);
process.stdout.write('ready\n');
setInterval(() => warehouse.path, 1000);
