import type { CommandModule } from 'yargs';
import type { SyncConfig } from '../../config.js';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';
import type { ReceiverFlags, ReceiverStore } from '../../receive/setup.js';
import {
  cliLogger,
  integerOption,
  type JobArgs,
  jobFromFlags,
  resolveJob,
  withJobOptions,
} from '../context.js';
import { StopOnSignal } from '../stop.js';

interface ReceiveArgs extends JobArgs, Omit<ReceiverFlags, 'store' | 'warehouse'> {}

export const receiveCommand: CommandModule<object, ReceiveArgs> = {
  command: 'receive',
  describe:
    "Receive the store's signed webhook events (orders as they happen) into a spool that ingest --spool and sync drain",
  builder: (yargs) =>
    withJobOptions(yargs)
      .option('host', { type: 'string', description: 'Address to listen on (default 127.0.0.1)' })
      .option('port', { type: 'number', description: 'Port to listen on (default 8789; 0: any free port)' })
      .option('path', {
        type: 'string',
        description: "URL path of the store's endpoint (default /webhooks/<store>)",
      })
      .option('secret-env', {
        type: 'string',
        description: 'Environment variable holding the signing secret (the secret itself is never a flag)',
      })
      .option('previous-secret-env', {
        type: 'string',
        description: 'Environment variable holding the previous secret, also accepted while rotating',
      })
      .option('signature-header', {
        type: 'string',
        description: 'Header carrying the HMAC-SHA256 hex signature (default X-Platform-Signature)',
      })
      .option('spool-dir', {
        type: 'string',
        description: 'Spool folder (default spool/<store> beside the warehouse)',
      })
      .group(
        ['host', 'port', 'path', 'secret-env', 'previous-secret-env', 'signature-header', 'spool-dir'],
        'Receiver:',
      )
      .example(
        'WEBHOOK_SECRET=… $0 receive --secret-env WEBHOOK_SECRET --spool-dir spool/',
        'Serve POST /webhooks/default on 127.0.0.1:8789 without a config file',
      )
      .example('$0 receive', 'Serve every store of sync.config.json that has a receiver block')
      .epilogue(
        'Answers 200 once an event is synced to disk; 401 for a missing or wrong signature, 400 for a body that is not a JSON object, 413 past the size limit, 503 when the spool cannot be written. GET /healthz reports the spools. SIGTERM or Ctrl-C stops cleanly (exit 0). See docs/receiver.md.',
      ) as never,
  handler: async (args) => {
    const logger = cliLogger(args);
    if (args.port !== undefined) integerOption('port', args.port, 0, 65535);
    const { endpointOf, receiverFromFlags, receiverSettings, receiversFromConfig } = await import(
      '../../receive/setup.js'
    );
    let config: SyncConfig | null = null;
    let stores: ReceiverStore[];
    if (jobFromFlags(args)) stores = [receiverFromFlags(args)];
    else {
      config = await resolveJob(args, { needsApi: false });
      stores = receiversFromConfig(config, args);
    }
    const settings = receiverSettings(config, args);
    const endpoints = stores.map((store) => endpointOf(store, logger));
    const { Receiver } = await import('../../receive/server.js');
    // The first signal stops cleanly; a second ends the process at once (what was acknowledged is synced).
    const stop = new StopOnSignal(
      logger,
      'receive.stopping',
      'answering the requests in flight, then syncing and closing the spool',
    );
    try {
      const receiver = await Receiver.start({
        host: settings.host,
        port: settings.port,
        endpoints,
        maxBodyBytes: settings.maxBodyBytes,
        dedupEvents: settings.dedupEvents,
        rotateBytes: settings.rotateBytes,
        rotateMs: settings.rotateSeconds * 1000,
        requestTimeoutMs: settings.requestTimeoutSeconds * 1000,
        logger,
      }).catch((error: NodeJS.ErrnoException) => {
        if (error.code === 'EADDRINUSE' || error.code === 'EACCES' || error.code === 'EADDRNOTAVAIL')
          throw new StoreSyncError(
            ERROR_CODES.USAGE,
            `cannot listen on ${settings.host}:${settings.port}: ${error.message} (pass --port, or set receiver.port)`,
            { cause: error },
          );
        throw error;
      });
      const urls = receiver.urls();
      for (const [index, { store, url }] of urls.entries()) {
        logger.info('receive.listening', { store, url, spoolDir: endpoints[index]!.spoolDir });
        process.stdout.write(`${url}\n`);
      }
      if (!stop.signal.aborted)
        await new Promise((resolve) => stop.signal.addEventListener('abort', resolve, { once: true }));
      await receiver.stop();
      logger.info('receive.stopped', { message: 'every acknowledged event is in the spool' });
      process.exitCode = 0;
    } finally {
      stop.release();
    }
  },
};
