import type { AddressInfo } from 'node:net';
import { API_VERSION_HEADER, HEADER_NAME } from '../../schemas/index.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { resolveTokens, type TokenSpec } from './http/auth.js';
import { FaultInjector, type FaultSpec } from './http/faults.js';
import { RateLimiter } from './http/rate-limit.js';
import { API_ROOT, createSandboxServer } from './http/server.js';
import { type SandboxStats, StatsRecorder } from './http/stats.js';
import { createStore } from './model/index.js';
import type { Scale, StoreModel } from './model/types.js';

/**
 * The sandbox: a seeded, in-process implementation of the whole Store Administration API over real HTTP.
 * Tests, benchmarks, the demo and `store-sync sandbox` start it; pipeline code never imports it.
 */

export { DEFAULT_TOKEN, parseTokenSpec, type TokenSpec } from './http/auth.js';
export {
  FAULT_KINDS,
  type FaultKind,
  type FaultSpec,
  formatFaultSpec,
  parseFaultSpec,
} from './http/faults.js';
export type { SandboxStats } from './http/stats.js';

export interface SandboxOptions {
  host?: string;
  /** 0 (the default) picks a free port. */
  port?: number;
  seed?: number;
  scale?: Scale;
  pageSize?: number;
  /** Requests per second per token; 0 turns the limit off. Default 4, the platform's published limit. */
  rateLimit?: number;
  latencyMs?: number;
  faults?: string | FaultSpec;
  /** `VALUE[:scope,scope…]` strings or specs; none means one token `sandbox-token` holding every scope. */
  tokens?: readonly (TokenSpec | string)[];
  /** Time source for records created or changed after seeding (defaults to the real clock). */
  clock?: () => Date;
  /**
   * The request header the API version is read from, as a deployment that names it differently would:
   * default X-Platform-API-Version. A version sent under any other name is not seen.
   */
  versionHeader?: string;
}

export interface Sandbox {
  /** The API root, ending in `/`: every path of spec part 4 is relative to it (`${baseUrl}products/`). */
  baseUrl: string;
  /** `http://host:port`, where the `/__sandbox/` routes live. */
  origin: string;
  store: StoreModel;
  tokens: readonly TokenSpec[];
  /** The request header the API version is read from. */
  versionHeader: string;
  stats(): SandboxStats;
  resetStats(): void;
  setFaults(spec: string | FaultSpec): FaultSpec;
  close(): Promise<void>;
}

function checkNumber(name: string, value: number, min: number, integer: boolean): number {
  if (!Number.isFinite(value) || value < min || (integer && !Number.isInteger(value))) {
    const kind = integer ? 'an integer' : 'a number';
    throw new StoreSyncError(ERROR_CODES.USAGE, `${name} must be ${kind} of at least ${min} (got ${value})`);
  }
  return value;
}

function listenHint(error: NodeJS.ErrnoException): string {
  if (error.code === 'EADDRINUSE') return 'the port is in use; choose another --port, or 0 for a free one';
  if (error.code === 'EACCES')
    return 'permission denied; ports below 1024 need privileges, choose another --port';
  if (error.code === 'EADDRNOTAVAIL') return 'this machine has no such address; check --host';
  return error.code ?? error.message;
}

export async function startSandbox(options: SandboxOptions = {}): Promise<Sandbox> {
  const host = options.host ?? '127.0.0.1';
  const port = checkNumber('port', options.port ?? 0, 0, true);
  const seed = checkNumber('seed', options.seed ?? 1, 0, true);
  const pageSize = checkNumber('page-size', options.pageSize ?? 100, 1, true);
  const rateLimit = checkNumber('rate-limit', options.rateLimit ?? 4, 0, false);
  const latencyMs = checkNumber('latency-ms', options.latencyMs ?? 0, 0, true);
  const versionHeader = options.versionHeader ?? API_VERSION_HEADER;
  if (!HEADER_NAME.test(versionHeader))
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `version-header must be an HTTP header name, such as X-Api-Version (got ${JSON.stringify(versionHeader)})`,
    );
  const tokens = resolveTokens(options.tokens);
  const faults = new FaultInjector(options.faults, seed);
  const stats = new StatsRecorder();
  const store = createStore({ seed, scale: options.scale ?? 'small', clock: options.clock });

  const { server, dropConnections } = createSandboxServer({
    model: store,
    tokens,
    pageSize,
    latencyMs,
    limiter: new RateLimiter(rateLimit),
    faults,
    stats,
    versionHeader,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        new StoreSyncError(ERROR_CODES.USAGE, `cannot listen on ${host}:${port}: ${listenHint(error)}`, {
          cause: error,
        }),
      ),
    );
    server.listen(port, host, () => resolve());
  });
  const address = server.address() as AddressInfo;
  // A wildcard listen address is not one a client can call; advertise loopback instead.
  const shown =
    address.address === '0.0.0.0' ? '127.0.0.1' : address.address === '::' ? '::1' : address.address;
  const hostText = shown.includes(':') ? `[${shown}]` : shown;
  const origin = `http://${hostText}:${address.port}`;

  let closing: Promise<void> | null = null;
  return {
    baseUrl: `${origin}${API_ROOT}/`,
    origin,
    store,
    tokens,
    versionHeader,
    stats: () => stats.snapshot(),
    resetStats: () => stats.reset(),
    setFaults: (spec) => faults.set(spec),
    close() {
      closing ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        dropConnections();
      });
      return closing;
    },
  };
}
