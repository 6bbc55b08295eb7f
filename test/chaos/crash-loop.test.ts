import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { crashLoop } from './support/crash.js';
import { chaosSeed, tokenLeaks } from './support/processes.js';

/**
 * Chaos 2 (docs/reliability.md, "The scenarios"): one large backfill (about 500 pages), SIGKILLed at least 30
 * times.
 */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-crash-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('crash loop: 30 SIGKILLs over one backfill leave the same warehouse as an uninterrupted run', {
  timeout: 15 * 60_000,
}, async () => {
  const seed = chaosSeed();
  const outcome = await crashLoop({
    scale: '4000',
    pageSize: 10,
    kills: 30,
    from: '2024-01-01',
    to: '2025-12-31',
    dir,
    seed,
  });
  console.log(
    `crash loop (seed ${seed}): ${outcome.kills} kills (${outcome.earlyKills} during start-up); uninterrupted ${Math.round(outcome.uninterruptedMs / 1000)} s, all ${Math.round(outcome.totalMs / 1000)} s`,
  );
  assert.ok(outcome.kills >= 30);
  assert.equal(tokenLeaks(), 0, 'the token appeared in the output');
});
