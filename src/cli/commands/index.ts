import type { CommandModule } from 'yargs';
import { demoCommand } from './demo.js';
import { doctorCommand } from './doctor.js';
import { ingestCommand } from './ingest.js';
import { queryCommand } from './query.js';
import { receiveCommand } from './receive.js';
import { reportCommand } from './report.js';
import { sandboxCommand } from './sandbox.js';
import { scheduleCommand } from './schedule.js';
import { backfillCommand, syncCommand } from './sync.js';
import { exportCommand, rebuildCommand, statusCommand } from './warehouse.js';

/** Every command of the CLI, in the order --help lists them. */
// biome-ignore lint/suspicious/noExplicitAny: yargs command modules differ in their argument types.
export const commands: CommandModule<any, any>[] = [
  demoCommand,
  syncCommand,
  backfillCommand,
  ingestCommand,
  receiveCommand,
  statusCommand,
  reportCommand,
  queryCommand,
  exportCommand,
  rebuildCommand,
  doctorCommand,
  scheduleCommand,
  sandboxCommand,
];
