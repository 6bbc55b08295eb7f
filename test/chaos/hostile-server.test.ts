import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { runHostileCase } from './support/hostile.js';
import { hostileCases } from './support/hostile-cases.js';
import type { HostileServer } from './support/hostile-server.js';

/**
 * Chaos 4 (docs/reliability.md, "The scenarios"): every hostile response ends in a clear error or a
 * rejection.
 */

let dir: string;
before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-chaos-hostile-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

const foreign: { server: HostileServer | null } = { server: null };
for (const hostile of hostileCases(() => foreign.server!.origin)) {
  test(`hostile server: ${hostile.name}`, { timeout: 120_000 }, () => runHostileCase(hostile, dir, foreign));
}
