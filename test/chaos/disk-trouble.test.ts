import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { diskFullAtStart, diskTrouble, hasPrlimit } from './support/disk.js';

/**
 * Chaos 6 (docs/reliability.md, "The scenarios"): the warehouse becomes unwritable in the middle of a sync.
 */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-disk-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('disk trouble: writes refused mid-run end it with an error; the state stays readable; the next run resumes', {
  timeout: 10 * 60_000,
  skip: hasPrlimit() ? false : 'needs util-linux prlimit to set RLIMIT_FSIZE',
}, async () => {
  const outcome = await diskTrouble({ scale: '1500', pageSize: 50, dir });
  console.log(
    `disk trouble: files limited to ${outcome.limitBytes} bytes; ${outcome.committedSubscriptions} subscriptions committed before writes failed with "${outcome.error}"`,
  );
});

test('disk trouble: a disk that refuses the very first writes gives an error naming the failed write', {
  timeout: 3 * 60_000,
  skip: hasPrlimit() ? false : 'needs util-linux prlimit to set RLIMIT_FSIZE',
}, async () => {
  // 20 kB: less than the schema's first transaction writes to the WAL.
  console.log(`disk full at start: ${await diskFullAtStart({ dir, limitBytes: 20_000 })}`);
});
