import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { ApiClient } from '../../src/extract/index.js';
import { followCursor } from '../../src/extract/pagination.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import { TOKEN, testSandbox } from '../cli/helpers.js';

/**
 * A page prefetched while the caller commits the previous one must not reject unhandled when the run is
 * aborted in between: that would crash `store-sync sync` on Ctrl-C (the CLI's interrupt test meets it).
 */

describe('cursor chain prefetch', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await testSandbox({ scale: 40, pageSize: 5, latencyMs: 200 });
  });
  after(async () => {
    await sandbox?.close();
  });

  it('aborting while the consumer commits a page leaves no unhandled rejection', async () => {
    const unhandled: unknown[] = [];
    const onUnhandled = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', onUnhandled);
    const client = new ApiClient({ baseUrl: sandbox.baseUrl, token: TOKEN, rateLimit: 0 });
    const controller = new AbortController();
    try {
      const chain = followCursor({
        client,
        operation: 'listSubscriptions',
        startUrl: `${sandbox.baseUrl}subscriptions/`,
        signal: controller.signal,
      });
      const first = await chain.next();
      assert.equal(first.done, false);
      // The consumer is now committing page 1 while page 2 is prefetched; Ctrl-C arrives.
      controller.abort();
      await new Promise((resolve) => setTimeout(resolve, 300));
      await chain.return(undefined);
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', onUnhandled);
      await client.close();
    }
  });
});
