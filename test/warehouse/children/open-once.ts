import { openWarehouse } from '../../../src/load/index.js';

/**
 * Test helper: waits until the epoch millisecond given, so that several of it start together, then opens the
 * warehouse for writing, says `opened` or the error's code, and closes it.
 */
const [file, startAt] = process.argv.slice(2) as [string, string];
while (Date.now() < Number(startAt)) {
  // Spinning, not a timer: a timer's wake-up would spread the children's starts over milliseconds.
}
try {
  const warehouse = await openWarehouse(file);
  process.stdout.write('opened\n');
  await warehouse.close();
} catch (error) {
  process.stdout.write(`${(error as { code?: string }).code ?? String(error)}\n`);
}
