import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import { type ApiClient, runStream, STREAMS, type StreamProgress } from '../../src/extract/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { defaultStreamOptions } from '../../src/streams.js';
import { captureLogger } from './helpers.js';
import { sandboxClient, truth } from './sandbox-helpers.js';

/**
 * runStream's `commitsInFlight` (what lets a sync commit pages in groups, src/load/page-groups.ts): the
 * chain reads on while up to that many of its pages wait for their commit, hands them over in page order
 * with the state that follows each, counts a page only once its commit is done, and after a commit fails
 * hands over nothing more.
 */

const { logger } = captureLogger();
const now = new Date('2026-01-01T08:00:00Z');

/** Commits that finish only when the test says so, in the order they were handed over. */
function heldCommits() {
  const handed: { page: PageCommit; finish: (error?: Error) => void }[] = [];
  let waiter: { n: number; resolve: () => void } | null = null;
  return {
    handed,
    commit: (page: PageCommit) =>
      new Promise<void>((resolve, reject) => {
        handed.push({ page, finish: (error) => (error ? reject(error) : resolve()) });
        if (waiter && handed.length >= waiter.n) waiter.resolve();
      }),
    /** Resolves once `n` pages were handed over (fails after a minute: the chain did not read ahead). */
    handedOver: (n: number) =>
      handed.length >= n
        ? Promise.resolve()
        : Promise.race([
            new Promise<void>((resolve) => {
              waiter = { n, resolve };
            }),
            new Promise<void>((_, reject) =>
              setTimeout(
                () => reject(new Error(`only ${handed.length} of ${n} pages were handed over`)),
                60_000,
              ).unref(),
            ),
          ]),
  };
}

describe('commits in flight', () => {
  let sandbox: Sandbox;
  let client: ApiClient;

  before(async () => {
    sandbox = await startSandbox({ seed: 5, scale: 60, pageSize: 2, rateLimit: 0 });
    client = sandboxClient(sandbox, logger);
  });
  after(async () => {
    await client?.close();
    await sandbox?.close();
  });

  /** A full refresh of metadata_definitions committing through `held`, up to three commits in flight. */
  const fullRefresh = (held: ReturnType<typeof heldCommits>, onProgress: (p: StreamProgress) => void) =>
    runStream({
      stream: STREAMS.metadata_definitions,
      client,
      state: emptyStreamState(),
      mode: 'full_refresh',
      options: defaultStreamOptions('metadata_definitions'),
      now,
      commit: held.commit,
      commitsInFlight: 3,
      logger,
      onProgress,
    });

  it('reads ahead of unfinished commits, at most commitsInFlight pages, handed over in order', async () => {
    const held = heldCommits();
    const progress: StreamProgress[] = [];
    sandbox.resetStats();
    const running = fullRefresh(held, (p) => progress.push(p));
    await held.handedOver(3);
    // The chain has fetched the fourth page (prefetched as the third was handed over) and waits for a commit.
    while (sandbox.stats().requests < 4) await new Promise((resolve) => setTimeout(resolve, 5));
    await new Promise((resolve) => setImmediate(resolve));
    assert.equal(held.handed.length, 3, 'no fourth page while three commits are unfinished');
    assert.equal(progress.length, 0, 'nothing counted before a commit finished');
    // Finishing commits in order lets the chain go on until the final commit closes the pass.
    let finished = 0;
    while (true) {
      if (finished < held.handed.length) {
        held.handed[finished++]!.finish();
        continue;
      }
      const done = await Promise.race([
        running.then(() => true),
        new Promise((r) => setTimeout(r, 5, false)),
      ]);
      if (done) break;
    }
    const summary = await running;
    const pages = held.handed.map((h) => h.page);
    const records = pages.flatMap((p) => p.records);
    assert.deepEqual(
      records.map((r) => String(r['id'])),
      [...truth(sandbox, 'metadata_definitions').keys()],
      'every definition, once, in the order the store lists them',
    );
    assert.equal(
      summary.pages,
      pages.length - 1,
      'every page with records was counted, the final commit is not a page',
    );
    assert.equal(summary.records, records.length);
    // Each page came with the state after it: its slice's cursor is the next page's request.
    const cursors = pages.map((p) => Object.values(p.state.pass?.slices ?? {})[0]?.nextUrl ?? null);
    assert.equal(
      new Set(cursors.filter((c) => c !== null)).size,
      pages.length - 2,
      'a new cursor on every page but the last two',
    );
    assert.equal(pages.at(-1)!.completedFullScan !== undefined, true);
  });

  it('hands over nothing after a commit failed, and counts only the commits that finished', async () => {
    const held = heldCommits();
    let last: StreamProgress | undefined;
    const running = fullRefresh(held, (p) => {
      last = p;
    });
    running.catch(() => {});
    await held.handedOver(3);
    held.handed[0]!.finish();
    await held.handedOver(4);
    held.handed[1]!.finish(new Error('the warehouse is gone'));
    // The pages handed over after the failed one fail too, as a committer in order fails them.
    for (const h of held.handed.slice(2)) h.finish(new Error('after a failed page'));
    await assert.rejects(running, /the warehouse is gone/);
    assert.equal(held.handed.length, 4, 'nothing handed over after the failure');
    assert.equal(last?.pages, 1, 'only the page whose commit finished is counted');
  });
});
