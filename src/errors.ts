/**
 * The one error vocabulary of store-sync. Every failure the pipeline can report is a StoreSyncError
 * with a string `code`; `transient` says whether retrying the same request may succeed. The CLI maps
 * codes to exit codes in one place (src/cli/exit-codes.ts); nothing else decides an exit code.
 */

export const ERROR_CODES = {
  // Usage and configuration: the operator must change what they asked for (exit 2).
  USAGE: 'usage',
  CONFIG_INVALID: 'config_invalid',
  TOKEN_MISSING: 'token_missing',
  UNSAFE_URL: 'unsafe_url',
  WAREHOUSE_PATH: 'warehouse_path',
  WAREHOUSE_LOCKED: 'warehouse_locked',
  EXPORT_LOCKED: 'export_locked',
  // Talking to the API.
  HTTP_BAD_REQUEST: 'http_bad_request',
  HTTP_UNAUTHORIZED: 'http_unauthorized',
  HTTP_FORBIDDEN: 'http_forbidden',
  HTTP_NOT_FOUND: 'http_not_found',
  HTTP_RATE_LIMITED: 'http_rate_limited',
  HTTP_SERVER: 'http_server',
  HTTP_STATUS: 'http_status',
  NETWORK: 'network',
  TIMEOUT: 'timeout',
  BAD_RESPONSE: 'bad_response',
  FOREIGN_ORIGIN: 'foreign_origin',
  CURSOR_LOOP: 'cursor_loop',
  RETRIES_EXHAUSTED: 'retries_exhausted',
  // Storage and input files.
  WAREHOUSE: 'warehouse',
  INGEST: 'ingest',
  QUERY: 'query',
  INTERNAL: 'internal',
} as const;

export type ErrorCode = (typeof ERROR_CODES)[keyof typeof ERROR_CODES];

export interface ErrorDetails {
  method?: string;
  /** URL path and query only: never the origin's credentials, never a header. */
  path?: string;
  status?: number;
  bodyExcerpt?: string;
  field?: string;
  [key: string]: unknown;
}

export class StoreSyncError extends Error {
  override readonly name = 'StoreSyncError';
  readonly code: ErrorCode;
  readonly transient: boolean;
  readonly details: ErrorDetails;

  constructor(
    code: ErrorCode,
    message: string,
    options: { cause?: unknown; transient?: boolean; details?: ErrorDetails } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.transient = options.transient ?? false;
    this.details = options.details ?? {};
  }
}

export function isStoreSyncError(error: unknown, code?: ErrorCode): error is StoreSyncError {
  return error instanceof StoreSyncError && (code === undefined || error.code === code);
}

/** Wraps anything thrown into the vocabulary, keeping the original as `cause`. */
export function asStoreSyncError(error: unknown, code: ErrorCode = ERROR_CODES.INTERNAL): StoreSyncError {
  if (error instanceof StoreSyncError) return error;
  const message = error instanceof Error ? error.message : String(error);
  return new StoreSyncError(code, message, { cause: error });
}
