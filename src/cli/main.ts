// First: DuckDB's allocator reads its settings when DuckDB is loaded (see allocator.ts).
import '../load/allocator.js';
import { readFileSync } from 'node:fs';
import yargs from 'yargs';
import { hideBin } from 'yargs/helpers';
import { asStoreSyncError } from '../errors.js';
import { createLogger, redact } from '../log.js';
import { commandsFor } from './commands/index.js';
import { EXIT, exitCodeForError } from './exit-codes.js';

/**
 * The store-sync command line. Each command lives in src/cli/commands and sets process.exitCode;
 * errors that escape a command are printed here, once, as one paragraph (stack only with --verbose).
 */

/** Read before yargs parses, because a parse failure must be reported in the format asked for too. */
function jsonLogsRequested(argv: string[]): boolean {
  const at = argv.indexOf('--log-format');
  return argv.includes('--log-format=json') || (at >= 0 && argv[at + 1] === 'json');
}

/**
 * yargs drops a lone `-` from positionals (yargs/yargs#1312, still open), so `ingest -` would read nothing.
 * It is handed to yargs as a token no real argument can be (a NUL cannot be in a path or a shell word), and
 * every parsed value is turned back into `-` before the command runs: inputs keep their order, and an
 * option given `-` keeps it too.
 */
const DASH = '\u0000-';

function restoreDashes(argv: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(argv)) {
    if (value === DASH) argv[key] = '-';
    else if (Array.isArray(value)) argv[key] = value.map((v) => (v === DASH ? '-' : v));
  }
}

/**
 * store-sync's own version, from the package.json above this module (src/cli, dist/src/cli or the bundle's
 * dist/cli). Left to itself yargs reads the package.json it finds above the folder it was installed in or,
 * bundled, the one the command runs in: a project that installed store-sync would see its own version.
 */
function ownVersion(): string {
  for (let dir = new URL('./', import.meta.url); ; dir = new URL('../', dir)) {
    try {
      const manifest: Record<string, unknown> = JSON.parse(
        readFileSync(new URL('package.json', dir), 'utf8'),
      );
      if (manifest.name === 'store-sync' && typeof manifest.version === 'string') return manifest.version;
    } catch {
      // No package.json here, or not one that parses: look further up.
    }
    if (new URL('../', dir).href === dir.href) return 'unknown';
  }
}

function isAbort(error: unknown): boolean {
  for (let e = error; e instanceof Error; e = e.cause) if (e.name === 'AbortError') return true;
  return false;
}

async function main(argv: string[]): Promise<void> {
  const verbose = argv.includes('--verbose');
  // With --log-format json every stderr line is a JSON object, failures included, for log shippers.
  const jsonLog = jsonLogsRequested(argv) ? createLogger({ format: 'json' }) : null;
  const report = (error: unknown) => {
    const message = error instanceof Error ? error.message : String(error);
    const stack = verbose && error instanceof Error ? error.stack : undefined;
    if (jsonLog) {
      const { code } = asStoreSyncError(error);
      jsonLog.error('command.failed', { code, message, ...(stack ? { stack } : {}) });
    } else {
      process.stderr.write(`${redact(`error: ${message}`)}\n`);
      if (stack) process.stderr.write(`${redact(stack)}\n`);
    }
  };
  // Node's own crash dump would bypass the token masking: whatever escapes ends as the same paragraph.
  // A request abandoned by an interrupt may reject after its reader stopped listening; the command is
  // already stopping and says so itself, so that one is let go.
  const crash = (error: unknown) => {
    if (isAbort(error)) return;
    report(error);
    process.exit(exitCodeForError(error));
  };
  process.on('unhandledRejection', crash);
  process.on('uncaughtException', crash);
  try {
    await yargs(argv.map((token) => (token === '-' ? DASH : token)))
      .scriptName('store-sync')
      .version(ownVersion())
      // The command's own words are English; yargs's few ("Options", "choices") follow them rather than the
      // computer's language, which made a help text of two languages.
      .locale('en')
      // Before validation, so a refused value is reported as given.
      .middleware(restoreDashes, true)
      // Options are read by their dashed names; camel-case copies would only double every "Unknown argument".
      .parserConfiguration({ 'camel-case-expansion': false })
      .usage(
        "$0 <command> [options]\n\nCopy a store's Store Administration API into a DuckDB + Parquet warehouse.",
      )
      .command(await commandsFor(argv))
      .option('verbose', { type: 'boolean', description: 'Show stack traces and debug logs', global: true })
      .option('log-format', {
        choices: ['human', 'json'] as const,
        description: 'Log lines on stderr: human text or one JSON object per line',
        global: true,
      })
      .demandCommand(1, 'Name a command: store-sync <command> --help shows one in detail.')
      .strict()
      .recommendCommands()
      .epilogue(
        'Exit codes: 0 ok, 1 failed or interrupted, 2 usage or configuration error, 3 completed with rejections or a failed stream.',
      )
      .fail((reason, error) => {
        if (error) throw error;
        // yargs reports a misspelt command only by its suggestion; say what was wrong first.
        const message = reason.startsWith('Did you mean')
          ? `unknown command "${argv[0]}". ${reason}`
          : reason;
        if (jsonLog) jsonLog.error('command.usage', { code: 'usage', message });
        else process.stderr.write(`${message}\nRun with --help for usage.\n`);
        process.exit(EXIT.USAGE);
      })
      // yargs renders a command's whole help before it runs the command (to show it later if asked), and
      // wrapping every description to the terminal's width is the costliest part of a short command's
      // start-up after DuckDB itself. Help is printed only for --help (failures print their reason alone,
      // above), so the text is wrapped only then (docs/performance.md, "Start-up").
      .wrap(argv.includes('--help') ? Math.min(110, process.stdout.columns ?? 110) : null)
      .parseAsync();
  } catch (error) {
    report(error);
    process.exitCode = exitCodeForError(error);
  }
}

await main(hideBin(process.argv));
