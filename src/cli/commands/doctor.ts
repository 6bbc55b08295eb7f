import { access, constants, stat } from 'node:fs/promises';
import path from 'node:path';
import type { CommandModule } from 'yargs';
import type { StoreConfig, SyncConfig } from '../../config.js';
import { asStoreSyncError, ERROR_CODES, StoreSyncError } from '../../errors.js';
import { STREAM_NAMES } from '../../streams.js';
import { type JobArgs, resolveJob, selectStores, withJobOptions } from '../context.js';
import { EXIT } from '../exit-codes.js';

/**
 * `store-sync doctor`: a checklist of everything a sync needs, each failure with the fix. It reads only:
 * one cheap request per stream, and the warehouse opened read-only.
 */

interface Check {
  name: string;
  ok: boolean;
  detail: string;
  fix?: string;
}

async function storeChecks(store: StoreConfig): Promise<Check[]> {
  // Loaded here, not with the command's definition: every command's options are read at start.
  const { readToken } = await import('../../config.js');
  const { ApiClient, parseBaseUrl, probeStreamAccess, STREAMS } = await import('../../extract/index.js');
  const checks: Check[] = [];
  const label = `store ${store.name}`;
  try {
    const url = parseBaseUrl(store.baseUrl);
    checks.push({
      name: `${label}: base URL`,
      ok: true,
      detail: `${url.origin}${url.pathname} (${url.protocol === 'https:' ? 'TLS' : 'loopback, plain http allowed'})`,
    });
  } catch (error) {
    checks.push({
      name: `${label}: base URL`,
      ok: false,
      detail: asStoreSyncError(error).message,
      fix: 'use https, or http only to 127.0.0.1/localhost',
    });
    return checks;
  }
  // The name the requests send the version in: a store whose API expects another answers every one 400.
  checks.push({
    name: `${label}: API version header`,
    ok: true,
    detail: `${store.apiVersionHeader} (${store.apiVersionHeaderSource})`,
  });
  let token: string;
  try {
    token = readToken(store);
    checks.push({ name: `${label}: token`, ok: true, detail: `read from $${store.tokenEnv}` });
  } catch (error) {
    checks.push({
      name: `${label}: token`,
      ok: false,
      detail: asStoreSyncError(error).message,
      fix: `export ${store.tokenEnv}=<the store's API access token>`,
    });
    return checks;
  }
  const client = new ApiClient({
    baseUrl: store.baseUrl,
    token,
    rateLimit: store.rateLimit,
    apiVersionHeader: store.apiVersionHeader,
    retry: { maxRetries: 1 },
    timeouts: { connectMs: 5000, headersMs: 10_000, bodyMs: 10_000 },
  });
  try {
    const enabled = STREAM_NAMES.filter((name) => store.streams[name].enabled).map((name) => STREAMS[name]);
    const result = await probeStreamAccess(client, enabled);
    checks.push({
      name: `${label}: reachable and token accepted`,
      ok: true,
      detail: `${client.stats.requests} requests answered`,
    });
    for (const stream of result.readable)
      checks.push({
        name: `${label}: stream ${stream.name}`,
        ok: true,
        detail: `scope ${stream.scopes.join(' or ')} granted`,
      });
    for (const denied of result.denied) {
      checks.push({
        name: `${label}: stream ${denied.stream}`,
        ok: false,
        detail: 'the token lacks the scope',
        fix: `grant ${denied.scopes.join(' or ')} to the token, or disable the stream in the config`,
      });
    }
    // The store answered, but not for this stream: its endpoint refused or kept failing.
    for (const failed of result.failed) {
      checks.push({ name: `${label}: stream ${failed.stream}`, ok: false, detail: failed.error.message });
    }
  } catch (error) {
    const failure = asStoreSyncError(error);
    const fix = explainsItsFix(failure)
      ? undefined
      : failure.code === 'http_unauthorized'
        ? `the token in $${store.tokenEnv} is wrong or expired: create a new one in the store's API access settings`
        : failure.code === 'network' || failure.code === 'timeout' || failure.code === 'retries_exhausted'
          ? `check that ${store.baseUrl} is the store's API root and reachable from this machine`
          : // A plain list request refused as malformed is most often a version sent where the API does not look.
            failure.code === ERROR_CODES.HTTP_BAD_REQUEST
            ? `if the store's API takes the version in a header other than ${store.apiVersionHeader}, name it in apiVersionHeader (--api-version-header for a one-off job; docs/configuration.md)`
            : undefined;
    checks.push({
      name: `${label}: reachable and token accepted`,
      ok: false,
      detail: failure.message,
      ...(fix ? { fix } : {}),
    });
  } finally {
    await client.close();
  }
  return checks;
}

/**
 * Failures whose message already says the fix in one sentence, naming baseUrl (src/extract/http-errors.ts,
 * probe.ts): a wrong scheme, port, host name or base path. A general "check baseUrl" line under it would only
 * blur it. A request that gave up after its retries carries the last failure as its cause.
 */
function explainsItsFix(failure: StoreSyncError): boolean {
  const last = failure.cause instanceof StoreSyncError ? failure.cause : failure;
  return failure.details.setting === 'baseUrl' || last.details.setting === 'baseUrl';
}

async function warehouseChecks(config: SyncConfig): Promise<Check[]> {
  const folder = path.dirname(config.warehouse);
  // A sync or an ingest creates a missing folder (src/load/open.ts): what matters is that the nearest
  // folder that exists lets this user create it.
  let existing = folder;
  while (!(await stat(existing).catch(() => null)) && path.dirname(existing) !== existing)
    existing = path.dirname(existing);
  try {
    if (!(await stat(existing)).isDirectory()) throw new Error('not a folder');
    await access(existing, constants.W_OK);
  } catch {
    return [
      {
        name: 'warehouse folder',
        ok: false,
        detail:
          existing === folder
            ? `${folder} is not a writable folder`
            : `${folder} does not exist, and ${existing} does not let this user create it`,
        fix: `create ${folder} with write access for this user, or point "warehouse" elsewhere`,
      },
    ];
  }
  if (existing !== folder)
    return [
      {
        name: 'warehouse folder',
        ok: true,
        detail: `${folder} does not exist yet; the first sync or ingest creates it`,
      },
    ];
  const checks: Check[] = [{ name: 'warehouse folder', ok: true, detail: `${folder} is writable` }];
  try {
    await access(config.warehouse);
  } catch {
    checks.push({
      name: 'warehouse file',
      ok: true,
      detail: `${config.warehouse} will be created by the first sync`,
    });
    return checks;
  }
  try {
    const { openWarehouse } = await import('../../load/index.js');
    const { tableDefinitions } = await import('../../model/index.js');
    const warehouse = await openWarehouse(config.warehouse, { readOnly: true });
    try {
      const missing: string[] = [];
      let rows = 0;
      for (const table of tableDefinitions) {
        try {
          // Reading every table makes DuckDB verify the checksum of each block it reads.
          rows += await warehouse.countRows(table.name);
        } catch {
          missing.push(table.name);
        }
      }
      checks.push(
        missing.length === 0
          ? {
              name: 'warehouse integrity',
              ok: true,
              detail: `${tableDefinitions.length} tables readable, ${rows} rows`,
            }
          : {
              name: 'warehouse integrity',
              ok: false,
              detail: `unreadable or missing tables: ${missing.join(', ')}`,
              fix: 'run store-sync sync once to create them, or store-sync rebuild',
            },
      );
    } finally {
      await warehouse.close();
    }
  } catch (error) {
    const failure = asStoreSyncError(error);
    // A lock is another process at work, not damage: no reason to reach for a backup.
    const locked = failure.code === ERROR_CODES.WAREHOUSE_LOCKED;
    checks.push({
      name: 'warehouse integrity',
      ok: false,
      detail: failure.message,
      fix: locked
        ? 'nothing is wrong with the file: run doctor again once that process has finished'
        : 'restore the file from a backup',
    });
  }
  return checks;
}

export const doctorCommand: CommandModule<object, JobArgs> = {
  command: 'doctor',
  describe: 'Check the config, connectivity, TLS, token scopes per stream and the warehouse; print fixes',
  builder: (yargs) => withJobOptions(yargs) as never,
  handler: async (args) => {
    const checks: Check[] = [];
    let config: SyncConfig | null = null;
    try {
      config = await resolveJob(args, { needsApi: true });
      checks.push({
        name: 'config',
        ok: true,
        detail: `${config.stores.length} store(s), warehouse ${config.warehouse}`,
      });
    } catch (error) {
      checks.push({
        name: 'config',
        ok: false,
        detail: asStoreSyncError(error).message,
        fix: 'see docs/configuration.md',
      });
    }
    if (config) {
      for (const store of selectStores(config, args.store)) checks.push(...(await storeChecks(store)));
      checks.push(...(await warehouseChecks(config)));
    }
    for (const check of checks) {
      process.stdout.write(`${check.ok ? '[ok]  ' : '[FAIL]'} ${check.name}: ${check.detail}\n`);
      if (!check.ok && check.fix) process.stdout.write(`       fix: ${check.fix}\n`);
    }
    const failed = checks.filter((c) => !c.ok).length;
    process.stdout.write(failed === 0 ? 'all checks passed\n' : `${failed} check(s) failed\n`);
    process.exitCode = failed === 0 ? EXIT.OK : config ? EXIT.FAILED : EXIT.USAGE;
  },
};
