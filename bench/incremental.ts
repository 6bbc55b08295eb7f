import { ApiClient } from '../src/extract/index.js';
import { SANDBOX_TOKEN, spawnSandbox, syncAll } from './extract-support.js';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';

/**
 * What a nightly run costs. On a large store, a first run reads everything; then 1 % of the subscriptions
 * change (new, canceled, recovered, failed) and the next incremental run should cost requests in proportion
 * to those changes, not to the store: subscriptions requests of the second run ÷ those of the first.
 */

const SIZES = { medium: 10_000, large: 100_000 } as const;

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'medium' : 'large';
  const changes = SIZES[scale] / 100;
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', '0']);
  const client = new ApiClient({ baseUrl: sandbox.baseUrl, token: SANDBOX_TOKEN, rateLimit: 0 });
  try {
    log(`incremental: ${scale} store, ${changes} subscription changes between two runs`);
    const first = await syncAll(client, 'incremental', new Date());
    const quarter = Math.round(changes / 4);
    await sandbox.mutate({
      createSubscriptions: quarter,
      cancelSubscriptions: quarter,
      recoverSubscriptions: quarter,
      failSubscriptions: changes - 3 * quarter,
      seed: 11,
    });
    const second = await syncAll(client, 'incremental', new Date(), first.states);
    const requests = (outcome: typeof first, stream: string) =>
      outcome.summaries.find((s) => s.stream === stream)?.requests ?? 0;
    const full = requests(first, 'subscriptions');
    const nightly = requests(second, 'subscriptions');
    const all = (o: typeof first) => o.summaries.reduce((n, s) => n + s.requests, 0);
    return [
      ratioResult(
        {
          name: 'incremental',
          figure: `subscriptions requests: incremental run after 1 % changed / full run, ${scale} store`,
          measured: nightly,
          bound: full,
          target: '≤ 0.05',
          extra: {
            'changed subscriptions': changes,
            'all streams, full run': all(first),
            'all streams, incremental run': all(second),
          },
        },
        'max',
        0.05,
      ),
    ];
  } finally {
    await client.close();
    await sandbox.close();
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
