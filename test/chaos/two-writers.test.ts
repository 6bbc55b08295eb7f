import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { twoWriters } from './support/writers.js';

/** Chaos 5 (docs/reliability.md, "The scenarios"): two syncs started together on one warehouse. */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-writers-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('two writers: one sync runs, the other stops at once with the lock message, nothing is corrupted', {
  timeout: 6 * 60_000,
}, async () => {
  const outcome = await twoWriters({ scale: 'small', latencyMs: 100, dir });
  console.log(
    `two writers: the winner ran ${outcome.winnerMs} ms, the loser stopped after ${outcome.loserMs} ms`,
  );
});
