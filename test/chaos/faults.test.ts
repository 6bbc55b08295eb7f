import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { faultsEverywhere, ISSUE_FAULT_MIX } from './support/faults.js';
import { chaosSeed, tokenLeaks } from './support/processes.js';

/**
 * Chaos 1 (docs/reliability.md, "The scenarios"): a medium store synced through every kind of fault, with
 * 50 ms latency.
 */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-faults-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

test('faults everywhere: a medium store syncs exactly through 5xx, 429, resets, truncation and stalls', {
  timeout: 12 * 60_000,
}, async () => {
  const seed = chaosSeed();
  const outcome = await faultsEverywhere({
    scale: 'medium',
    pageSize: 100,
    latencyMs: 50,
    faults: `${ISSUE_FAULT_MIX},seed:${seed}`,
    dir,
  });
  console.log(
    `faults everywhere (seed ${seed}): ${outcome.retries} retries over ${outcome.requests} API requests; sandbox answered ${JSON.stringify(outcome.byStatus)}`,
  );
  assert.ok(outcome.retries > 0, 'faults were injected, so the client must have retried');
  assert.equal(tokenLeaks(), 0, 'the token appeared in the output');
});
