import type { CommandModule } from 'yargs';
import { sandboxCommand } from './sandbox.js';

/** Every command of the CLI, in the order --help lists them. */
// biome-ignore lint/suspicious/noExplicitAny: yargs command modules differ in their argument types.
export const commands: CommandModule<any, any>[] = [sandboxCommand];
