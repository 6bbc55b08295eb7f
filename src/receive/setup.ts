import path from 'node:path';
import {
  DEFAULT_SIGNATURE_HEADER,
  type ReceiverSettings,
  ReceiverSettingsInput,
  type StoreReceiverConfig,
  type SyncConfig,
} from '../config.js';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { type Logger, registerSecret } from '../log.js';
import type { ReceiverEndpoint } from './server.js';

/**
 * Which stores' receivers a command works on, from the config's receiver blocks, or from flags for a job
 * without a config file (`--secret-env`, `--spool-dir`).
 */

export interface ReceiverFlags {
  store?: string;
  warehouse?: string;
  host?: string;
  port?: number;
  path?: string;
  'secret-env'?: string;
  'previous-secret-env'?: string;
  'signature-header'?: string;
  'spool-dir'?: string;
}

export interface ReceiverStore {
  name: string;
  receiver: StoreReceiverConfig;
}

const usage = (message: string) => new StoreSyncError(ERROR_CODES.USAGE, message);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** A receiver described by flags alone: one store, its spool given or beside the warehouse. */
export function receiverFromFlags(flags: ReceiverFlags): ReceiverStore {
  const name = flags.store ?? 'default';
  const secretEnv = flags['secret-env'];
  if (!secretEnv)
    throw usage(
      'no receiver described: pass --config FILE with a receiver block in the store (docs/receiver.md), or --secret-env VAR with --spool-dir DIR (or --warehouse PATH) for one without a config file.',
    );
  const spoolDir =
    flags['spool-dir'] ??
    (flags.warehouse ? path.join(path.dirname(path.resolve(flags.warehouse)), 'spool', name) : undefined);
  if (!spoolDir)
    throw usage('--spool-dir DIR (or --warehouse PATH, to keep the spool beside it) is required.');
  return {
    name,
    receiver: {
      secretEnv,
      previousSecretEnv: flags['previous-secret-env'] ?? null,
      signatureHeader: flags['signature-header'] ?? DEFAULT_SIGNATURE_HEADER,
      spoolDir: path.resolve(spoolDir),
      path: flags.path ?? `/webhooks/${name}`,
    },
  };
}

/**
 * The stores of a config that have a receiver (or the one named by --store), with the flags' overrides,
 * which describe one receiver and so need one store.
 */
export function receiversFromConfig(config: SyncConfig, flags: ReceiverFlags): ReceiverStore[] {
  const overrides = (
    ['secret-env', 'previous-secret-env', 'signature-header', 'spool-dir', 'path'] as const
  ).filter((flag) => flags[flag] !== undefined);
  const named =
    flags.store === undefined ? config.stores : config.stores.filter((s) => s.name === flags.store);
  if (named.length === 0)
    throw usage(
      `unknown store "${flags.store}": the config has ${config.stores.map((s) => `"${s.name}"`).join(', ')}.`,
    );
  if (overrides.length > 0) {
    if (named.length !== 1)
      throw usage(`--${overrides[0]} describes one store's receiver: pass --store NAME to say which.`);
    const store = named[0]!;
    const base = store.receiver ?? null;
    const secretEnv = flags['secret-env'] ?? base?.secretEnv;
    if (!secretEnv)
      throw usage(
        `store "${store.name}" has no receiver block in the config: add one (docs/receiver.md) or pass --secret-env VAR.`,
      );
    return [
      {
        name: store.name,
        receiver: {
          secretEnv,
          previousSecretEnv: flags['previous-secret-env'] ?? base?.previousSecretEnv ?? null,
          signatureHeader: flags['signature-header'] ?? base?.signatureHeader ?? DEFAULT_SIGNATURE_HEADER,
          spoolDir: flags['spool-dir']
            ? path.resolve(flags['spool-dir'])
            : (base?.spoolDir ?? path.join(path.dirname(config.warehouse), 'spool', store.name)),
          path: flags.path ?? base?.path ?? `/webhooks/${store.name}`,
        },
      },
    ];
  }
  const found = named.flatMap((s) => (s.receiver ? [{ name: s.name, receiver: s.receiver }] : []));
  if (found.length === 0)
    throw usage(
      flags.store === undefined
        ? 'no store in the config has a receiver block: add "receiver": {"secretEnv": "WEBHOOK_SECRET"} to a store (docs/receiver.md), or pass --secret-env VAR.'
        : `store "${flags.store}" has no receiver block in the config: add one (docs/receiver.md) or pass --secret-env VAR.`,
    );
  return found;
}

/** The receive command's settings: the config's receiver settings (or the defaults), then --host and --port. */
export function receiverSettings(config: SyncConfig | null, flags: ReceiverFlags): ReceiverSettings {
  const settings = config?.receiver ?? ReceiverSettingsInput.parse({});
  return {
    ...settings,
    ...(flags.host !== undefined ? { host: flags.host } : {}),
    ...(flags.port !== undefined ? { port: flags.port } : {}),
  };
}

/**
 * A store's endpoint with its secrets read from the environment (and masked in every log line from here on).
 * A missing signing secret stops the command; a missing previous one only means the rotation is over.
 */
export function endpointOf(
  store: ReceiverStore,
  logger: Logger,
  env: NodeJS.ProcessEnv = process.env,
): ReceiverEndpoint {
  const { receiver } = store;
  for (const name of [receiver.secretEnv, receiver.previousSecretEnv]) {
    if (name !== null && !ENV_NAME.test(name))
      throw usage(`${name} is not an environment variable name (expected letters, digits and _).`);
  }
  const secret = env[receiver.secretEnv];
  if (!secret)
    throw new StoreSyncError(
      ERROR_CODES.TOKEN_MISSING,
      `the webhook signing secret of store "${store.name}" is missing: set the environment variable ${receiver.secretEnv} to it.`,
    );
  registerSecret(secret);
  const secrets = [secret];
  if (receiver.previousSecretEnv !== null) {
    const previous = env[receiver.previousSecretEnv];
    if (previous) {
      registerSecret(previous);
      secrets.push(previous);
    } else
      logger.warn('receive.previous_secret_unset', {
        store: store.name,
        variable: receiver.previousSecretEnv,
        message: 'only the current secret is accepted',
      });
  }
  return {
    store: store.name,
    path: receiver.path,
    spoolDir: receiver.spoolDir,
    signatureHeader: receiver.signatureHeader,
    secrets,
  };
}
