import { randomBytes } from 'node:crypto';
import { type Logger, silentLogger } from '../log.js';
import { deliverAll, webhookEnvelope } from './send.js';
import { Receiver } from './server.js';

/**
 * For the demo: documents delivered as the platform would, as signed webhooks, to a receiver on a free
 * loopback port that spools them for `store`; the receiver is stopped (its spool closed, ready to drain)
 * before this returns. Drain with drainStoreRun (pipelines/drain.ts).
 */

export interface LoopbackDocument {
  data: unknown;
  /** The envelope's api_version (the order's shape). */
  apiVersion: string;
  /** The envelope's object (default `order`). */
  object?: string;
}

export async function deliverThroughReceiver(options: {
  store: string;
  spoolDir: string;
  documents: LoopbackDocument[];
  logger?: Logger;
  concurrency?: number;
}): Promise<{ url: string; delivered: number }> {
  const secret = randomBytes(24).toString('hex');
  const receiver = await Receiver.start({
    host: '127.0.0.1',
    port: 0,
    endpoints: [
      {
        store: options.store,
        path: `/webhooks/${options.store}`,
        spoolDir: options.spoolDir,
        signatureHeader: 'X-Platform-Signature',
        secrets: [secret],
      },
    ],
    maxBodyBytes: 5 * 1024 * 1024,
    dedupEvents: 100_000,
    rotateBytes: 16 * 1024 * 1024,
    rotateMs: 60_000,
    requestTimeoutMs: 30_000,
    logger: options.logger ?? silentLogger,
  });
  const url = receiver.urls()[0]!.url;
  try {
    const payloads = options.documents.map((d, i) =>
      webhookEnvelope(d.data, {
        eventId: `demo-${i + 1}`,
        apiVersion: d.apiVersion,
        object: d.object ?? 'order',
      }),
    );
    const statuses = await deliverAll(url, secret, payloads, { concurrency: options.concurrency ?? 8 });
    const failed = statuses.filter((s) => s !== 200).length;
    if (failed > 0) throw new Error(`${failed} of ${statuses.length} webhooks were not acknowledged`);
    return { url, delivered: statuses.length };
  } finally {
    await receiver.stop();
  }
}
