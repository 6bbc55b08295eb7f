import { existsSync } from 'node:fs';
import path from 'node:path';
import type { Argv } from 'yargs';
import type { StoreConfig, SyncConfig } from '../config.js';
import { ERROR_CODES, isStoreSyncError, StoreSyncError } from '../errors.js';
import { HISTORY_VARIABLE } from '../load/history-switch.js';
import { createLogger, type Logger } from '../log.js';
import { FAST_PATH_VARIABLE } from '../normalize/fast-switch.js';
import { enabledStreams, STREAM_NAMES, type StreamName } from '../streams.js';

/**
 * What every command shares: where the job comes from (a config file, or flags for a one-off job), which
 * store, and the logger. Flags describe a single store so scripts need no file (docs/configuration.md,
 * "One-off jobs without a file").
 */

export interface JobArgs {
  config?: string;
  'base-url'?: string;
  'token-env'?: string;
  'api-version-header'?: string;
  warehouse?: string;
  store?: string;
  'parquet-dir'?: string;
  'log-format'?: 'human' | 'json';
  verbose?: boolean;
}

export const DEFAULT_CONFIG_FILE = 'sync.config.json';

export function withJobOptions<T>(yargs: Argv<T>): Argv<T & JobArgs> {
  return yargs
    .option('config', {
      type: 'string',
      description: `Config file (default ./${DEFAULT_CONFIG_FILE} when present)`,
    })
    .option('base-url', {
      type: 'string',
      description: 'API base URL of a single store (no config file needed)',
    })
    .option('token-env', { type: 'string', description: "Environment variable holding that store's token" })
    .option('api-version-header', {
      type: 'string',
      description:
        "Request header that store's API takes the API version in (default X-Platform-API-Version)",
    })
    .option('warehouse', { type: 'string', description: 'DuckDB warehouse file' })
    .option('store', {
      type: 'string',
      description: 'Store name (from the config; "default" for a one-off job)',
    })
    .option('parquet-dir', { type: 'string', description: 'Parquet folder' })
    .group(
      ['config', 'base-url', 'token-env', 'api-version-header', 'warehouse', 'store', 'parquet-dir'],
      'Job:',
    ) as Argv<T & JobArgs>;
}

function usage(message: string): StoreSyncError {
  return new StoreSyncError(ERROR_CODES.USAGE, message);
}

/**
 * Whether the flags are the whole job (a one-off job) rather than a config file. --warehouse alone does not
 * describe a store: beside ./sync.config.json it overrides the file's path (docs/configuration.md); only
 * --base-url or --token-env make the flags the whole job.
 */
export function jobFromFlags(args: JobArgs): boolean {
  return (
    args.config === undefined &&
    (args['base-url'] !== undefined || args['token-env'] !== undefined || !existsSync(DEFAULT_CONFIG_FILE))
  );
}

/**
 * The job as a config, from --config / ./sync.config.json, or from flags. `needsApi` requires a base URL. The
 * config's `keepHistory` is put in force for the run (history-switch.ts), after checking a value the
 * environment gave the switch.
 */
export async function resolveJob(
  args: JobArgs,
  options: Parameters<typeof resolveJobConfig>[1],
): Promise<SyncConfig> {
  const given = process.env[HISTORY_VARIABLE];
  if (given !== undefined && given !== '' && given !== '0' && given !== '1')
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `${HISTORY_VARIABLE}=${JSON.stringify(given)}: expected 0 (no history versions) or 1 (keep them)`,
      { details: { field: HISTORY_VARIABLE } },
    );
  const config = await resolveJobConfig(args, options);
  if (!config.keepHistory) process.env[HISTORY_VARIABLE] = '0';
  return config;
}

async function resolveJobConfig(
  args: JobArgs,
  options: {
    needsApi: boolean;
    /**
     * The command works on one warehouse file (query, status, export, rebuild, ingest, report): with a file
     * per store and several stores, it must be told which (its name, for the message).
     */
    oneWarehouse?: string;
  },
): Promise<SyncConfig> {
  // Imported here, not above: every command module imports this file for its options, and the config's
  // zod schemas are not needed to print --help (docs/performance.md, "Start-up").
  const { apiVersionHeaderProblem, checkBaseUrl, loadConfig, parseConfig, storeWarehouse } = await import(
    '../config.js'
  );
  if (jobFromFlags(args)) {
    if (!args.warehouse) {
      throw usage(
        `no job described: pass --config FILE (or create ./${DEFAULT_CONFIG_FILE}), or --warehouse PATH${options.needsApi ? ' with --base-url URL and --token-env VAR' : ''} for a one-off job.`,
      );
    }
    if (options.needsApi && !args['base-url'])
      throw usage('--base-url is required with --warehouse when there is no config file.');
    if (options.needsApi && !args['token-env']) {
      throw usage(
        '--token-env is required: name the environment variable that holds the token (the token itself is never a flag).',
      );
    }
    if (args['base-url'] !== undefined) checkBaseUrl(args['base-url'], '--base-url');
    const versionHeader = args['api-version-header'];
    const problem = versionHeader === undefined ? null : apiVersionHeaderProblem(versionHeader);
    if (problem) throw usage(`--api-version-header: ${problem} (got ${JSON.stringify(versionHeader)})`);
    const raw = {
      warehouse: args.warehouse,
      ...(args['parquet-dir'] ? { parquetDir: args['parquet-dir'] } : {}),
      stores: [
        {
          name: args.store ?? 'default',
          baseUrl: args['base-url'] ?? 'http://127.0.0.1/unused/',
          tokenEnv: args['token-env'] ?? 'STORE_SYNC_TOKEN',
          ...(versionHeader === undefined ? {} : { apiVersionHeader: versionHeader }),
        },
      ],
    };
    const config = parseConfig(raw, 'the command-line flags', process.cwd());
    if (versionHeader !== undefined) config.stores[0]!.apiVersionHeaderSource = '--api-version-header';
    return config;
  }
  // A store's version header is part of its entry in the file; a flag for every store would hide that.
  if (args['api-version-header'] !== undefined) {
    throw usage(
      '--api-version-header describes the store of a one-off job (with --base-url and --token-env); with a config file, set apiVersionHeader in it.',
    );
  }
  const config = await loadConfig(args.config ?? DEFAULT_CONFIG_FILE);
  if (args.warehouse) config.warehouse = path.resolve(args.warehouse);
  // With a file per store, a command on one store (--store, or a config of one) works on that store's file;
  // over several, config.warehouse stays the layout's base (sync --parallel and export --lake resolve each).
  const only = args.store ?? (config.stores.length === 1 ? config.stores[0]!.name : undefined);
  if (config.warehouseLayout === 'per-store' && only !== undefined) {
    config.layoutWarehouse = config.warehouse;
    config.warehouse = storeWarehouse(config, only);
  } else if (config.warehouseLayout === 'per-store' && options.oneWarehouse !== undefined) {
    // The layout's base path is no store's file: reading it would find nothing, or create an empty one.
    throw usage(
      `${options.oneWarehouse}: with warehouseLayout "per-store" each store has its own warehouse file; name one with --store (${config.stores.map((s) => s.name).join(', ')})`,
    );
  }
  if (args['parquet-dir']) config.parquetDir = path.resolve(args['parquet-dir']);
  return config;
}

/** The stores a command works on: all, or the one named by --store. */
export function selectStores(config: SyncConfig, name: string | undefined): StoreConfig[] {
  if (name === undefined) return config.stores;
  const store = config.stores.find((s) => s.name === name);
  if (!store) {
    throw usage(
      `unknown store "${name}": the config has ${config.stores.map((s) => `"${s.name}"`).join(', ')}.`,
    );
  }
  return [store];
}

/**
 * The streams the config enables, per store (or --store's alone): `status`, the report and the demo list each
 * one, even one that has never completed a pass. A one-off job's flags enable none (its store is only a
 * name), so with `fromFlags` only what the warehouse holds is listed.
 */
export function expectedStreams(
  config: SyncConfig,
  args: { store?: string | undefined },
  fromFlags = false,
): { store: string; stream: StreamName }[] {
  return fromFlags ? [] : enabledStreams(selectStores(config, args.store));
}

/** Parses --streams a,b and refuses names that are not streams. */
export function parseStreamList(value: string | string[] | undefined): StreamName[] | null {
  if (value === undefined) return null;
  const names = (Array.isArray(value) ? value : [value])
    .flatMap((v) => v.split(','))
    .map((v) => v.trim())
    .filter(Boolean);
  const unknown = names.filter((n) => !(STREAM_NAMES as readonly string[]).includes(n));
  if (unknown.length > 0) {
    throw usage(
      `unknown stream${unknown.length > 1 ? 's' : ''} ${unknown.map((n) => `"${n}"`).join(', ')}: the streams are ${STREAM_NAMES.join(', ')}.`,
    );
  }
  return names as StreamName[];
}

/** `write` replaces the plain stderr line writer (progress bars take log lines to print above them). */
export function cliLogger(args: JobArgs, write?: (line: string) => void): Logger {
  return createLogger({
    format: args['log-format'] ?? 'human',
    level: args.verbose ? 'debug' : 'info',
    ...(write ? { write } : {}),
  });
}

/**
 * A read-only command (query, status) that meets a running writer's lock failed to read now: exit 1 as
 * docs/querying.md says, not 2, because nothing the user asked for is wrong and the same command will work
 * once the sync finishes. (A second WRITER is a usage error, exit 2, and stays one.)
 */
function readerBlocked(error: unknown): unknown {
  return isStoreSyncError(error, ERROR_CODES.WAREHOUSE_LOCKED)
    ? new StoreSyncError(ERROR_CODES.QUERY, error.message, { cause: error })
    : error;
}

export interface ReadCopyArgs {
  'read-copy'?: boolean;
}

/** `--read-copy` of query, status and export. */
export function withReadCopyOption<T>(yargs: Argv<T>): Argv<T & ReadCopyArgs> {
  return yargs.option('read-copy', {
    type: 'boolean',
    description:
      'Read the published read copy (readCopy in the config; default warehouse.read.duckdb beside the warehouse) even when no run is writing the warehouse. Without it the read copy is read only while a run holds the warehouse',
  }) as Argv<T & ReadCopyArgs>;
}

/**
 * Runs `read` on the warehouse, or on its published read copy (src/load/read-copy.ts): with --read-copy, or
 * when a writer holds the warehouse (DuckDB admits no reader then) and a copy exists. Which file was read,
 * and how old a copy is, goes to stderr, so stdout stays the result. Without a copy a locked warehouse is
 * the reader's failure, exit 1 (readerBlocked).
 */
export async function readWarehouseOrCopy<T>(
  config: SyncConfig,
  args: ReadCopyArgs,
  read: (file: string) => Promise<T>,
): Promise<T> {
  const { ageText, readCopyPath, readCopyPublishedAt } = await import('../load/read-copy.js');
  const copy = readCopyPath(config.warehouse, config.readCopy);
  const publishedAt = readCopyPublishedAt(copy);
  if (args['read-copy']) {
    if (publishedAt === null)
      throw new StoreSyncError(
        ERROR_CODES.WAREHOUSE_PATH,
        `--read-copy: there is no read copy at ${copy} yet: a writer publishes it after each run (sync, ingest, rebuild) when readCopy.enabled is true`,
        { details: { field: 'readCopy.path' } },
      );
    process.stderr.write(`reading the read copy ${copy}, published ${ageText(publishedAt)}\n`);
    return read(copy);
  }
  try {
    return await read(config.warehouse);
  } catch (error) {
    if (!isStoreSyncError(error, ERROR_CODES.WAREHOUSE_LOCKED)) throw error;
    if (publishedAt === null)
      throw readerBlocked(
        new StoreSyncError(
          ERROR_CODES.WAREHOUSE_LOCKED,
          `${error.message}; no read copy to read instead (${copy} does not exist yet: one is published after each run unless readCopy.enabled is false)`,
          { cause: error, details: error.details },
        ),
      );
    const { pid } = error.details;
    process.stderr.write(
      `reading the read copy ${copy}, published ${ageText(publishedAt)} (the warehouse is being written${pid ? ` by pid ${pid}` : ''})\n`,
    );
    return read(copy).catch((failure: unknown) => {
      throw readerBlocked(failure);
    });
  }
}

export interface WaitForLockArgs {
  'wait-for-lock'?: number;
}

/** `--wait-for-lock` of the commands that write the warehouse. */
export function withWaitForLockOption<T>(yargs: Argv<T>): Argv<T & WaitForLockArgs> {
  return yargs.option('wait-for-lock', {
    type: 'number',
    description:
      "Seconds to wait for another process that holds the warehouse to let go, instead of the config's waitForLockSeconds (default 0: fail at once, naming its pid). Says every 30 s that it waits",
  }) as Argv<T & WaitForLockArgs>;
}

/** Applies `--wait-for-lock` to the job: seconds, 0 or more. */
export function applyWaitForLock(config: SyncConfig, args: WaitForLockArgs): void {
  const value = args['wait-for-lock'];
  if (value === undefined) return;
  if (!Number.isFinite(value) || value < 0)
    throw badNumber('wait-for-lock', 'a number of seconds, 0 or more', value);
  config.waitForLockSeconds = value;
}

/** A usage error for numeric option `--name`: what it must be, and what it got (yargs gives NaN for text). */
function badNumber(name: string, expected: string, value: number): StoreSyncError {
  const got = Number.isNaN(value) ? 'something that is not a number' : String(value);
  return new StoreSyncError(ERROR_CODES.USAGE, `--${name} must be ${expected} (got ${got})`);
}

/** A numeric option that must be a whole number in range: a usage error naming the option otherwise. */
export function integerOption(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max)
    throw badNumber(name, `an integer from ${min} to ${max}`, value);
  return value;
}

/**
 * A numeric option that must be a number above zero (hours, say): a usage error naming the option otherwise,
 * saying it must be `expected`.
 */
export function positiveNumberOption(name: string, value: number, expected = 'a number above 0'): number {
  if (!Number.isFinite(value) || value <= 0) throw badNumber(name, expected, value);
  return value;
}

export interface WorkersArgs {
  workers?: number;
}

/** `--workers` of ingest and rebuild: threads that read, parse and normalize while the main thread loads. */
export function withWorkersOption<T>(yargs: Argv<T>): Argv<T & WorkersArgs> {
  return yargs.option('workers', {
    type: 'number',
    description:
      'Worker threads that read, parse and normalize documents while the main thread loads them into DuckDB (default: one per core but one, at least 1 and at most 4, for 16 MB of input or more; 0: none)',
  }) as Argv<T & WorkersArgs>;
}

export const workersFrom = (args: WorkersArgs): number | undefined =>
  args.workers === undefined ? undefined : integerOption('workers', args.workers, 0, 64);

export interface FastPathArgs {
  'fast-path'?: boolean;
}

/** `--no-fast-path` of ingest, rebuild and sync (src/normalize/fast-switch.ts). */
export function withFastPathOption<T>(yargs: Argv<T>): Argv<T & FastPathArgs> {
  return yargs.option('fast-path', {
    type: 'boolean',
    description: `Read documents with the byte-scanning fast path (on unless ${FAST_PATH_VARIABLE}=0). --no-fast-path parses every document with JSON.parse instead: the same rows, more slowly, to rule out a fast-path bug`,
  }) as Argv<T & FastPathArgs>;
}

/**
 * Applies `--fast-path`/`--no-fast-path` to the run, through the environment variable that worker threads
 * inherit, after checking a value the environment gave it.
 */
export function useFastPathSwitch(args: FastPathArgs): void {
  const given = process.env[FAST_PATH_VARIABLE];
  if (given !== undefined && given !== '' && given !== '0' && given !== '1')
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `${FAST_PATH_VARIABLE}=${JSON.stringify(given)}: expected 0 (fast path off) or 1 (on)`,
      { details: { field: FAST_PATH_VARIABLE } },
    );
  if (args['fast-path'] !== undefined) process.env[FAST_PATH_VARIABLE] = args['fast-path'] ? '1' : '0';
}

export interface RateLimitArgs {
  'rate-limit'?: number;
}

/** `--rate-limit` of sync and backfill: the requests per second of every store of this run. */
export function withRateLimitOption<T>(yargs: Argv<T>): Argv<T & RateLimitArgs> {
  return yargs.option('rate-limit', {
    type: 'number',
    description:
      "Requests per second to each store for this run, instead of the config's rateLimit (default 4, the platform's published limit); 0: no limit",
  }) as Argv<T & RateLimitArgs>;
}

/**
 * Applies `--rate-limit` to every store of the job, checked as the sandbox checks its own: a number of
 * requests per second, or 0 for none.
 */
export function applyRateLimit(config: SyncConfig, args: RateLimitArgs): void {
  const value = args['rate-limit'];
  if (value === undefined) return;
  if (!Number.isFinite(value) || value < 0)
    throw badNumber('rate-limit', 'a number of requests per second, or 0 for none', value);
  for (const store of config.stores) store.rateLimit = value;
}

export interface FreshnessArgs {
  'freshness-hours'?: number;
}

/** `--freshness-hours` of status and report: `judged` says what they do with a stale stream. */
export function withFreshnessOption<T>(yargs: Argv<T>, judged: string): Argv<T & FreshnessArgs> {
  return yargs.option('freshness-hours', {
    type: 'number',
    description: `${judged} (default: the config's freshnessHours, 36)`,
  }) as Argv<T & FreshnessArgs>;
}

/**
 * The freshness bound in force: `--freshness-hours`, else the config's. A typo (36h) is refused rather than
 * turning the check off: `status --json || alert` would then never alert.
 */
export function freshnessHours(config: SyncConfig, args: FreshnessArgs): number {
  const given = args['freshness-hours'];
  return given === undefined ? config.freshnessHours : positiveNumberOption('freshness-hours', given);
}
