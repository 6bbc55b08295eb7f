import { readFile } from 'node:fs/promises';
import path from 'node:path';
import * as z from 'zod';
import { API_VERSION_HEADER, HEADER_NAME } from '../schemas/headers.js';
import { SCHEMA_CONTRACTS, type SchemaContract, type StreamOptions } from './contracts.js';
import { ERROR_CODES, StoreSyncError } from './errors.js';
import { isCalendarDay } from './extract/dates.js';
import { parseBaseUrl } from './extract/url-safety.js';
import { findJsonSyntaxError } from './json-syntax.js';
import type { ReadCopySettings } from './load/read-copy.js';
import { registerSecret } from './log.js';
import { DEFAULT_STREAM_OPTIONS, defaultStreamOptions, STREAM_NAMES, type StreamName } from './streams.js';

/**
 * sync.config.json: validated with zod, published as JSON Schema (schemas/sync.config.schema.json) for editors.
 * Tokens are never in the file: each store names the environment variable that holds its token.
 */

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const DAY = /^\d{4}-\d{2}-\d{2}$/;

export const StreamOptionsInput = z
  .strictObject({
    enabled: z.boolean().describe('Sync this stream (default true).'),
    startDate: z
      .string()
      .regex(DAY, { message: 'expected a date as YYYY-MM-DD' })
      .refine(isCalendarDay, { message: 'expected a calendar date as YYYY-MM-DD' })
      .nullable()
      .describe(
        'Earliest creation day of the records a windowed stream reads: the first run and full scans start there.',
      ),
    lookbackDays: z
      .int()
      .min(0)
      .max(365)
      .describe('Days re-read behind the watermark on every incremental run.'),
    windowDays: z.int().min(1).max(3660).describe('Size of one date-window slice, in days.'),
    fullRefreshDays: z
      .int()
      .min(1)
      .nullable()
      .describe('Run a full scan instead when the last one is older than this many days; null never.'),
    concurrency: z.int().min(1).max(16).describe('Slices read at once, all under the store rate limit.'),
    maxRefreshPerRun: z
      .int()
      .min(0)
      .describe('Most per-record refresh requests in one run (open fulfillment orders).'),
    refreshAgeFraction: z
      .number()
      .min(0)
      .max(1)
      .describe(
        'Re-read an open fulfillment order once the time since it was last read reaches this fraction of its age (at most 30 days); 0 re-reads every open one each run.',
      ),
    schemaContract: z
      .enum(SCHEMA_CONTRACTS as [SchemaContract, ...SchemaContract[]])
      .describe(
        "Fields the model does not map: evolve keeps them in the row's _extra (default), freeze rejects the record, discard drops them; all three name them in _schema_changes.",
      ),
  })
  .partial();

/** Ingested documents (`ingest`, and the receivers' spools): the one option that applies to them. */
export const DocumentsOptionsInput = StreamOptionsInput.pick({ schemaContract: true }).describe(
  'Options of ingested documents (store-sync ingest and the webhook spools).',
);

/** The name ingested documents go by in `streams` (as in `_rejected_records.stream` and `status`). */
export const DOCUMENTS_OPTIONS = 'documents';

const StreamsInput = z
  .strictObject({
    ...(Object.fromEntries(STREAM_NAMES.map((name) => [name, StreamOptionsInput.optional()])) as Record<
      StreamName,
      z.ZodOptional<typeof StreamOptionsInput>
    >),
    [DOCUMENTS_OPTIONS]: DocumentsOptionsInput.optional(),
  })
  .describe('Per-stream options; store-level entries override these.');

export const DEFAULT_SIGNATURE_HEADER = 'X-Platform-Signature';

/**
 * Headers the client sends itself or that HTTP framing owns: the version sent under one of these names would
 * replace the token, the body's type or the framing of every request.
 */
const CLIENT_OWNED_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'cookie',
  'accept',
  'content-type',
  'content-length',
  'transfer-encoding',
  'host',
  'connection',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'trailer',
]);

const ApiVersionHeaderInput = z
  .string()
  .regex(HEADER_NAME, {
    message: `expected an HTTP header name, such as ${API_VERSION_HEADER} or X-Api-Version`,
  })
  .refine((name) => !CLIENT_OWNED_HEADERS.has(name.toLowerCase()), {
    message:
      'expected a header of its own: Authorization, Accept, Content-Type and the framing headers (Host, Content-Length, …) are sent by the client itself',
  });

/** A store's webhook endpoint for `store-sync receive` (docs/receiver.md). */
export const StoreReceiverInput = z
  .strictObject({
    secretEnv: z
      .string()
      .regex(ENV_NAME, { message: 'expected the NAME of an environment variable, such as WEBHOOK_SECRET' })
      .describe(
        "Environment variable that holds the webhook's signing secret. The secret itself never goes in this file.",
      ),
    previousSecretEnv: z
      .string()
      .regex(ENV_NAME, {
        message: 'expected the NAME of an environment variable, such as WEBHOOK_SECRET_OLD',
      })
      .optional()
      .describe(
        'While the signing secret is being rotated: the variable holding the previous one, also accepted.',
      ),
    signatureHeader: z
      .string()
      .regex(HEADER_NAME, { message: 'expected an HTTP header name, such as X-Platform-Signature' })
      .optional()
      .describe(
        `Request header carrying the HMAC-SHA256 signature (hex); default ${DEFAULT_SIGNATURE_HEADER}.`,
      ),
    spoolDir: z
      .string()
      .min(1)
      .optional()
      .describe(
        "Folder of the store's spool of received events (default: spool/<store> beside the warehouse).",
      ),
    path: z
      .string()
      .regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]*$/, { message: 'expected a URL path such as /webhooks/main' })
      .optional()
      .describe("URL path the platform posts this store's events to (default /webhooks/<store>)."),
  })
  .describe(
    "This store's webhook endpoint, served by store-sync receive and drained by ingest --spool and sync.",
  );

/** Settings of the `store-sync receive` process, shared by every store's endpoint. */
export const ReceiverSettingsInput = z.strictObject({
  host: z.string().min(1).default('127.0.0.1').describe('Address the receiver listens on.'),
  port: z.int().min(0).max(65535).default(8789).describe('Port the receiver listens on (0: any free port).'),
  maxBodyBytes: z
    .int()
    .positive()
    .default(5 * 1024 * 1024)
    .describe('Largest request body accepted; a larger one is answered 413 and not spooled.'),
  dedupEvents: z
    .int()
    .min(0)
    .default(100_000)
    .describe(
      'How many of the latest event_ids a redelivery is recognised against (also after a restart, from the spool); 0 turns deduplication off.',
    ),
  rotateBytes: z
    .int()
    .min(4096)
    .default(16 * 1024 * 1024)
    .describe('A spool file is closed (and becomes drainable) once it holds this many bytes.'),
  rotateSeconds: z
    .number()
    .positive()
    .default(60)
    .describe('A spool file is closed (and becomes drainable) once it is this many seconds old.'),
  requestTimeoutSeconds: z
    .number()
    .positive()
    .default(30)
    .describe('A client that has not sent its whole request by then is disconnected.'),
  afterDrain: z
    .enum(['delete', 'archive'])
    .default('delete')
    .describe(
      'What a drain does with a spool file once its events are committed to the warehouse: delete it, or move it to archive/ in the spool folder.',
    ),
});

export const StoreInput = z.strictObject({
  name: z
    .string()
    .regex(/^[A-Za-z0-9_.-]{1,64}$/, { message: 'expected 1-64 letters, digits, dot, dash or underscore' })
    .describe('The store name, stored in every row as _store.'),
  baseUrl: z
    .url({ message: 'expected an absolute URL such as https://shop.example.com/api/' })
    // The API's paths are appended to it: a query or a fragment would end up in the middle of every URL.
    .refine((url) => !url.includes('?') && !url.includes('#'), {
      message: 'expected no query string (?…) or fragment (#…): the API paths are appended to it',
    })
    .describe('The store-specific administration API root ({base_url} in the spec).'),
  tokenEnv: z
    .string()
    .regex(ENV_NAME, { message: 'expected the NAME of an environment variable, such as STORE_TOKEN' })
    .describe('Environment variable that holds the bearer token. The token itself never goes in this file.'),
  rateLimit: z
    .number()
    .min(0)
    .optional()
    .describe('Requests per second for this store (default: top-level rateLimit).'),
  apiVersionHeader: ApiVersionHeaderInput.optional().describe(
    `Request header this store's API takes the API version in (default: top-level apiVersionHeader, else ${API_VERSION_HEADER}).`,
  ),
  streams: StreamsInput.optional(),
  receiver: StoreReceiverInput.optional(),
});

export const SyncConfigInput = z.strictObject({
  $schema: z.string().optional(),
  warehouse: z.string().min(1).describe('Path of the DuckDB warehouse file.'),
  warehouseLayout: z
    .enum(['single', 'per-store'])
    .default('single')
    .describe(
      'single: every store in the one warehouse file. per-store: each store in its own file, warehouses/<store>.duckdb beside the configured warehouse, so stores sync in parallel (sync --parallel N) without contending for one lock.',
    ),
  parquetDir: z.string().min(1).optional().describe('Folder for Parquet exports.'),
  exportAfterSync: z
    .boolean()
    .default(false)
    .describe('Export Parquet to parquetDir after every successful sync.'),
  rateLimit: z
    .number()
    .min(0)
    .default(4)
    .describe('Requests per second per store; the platform publishes 4. 0 = no limit.'),
  apiVersionHeader: ApiVersionHeaderInput.optional().describe(
    `Request header the API version is sent in, for deployments that name it differently (default ${API_VERSION_HEADER}); a store's own apiVersionHeader overrides it.`,
  ),
  maxRetries: z
    .int()
    .min(0)
    .max(20)
    .default(5)
    .describe('Retries of a failed request (5xx, timeout, reset) before the stream fails.'),
  timeoutSeconds: z
    .number()
    .positive()
    .default(30)
    .describe('Connect, headers and body timeout of one request (each an idle limit).'),
  requestDeadlineSeconds: z
    .number()
    .positive()
    .default(120)
    .describe(
      'Total time one request may take, from sending it to the end of its body, whatever its pace; then it counts as a timeout.',
    ),
  heartbeatSeconds: z
    .number()
    .positive()
    .default(30)
    .describe(
      'Seconds between heartbeat log lines of a running sync, ingest or rebuild: one per active stream, with its pages, records, requests, retries, 429s and current rate.',
    ),
  stallSeconds: z
    .number()
    .positive()
    .default(300)
    .describe(
      'Seconds without progress (no page committed, no response) after which a run logs a `stalled` warning naming what it waits for.',
    ),
  maxResponseBytes: z
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe(
      'Largest response body read from the API; a larger one fails its stream, nothing half-written.',
    ),
  maxWaitMinutes: z
    .number()
    .positive()
    .default(10)
    .describe(
      'Most time spent waiting (Retry-After, backoff) on one request across its retries; then the stream fails and resumes next run.',
    ),
  maxDocumentBytes: z
    .int()
    .positive()
    .default(64 * 1024 * 1024)
    .describe(
      'Largest single document ingest reads; a larger one is rejected with its size and the rest of its file loads.',
    ),
  maxRunMinutes: z
    .number()
    .positive()
    .nullable()
    .default(null)
    .describe(
      'Under schedule: a run still going after this many minutes is stopped cleanly and resumes next time; null never.',
    ),
  freshnessHours: z
    .number()
    .positive()
    .default(36)
    .describe('status flags a stream whose last success is older than this.'),
  keepHistory: z
    .boolean()
    .default(true)
    .describe(
      'Write <table>_history versions (subscriptions, fulfillment orders, locations, products and their variants, prices and stock) as loads observe changes. false writes none (a rebuild then re-derives none; turned on again, versions resume from the next load, with the gap not filled).',
    ),
  readCopy: z
    .strictObject({
      enabled: z
        .boolean()
        .default(true)
        .describe(
          'Publish a read copy after every run that records itself (sync, backfill, ingest, rebuild, drain).',
        ),
      path: z
        .string()
        .min(1)
        .optional()
        .describe(
          'Path of the read copy (default: beside the warehouse, warehouse.duckdb → warehouse.read.duckdb).',
        ),
      storageCompatibility: z
        .string()
        .regex(/^v1\.\d+\.\d+$/, {
          message: 'expected a DuckDB storage version from v1.0.0 on, e.g. "v1.0.0"',
        })
        .optional()
        .describe(
          'Write the read copy in the storage format of this DuckDB version (e.g. "v1.0.0"), for clients older than the warehouse needs; default: the warehouse\'s own format, copied as a file.',
        ),
    })
    .default({ enabled: true })
    .describe(
      'The read copy readers open while a run writes the warehouse (docs/operations.md, "Readers and the nightly sync").',
    ),
  waitForLockSeconds: z
    .number()
    .min(0)
    .default(0)
    .describe(
      'A writer that finds the warehouse locked by another process waits up to this many seconds for it (--wait-for-lock); 0 fails at once.',
    ),
  streams: StreamsInput.optional(),
  receiver: ReceiverSettingsInput.optional().describe(
    "Settings of store-sync receive (each store's endpoint is its own receiver block).",
  ),
  stores: z.array(StoreInput).min(1, { message: 'expected at least one store' }),
});

export type SyncConfigInput = z.input<typeof SyncConfigInput>;

export interface StoreConfig {
  name: string;
  baseUrl: string;
  tokenEnv: string;
  rateLimit: number;
  /** The request header the API version is sent in. */
  apiVersionHeader: string;
  /** Where that name was set, as doctor shows it: a config field (`stores[0].apiVersionHeader`), a flag, or `default`. */
  apiVersionHeaderSource: string;
  streams: Record<StreamName, StreamOptions>;
  /** Ingested documents' options (`streams.documents`). */
  documents: DocumentsOptions;
  /** The store's webhook endpoint, when it has one. */
  receiver?: StoreReceiverConfig | null;
}

export interface DocumentsOptions {
  schemaContract: SchemaContract;
}

export interface StoreReceiverConfig {
  secretEnv: string;
  previousSecretEnv: string | null;
  signatureHeader: string;
  /** Absolute. */
  spoolDir: string;
  path: string;
}

export type ReceiverSettings = z.output<typeof ReceiverSettingsInput>;

export type WarehouseLayout = 'single' | 'per-store';

export interface SyncConfig {
  warehouse: string;
  /** Where each store's data lives: the one warehouse, or `warehouses/<store>.duckdb` beside it (storeWarehouse). */
  warehouseLayout: WarehouseLayout;
  /** The configured warehouse, once `warehouse` was narrowed to one store's file (per-store, one store). */
  layoutWarehouse?: string;
  parquetDir: string | null;
  exportAfterSync: boolean;
  maxRetries: number;
  timeoutSeconds: number;
  requestDeadlineSeconds: number;
  heartbeatSeconds: number;
  stallSeconds: number;
  maxResponseBytes: number;
  maxWaitMinutes: number;
  maxDocumentBytes: number;
  maxRunMinutes: number | null;
  freshnessHours: number;
  keepHistory: boolean;
  readCopy: ReadCopySettings;
  waitForLockSeconds: number;
  /** Settings of store-sync receive (defaults when the config has none). */
  receiver?: ReceiverSettings;
  stores: StoreConfig[];
}

/** Turns zod issues into one line each: `stores[0].tokenEnv: expected the NAME of an environment variable`. */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map((issue) => {
    const where = issue.path.reduce<string>(
      (acc, part) =>
        typeof part === 'number' ? `${acc}[${part}]` : acc ? `${acc}.${String(part)}` : String(part),
      '',
    );
    return `${where || '(top level)'}: ${issue.message}`;
  });
}

function refuseLiteralTokens(raw: unknown, source: string): void {
  const stores = (raw as { stores?: unknown[] })?.stores;
  if (!Array.isArray(stores)) return;
  stores.forEach((store, index) => {
    if (store && typeof store === 'object' && ('token' in store || 'accessToken' in store)) {
      throw new StoreSyncError(
        ERROR_CODES.CONFIG_INVALID,
        `${source}: stores[${index}] contains a literal token. Tokens never go in the config file: put the token in an environment variable and name that variable in stores[${index}].tokenEnv.`,
        { details: { field: `stores[${index}].token` } },
      );
    }
  });
}

/** What is wrong with a version header name given outside the file (a flag), or null when it is fine. */
export function apiVersionHeaderProblem(name: string): string | null {
  const result = ApiVersionHeaderInput.safeParse(name);
  return result.success ? null : result.error.issues[0]!.message;
}

/**
 * Applies the token's safety rules (https, or plain http to this machine only; no credentials) when the
 * config is read, so the message names the field that holds the URL instead of surfacing mid-sync.
 */
export function checkBaseUrl(url: string, field: string, source?: string): void {
  try {
    parseBaseUrl(url);
  } catch (error) {
    if (!(error instanceof StoreSyncError)) throw error;
    throw new StoreSyncError(error.code, `${source ? `${source}: ` : ''}${field}: ${error.message}`, {
      cause: error,
      details: { field },
    });
  }
}

/** Validates a parsed config object; `source` names it in messages. Relative paths resolve against `baseDir`. */
export function parseConfig(raw: unknown, source: string, baseDir: string): SyncConfig {
  refuseLiteralTokens(raw, source);
  const result = SyncConfigInput.safeParse(raw);
  if (!result.success) {
    throw new StoreSyncError(
      ERROR_CODES.CONFIG_INVALID,
      `${source} is invalid:\n  ${describeIssues(result.error).join('\n  ')}`,
    );
  }
  const input = result.data;
  const names = new Set<string>();
  for (const store of input.stores) {
    if (names.has(store.name)) {
      throw new StoreSyncError(
        ERROR_CODES.CONFIG_INVALID,
        `${source}: two stores are named "${store.name}"; names must be unique.`,
      );
    }
    names.add(store.name);
  }
  // Each store's writer publishes its own copy: one path for all would have them overwrite each other's.
  if (input.warehouseLayout === 'per-store' && input.readCopy.path !== undefined && input.stores.length > 1) {
    throw new StoreSyncError(
      ERROR_CODES.CONFIG_INVALID,
      `${source}: readCopy.path: with warehouseLayout "per-store" each store's read copy is published beside its own warehouse file (warehouses/<store>.read.duckdb); leave readCopy.path out.`,
    );
  }
  for (const [index, store] of input.stores.entries()) {
    checkBaseUrl(store.baseUrl, `stores[${index}].baseUrl`, source);
  }
  const warehouse = path.resolve(baseDir, input.warehouse);
  const receivers = input.stores.map((store) => storeReceiver(store, warehouse, baseDir));
  refuseSharedEndpoints(receivers, source);
  return {
    warehouse,
    warehouseLayout: input.warehouseLayout,
    parquetDir: input.parquetDir ? path.resolve(baseDir, input.parquetDir) : null,
    exportAfterSync: input.exportAfterSync,
    maxRetries: input.maxRetries,
    timeoutSeconds: input.timeoutSeconds,
    requestDeadlineSeconds: input.requestDeadlineSeconds,
    heartbeatSeconds: input.heartbeatSeconds,
    stallSeconds: input.stallSeconds,
    maxResponseBytes: input.maxResponseBytes,
    maxWaitMinutes: input.maxWaitMinutes,
    maxDocumentBytes: input.maxDocumentBytes,
    maxRunMinutes: input.maxRunMinutes,
    freshnessHours: input.freshnessHours,
    keepHistory: input.keepHistory,
    readCopy: {
      enabled: input.readCopy.enabled,
      path: input.readCopy.path ? path.resolve(baseDir, input.readCopy.path) : null,
      storageCompatibility: input.readCopy.storageCompatibility ?? null,
    },
    waitForLockSeconds: input.waitForLockSeconds,
    receiver: ReceiverSettingsInput.parse(input.receiver ?? {}),
    stores: input.stores.map((store, index) => ({
      name: store.name,
      baseUrl: store.baseUrl.endsWith('/') ? store.baseUrl : `${store.baseUrl}/`,
      tokenEnv: store.tokenEnv,
      rateLimit: store.rateLimit ?? input.rateLimit,
      ...apiVersionHeaderOf(store.apiVersionHeader, input.apiVersionHeader, index),
      streams: Object.fromEntries(
        STREAM_NAMES.map((name) => [
          name,
          {
            ...defaultStreamOptions(name),
            ...input.streams?.[name],
            ...store.streams?.[name],
          },
        ]),
      ) as Record<StreamName, StreamOptions>,
      documents: {
        schemaContract:
          store.streams?.documents?.schemaContract ??
          input.streams?.documents?.schemaContract ??
          DEFAULT_STREAM_OPTIONS.schemaContract,
      },
      receiver: receivers[index]!,
    })),
  };
}

/** A store's version header: its own, else the top level's, else the spec's name; with where it was set. */
function apiVersionHeaderOf(
  own: string | undefined,
  topLevel: string | undefined,
  index: number,
): Pick<StoreConfig, 'apiVersionHeader' | 'apiVersionHeaderSource'> {
  if (own !== undefined)
    return { apiVersionHeader: own, apiVersionHeaderSource: `stores[${index}].apiVersionHeader` };
  if (topLevel !== undefined)
    return { apiVersionHeader: topLevel, apiVersionHeaderSource: 'apiVersionHeader' };
  return { apiVersionHeader: API_VERSION_HEADER, apiVersionHeaderSource: 'default' };
}

/** A store's receiver block with its defaults: the spool beside the warehouse, the path named after the store. */
export function storeReceiver(
  store: { name: string; receiver?: z.output<typeof StoreReceiverInput> | undefined },
  warehouse: string,
  baseDir: string,
): StoreReceiverConfig | null {
  const block = store.receiver;
  if (!block) return null;
  return {
    secretEnv: block.secretEnv,
    previousSecretEnv: block.previousSecretEnv ?? null,
    signatureHeader: block.signatureHeader ?? DEFAULT_SIGNATURE_HEADER,
    spoolDir: block.spoolDir
      ? path.resolve(baseDir, block.spoolDir)
      : path.join(path.dirname(warehouse), 'spool', store.name),
    path: block.path ?? `/webhooks/${store.name}`,
  };
}

/** Two stores on one path or one spool would file one store's events under the other. */
function refuseSharedEndpoints(receivers: (StoreReceiverConfig | null)[], source: string): void {
  for (const key of ['path', 'spoolDir'] as const) {
    const seen = new Map<string, number>();
    for (const [index, receiver] of receivers.entries()) {
      if (!receiver) continue;
      const other = seen.get(receiver[key]);
      if (other !== undefined)
        throw new StoreSyncError(
          ERROR_CODES.CONFIG_INVALID,
          `${source}: stores[${other}].receiver and stores[${index}].receiver have the same ${key} (${receiver[key]}); each store needs its own.`,
          { details: { field: `stores[${index}].receiver.${key}` } },
        );
      seen.set(receiver[key], index);
    }
  }
}

export async function loadConfig(file: string): Promise<SyncConfig> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    throw new StoreSyncError(
      ERROR_CODES.CONFIG_INVALID,
      `cannot read the config file ${file}: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'it does not exist (pass --config, or --base-url/--token-env/--warehouse for a one-off job)' : (error as Error).message}`,
      { cause: error },
    );
  }
  let raw: unknown;
  // Some editors save a byte order mark; it is not JSON, and the parser would quote it invisibly.
  const json = text.replace(/^\uFEFF/, '');
  try {
    raw = JSON.parse(json);
  } catch (error) {
    // FILE:LINE:COLUMN, as compilers say it, so an editor or a terminal jumps there.
    const where = findJsonSyntaxError(json);
    throw new StoreSyncError(
      ERROR_CODES.CONFIG_INVALID,
      where
        ? `${file}:${where.line}:${where.column}: ${where.message} (the config file is not valid JSON)`
        : `${file} is not valid JSON: ${(error as Error).message}`,
      { cause: error, ...(where ? { details: { line: where.line, column: where.column } } : {}) },
    );
  }
  return parseConfig(raw, file, path.dirname(path.resolve(file)));
}

/**
 * The warehouse file that holds a store's data: the configured one, or with `warehouseLayout: "per-store"`
 * `warehouses/<store>.duckdb` in the folder of the configured one (DuckDB admits one writer per file, so
 * stores synced in parallel need a file each).
 */
export function storeWarehouse(
  config: Pick<SyncConfig, 'warehouse' | 'warehouseLayout' | 'layoutWarehouse'>,
  store: string,
): string {
  if (config.warehouseLayout === 'single') return config.warehouse;
  return path.join(path.dirname(config.layoutWarehouse ?? config.warehouse), 'warehouses', `${store}.duckdb`);
}

/** Reads a store's token from its environment variable, or explains which variable to set. */
export function readToken(
  store: Pick<StoreConfig, 'name' | 'tokenEnv'>,
  env: NodeJS.ProcessEnv = process.env,
): string {
  const token = env[store.tokenEnv];
  if (!token) {
    throw new StoreSyncError(
      ERROR_CODES.TOKEN_MISSING,
      `the token of store "${store.name}" is missing: set the environment variable ${store.tokenEnv} to the store's API access token.`,
    );
  }
  // Masked from here on, in every log line and error message, before any client exists to register it.
  registerSecret(token);
  return token;
}

/** The JSON Schema published for editors (written to schemas/sync.config.schema.json by `npm run schemas`). */
export function configJsonSchema(): unknown {
  return z.toJSONSchema(SyncConfigInput, { io: 'input', target: 'draft-2020-12' });
}
