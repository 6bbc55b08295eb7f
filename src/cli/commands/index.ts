import type { CommandModule } from 'yargs';

// biome-ignore lint/suspicious/noExplicitAny: yargs command modules differ in their argument types.
type Command = CommandModule<any, any>;

/**
 * Every command of the CLI, in the order --help lists them: its name and how to import its module. A run
 * that names its command first (`store-sync query …`, as commands are written) imports that module alone;
 * --help and anything else import them all, which is cheap too because each module imports its heavy
 * parts (DuckDB, the API client, the pipelines) inside its handler (docs/performance.md, "Start-up").
 */
export const COMMANDS: readonly (readonly [name: string, load: () => Promise<Command>])[] = [
  ['demo', async () => (await import('./demo.js')).demoCommand],
  ['sync', async () => (await import('./sync.js')).syncCommand],
  ['backfill', async () => (await import('./sync.js')).backfillCommand],
  ['ingest', async () => (await import('./ingest.js')).ingestCommand],
  ['receive', async () => (await import('./receive.js')).receiveCommand],
  ['status', async () => (await import('./warehouse.js')).statusCommand],
  ['report', async () => (await import('./report.js')).reportCommand],
  ['query', async () => (await import('./query.js')).queryCommand],
  ['export', async () => (await import('./warehouse.js')).exportCommand],
  ['rebuild', async () => (await import('./warehouse.js')).rebuildCommand],
  ['doctor', async () => (await import('./doctor.js')).doctorCommand],
  ['schedule', async () => (await import('./schedule.js')).scheduleCommand],
  ['sandbox', async () => (await import('./sandbox.js')).sandboxCommand],
];

/**
 * The command modules a run needs: the one its first argument names, or every one (for --help, a misspelt
 * command yargs suggests a name for, options before the command).
 */
export async function commandsFor(argv: readonly string[]): Promise<Command[]> {
  const named = COMMANDS.find(([name]) => name === argv[0]);
  if (named) return [await named[1]()];
  return Promise.all(COMMANDS.map(([, load]) => load()));
}
