import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { crashLoop } from '../chaos/support/crash.js';
import { diskTrouble, hasPrlimit } from '../chaos/support/disk.js';
import { faultsEverywhere, ISSUE_FAULT_MIX } from '../chaos/support/faults.js';
import { runHostileCase } from '../chaos/support/hostile.js';
import { hostileCases } from '../chaos/support/hostile-cases.js';
import type { HostileServer } from '../chaos/support/hostile-server.js';
import { movingTarget } from '../chaos/support/moving.js';
import { chaosSeed, tokenLeaks } from '../chaos/support/processes.js';
import { twoWriters } from '../chaos/support/writers.js';

/**
 * The six chaos scenarios (docs/reliability.md, "The scenarios") at a small scale, for `npm test` (about a
 * minute and a half): the same code as `npm run test:chaos`, with small stores, a few kills and a few hostile
 * responses. Every scenario ends with the warehouse compared row by row with the sandbox's truth (or an
 * uninterrupted run).
 */

let dir: string;
const seed = chaosSeed();
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-short-'));
  console.log(`chaos (short) seed ${seed}; replay with CHAOS_SEED=${seed}`);
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('chaos, short', { concurrency: 1 }, () => {
  test('faults everywhere (small store)', { timeout: 180_000 }, async () => {
    const outcome = await faultsEverywhere({
      scale: '300',
      pageSize: 10,
      latencyMs: 10,
      faults: `${ISSUE_FAULT_MIX},seed:${seed}`,
      dir,
    });
    console.log(`faults (short): ${outcome.retries} retries over ${outcome.requests} requests`);
  });

  test('crash loop (4 kills)', { timeout: 180_000 }, async () => {
    const outcome = await crashLoop({
      scale: '400',
      pageSize: 10,
      kills: 4,
      from: '2024-01-01',
      to: '2025-12-31',
      dir,
      seed,
    });
    assert.equal(outcome.kills, 4);
  });

  test('moving target (2 syncs while changing)', { timeout: 180_000 }, async () => {
    const outcome = await movingTarget({ scale: '300', pageSize: 50, syncs: 2, dir, seed });
    assert.ok(outcome.changed > 0);
  });

  const foreign: { server: HostileServer | null } = { server: null };
  const some = new Set([
    'an HTML error page with status 200',
    'a next link to a foreign origin',
    'a next that repeats the page just read',
    'money such as "1e5" and "NaN"',
  ]);
  for (const hostile of hostileCases(() => foreign.server!.origin).filter((c) => some.has(c.name))) {
    test(`hostile server: ${hostile.name}`, { timeout: 120_000 }, () =>
      runHostileCase(hostile, dir, foreign),
    );
  }

  test('two writers', { timeout: 120_000 }, () =>
    twoWriters({ scale: '300', latencyMs: 150, dir }).then(() => undefined),
  );

  test('disk trouble', {
    timeout: 180_000,
    skip: hasPrlimit() ? false : 'needs util-linux prlimit',
  }, async () => {
    await diskTrouble({ scale: '300', pageSize: 20, dir });
  });

  test('no output of any run contained the token', () => {
    assert.equal(tokenLeaks(), 0);
  });
});
