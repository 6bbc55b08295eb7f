import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { orderDocuments } from '../../bench/warehouse-data.js';
import { createLogger, type Logger } from '../../src/log.js';
import { webhookEnvelope } from '../../src/receive/send.js';
import { Receiver, type ReceiverOptions } from '../../src/receive/server.js';

export const SECRET = 'whsec-receive-test-5Kq9';
export const PREVIOUS_SECRET = 'whsec-previous-test-8Zr2';

export async function tempDir(): Promise<{ dir: string; cleanup: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-receive-'));
  return { dir, cleanup: () => rm(dir, { recursive: true, force: true }) };
}

/** A logger whose lines are kept, to look for an event. */
export function recordingLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return { logger: createLogger({ format: 'json', level: 'debug', write: (l) => lines.push(l) }), lines };
}

/** A receiver in this process with one store, "main", at /webhooks/main. */
export async function startReceiver(
  spoolDir: string,
  overrides: Partial<ReceiverOptions> = {},
): Promise<{ receiver: Receiver; url: string; origin: string; lines: string[] }> {
  const { logger, lines } = recordingLogger();
  const receiver = await Receiver.start({
    host: '127.0.0.1',
    port: 0,
    endpoints: [
      {
        store: 'main',
        path: '/webhooks/main',
        spoolDir,
        signatureHeader: 'X-Platform-Signature',
        secrets: [SECRET, PREVIOUS_SECRET],
      },
    ],
    maxBodyBytes: 5 * 1024 * 1024,
    dedupEvents: 100_000,
    rotateBytes: 16 * 1024 * 1024,
    rotateMs: 60_000,
    requestTimeoutMs: 30_000,
    logger,
    ...overrides,
  });
  const url = receiver.urls()[0]!.url;
  return { receiver, url, origin: new URL(url).origin, lines };
}

/** Every event of every spool file (closed, open and archived), parsed, in file order. */
export async function spooled(dir: string): Promise<Record<string, unknown>[]> {
  const out: Record<string, unknown>[] = [];
  const files: string[] = [];
  for (const sub of ['', 'archive']) {
    const names = await readdir(path.join(dir, sub)).catch(() => [] as string[]);
    for (const name of names)
      if (/^events-.*\.ndjson(\.open)?$/.test(name)) files.push(path.join(dir, sub, name));
  }
  files.sort((a, b) => (path.basename(a) < path.basename(b) ? -1 : 1));
  for (const file of files) {
    // An open file has zeros written ahead of its events (spool.ts, PREALLOCATE_BYTES).
    const text = (await readFile(file, 'utf8')).replace(/\0+$/, '');
    for (const line of text.split('\n')) if (line) out.push(JSON.parse(line) as Record<string, unknown>);
  }
  return out;
}

const make = orderDocuments(29);

/** Order `n` (distinct numbers, both shapes) in a webhook envelope whose api_version matches its shape. */
export function orderEvent(n: number, eventId = `evt-${n}`): Record<string, unknown> {
  const order = make(n);
  // orderDocuments makes every fifth pair of numbers in the 2023-02-10 shape.
  const apiVersion = n % 5 < 2 ? '2023-02-10' : '2024-04-01';
  return webhookEnvelope(order, { eventId, eventType: 'order.updated', apiVersion });
}

export const eventIds = (lines: Record<string, unknown>[]) => lines.map((l) => l.event_id);
