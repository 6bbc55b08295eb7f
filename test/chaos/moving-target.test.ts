import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { movingTarget } from './support/moving.js';
import { chaosSeed, tokenLeaks } from './support/processes.js';

/**
 * Chaos 3 (docs/reliability.md, "The scenarios"): a medium store that keeps changing through four incremental
 * syncs.
 */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-moving-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('moving target: after the changes stop and one more sync, the warehouse is the truth', {
  timeout: 12 * 60_000,
}, async () => {
  const seed = chaosSeed();
  const outcome = await movingTarget({ scale: 'medium', pageSize: 100, syncs: 4, dir, seed });
  console.log(
    `moving target (seed ${seed}): ${outcome.rounds} rounds of changes, ${outcome.created} records created, ${outcome.changed} changed, product ${outcome.removed.join(', ')} removed`,
  );
  assert.ok(outcome.changed > 0 && outcome.created > 0);
  assert.equal(tokenLeaks(), 0, 'the token appeared in the output');
});
