import { openWarehouse } from '../../../src/load/index.js';

/** Another writer: opens the warehouse named by argv[2] for writing, says `ready`, and holds it until killed. */
const warehouse = await openWarehouse(process.argv[2]!);
process.stdout.write('ready\n');
setInterval(() => warehouse.path, 60_000);
