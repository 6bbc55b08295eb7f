import { createLogger } from '../src/log.js';
import { Receiver } from '../src/receive/server.js';

/**
 * The receiver of bench/receive.ts in its own process, as `store-sync receive` runs it, with the one setting
 * the command does not expose: one write and disk sync per event instead of group commit.
 *   receive-child <spoolDir> <secret> group|per-event
 * Prints its URL on stdout; SIGTERM stops it cleanly.
 */

const [spoolDir, secret, mode] = process.argv.slice(2);
if (!spoolDir || !secret || (mode !== 'group' && mode !== 'per-event'))
  throw new Error('usage: receive-child <spoolDir> <secret> group|per-event');
const receiver = await Receiver.start({
  host: '127.0.0.1',
  port: 0,
  endpoints: [
    {
      store: 'bench',
      path: '/webhooks/bench',
      spoolDir,
      signatureHeader: 'X-Platform-Signature',
      secrets: [secret],
    },
  ],
  maxBodyBytes: 5 * 1024 * 1024,
  dedupEvents: 100_000,
  rotateBytes: 16 * 1024 * 1024,
  rotateMs: 60_000,
  requestTimeoutMs: 30_000,
  logger: createLogger({ level: 'warn' }),
  groupCommit: mode === 'group',
});
process.stdout.write(`${receiver.urls()[0]!.url}\n`);
process.once('SIGTERM', () => {
  void receiver.stop().then(() => process.exit(0));
});
