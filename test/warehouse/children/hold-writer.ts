import { openWarehouse } from '../../../src/load/index.js';

/** Test helper: opens a warehouse for writing (or, with `read`, for reading), says so, and holds it until killed. */
const warehouse = await openWarehouse(process.argv[2]!, { readOnly: process.argv[3] === 'read' });
process.stdout.write('ready\n');
setInterval(() => warehouse.path, 1000);
