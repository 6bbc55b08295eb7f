import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { emptyStreamState, type StreamState } from '../../src/contracts.js';
import { type ApiClient, runStream, STREAMS, type StreamProgress } from '../../src/extract/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions } from '../../src/streams.js';
import { captureLogger, MemoryWarehouse } from './helpers.js';
import { sandboxClient } from './sandbox-helpers.js';

/**
 * A full scan's progress is told in pages against the previous complete scan's (issue 30, point 1): the
 * pass counts its pages in the saved state, across the runs that resume it, and its completion keeps the
 * count as the next scan's estimate. A pass saved before pages were counted leaves no estimate it cannot vouch
 * for.
 */

const { logger } = captureLogger();
const sandboxes: Sandbox[] = [];
const clients: ApiClient[] = [];

after(async () => {
  await Promise.all(clients.map((c) => c.close()));
  await Promise.all(sandboxes.map((s) => s.close()));
});

async function subscriptions(): Promise<{
  run: (state: StreamState, warehouse: MemoryWarehouse) => Promise<StreamProgress[]>;
}> {
  const sandbox = await startSandbox({ seed: 7, scale: 40, pageSize: 5, rateLimit: 0 });
  sandboxes.push(sandbox);
  const client = sandboxClient(sandbox, logger);
  clients.push(client);
  return {
    run: async (state, warehouse) => {
      const seen: StreamProgress[] = [];
      await runStream({
        stream: STREAMS.subscriptions,
        client,
        state,
        mode: 'full_refresh',
        options: { ...defaultStreamOptions('subscriptions'), startDate: null },
        now: new Date('2026-01-01T08:00:00Z'),
        commit: warehouse.commit,
        logger,
        onProgress: (progress) => seen.push(progress),
      });
      return seen;
    },
  };
}

describe('a full scan estimates its pages from the previous complete one', () => {
  it('counts the pages of a pass across a resume, and keeps them as the next scan estimate', async () => {
    const { run } = await subscriptions();
    // The length of a whole scan, read once without interruption.
    const whole = new MemoryWarehouse();
    await run(emptyStreamState(), whole);
    // Every commit is a page but the last, which closes the pass.
    const pages = whole.commits.length - 1;
    assert.ok(pages > 4, `several pages to scan (${pages})`);
    assert.equal(whole.state!.lastFullScanPages, pages);

    // A first scan killed after 3 pages and resumed: no estimate yet, but the pass's count goes on from 3.
    const killed = new MemoryWarehouse();
    killed.failAfter = 3;
    await assert.rejects(run(emptyStreamState(), killed), /simulated kill/);
    assert.equal(killed.state!.pass!.pages, 3);
    assert.equal(killed.state!.lastFullScanPages, undefined);
    killed.failAfter = Number.POSITIVE_INFINITY;
    const resumed = await run(killed.state!, killed);
    assert.deepEqual(
      resumed.map((p) => [p.passKind, p.passPages, p.pagesEstimate]),
      Array.from({ length: pages - 3 }, (_, i) => ['full', 4 + i, null]),
    );
    assert.equal(killed.state!.lastFullScanPages, pages, 'the whole scan, both runs');

    // The next scan: every page is told against the last one's count.
    const next = await run(killed.state!, killed);
    assert.deepEqual(
      next.map((p) => [p.passPages, p.pagesEstimate]),
      Array.from({ length: pages }, (_, i) => [i + 1, pages]),
    );
    assert.equal(killed.state!.lastFullScanPages, pages);
  });

  it('a pass saved before pages were counted leaves the last estimate as it was', async () => {
    const { run } = await subscriptions();
    const warehouse = new MemoryWarehouse();
    await run(emptyStreamState(), warehouse);
    const pages = warehouse.state!.lastFullScanPages!;
    warehouse.failAfter = warehouse.commits.length + 2;
    await assert.rejects(run(warehouse.state!, warehouse), /simulated kill/);
    // As an older version saved it: a pass without a count.
    const legacy = structuredClone(warehouse.state!);
    delete legacy.pass!.pages;
    legacy.lastFullScanPages = pages + 100;
    warehouse.failAfter = Number.POSITIVE_INFINITY;
    const resumed = await run(legacy, warehouse);
    assert.ok(resumed.length > 0);
    assert.ok(resumed.every((p) => p.passPages === null && p.pagesEstimate === pages + 100));
    assert.equal(warehouse.state!.lastFullScanPages, pages + 100, 'an unknown count is not kept');
  });
});
