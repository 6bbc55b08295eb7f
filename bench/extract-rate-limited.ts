import { ApiClient } from '../src/extract/index.js';
import { SANDBOX_TOKEN, seconds, spawnSandbox, syncAll } from './extract-support.js';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';

/**
 * A full sync of every stream of a medium store, against the sandbox limited to 4 requests a second with
 * 50 ms of latency. The floor is pages ÷ 4 rps: the pipeline should stay within 10 % of it and never be
 * answered 429, which is what even pacing under one shared limiter buys.
 */
const RPS = 4;

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'small' : 'medium';
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', String(RPS), '--latency-ms', '50']);
  const client = new ApiClient({ baseUrl: sandbox.baseUrl, token: SANDBOX_TOKEN, rateLimit: RPS });
  try {
    await sandbox.resetStats();
    log(`extract-rate-limited: full sync of a ${scale} store at ${RPS} rps, 50 ms latency`);
    const started = performance.now();
    const outcome = await syncAll(client, 'full_refresh', new Date());
    const wall = seconds(performance.now() - started);
    const stats = await sandbox.stats();
    const pages = stats.requests;
    const tooMany = stats.byStatus['429'] ?? 0;
    const result = ratioResult(
      {
        name: 'extract-rate-limited',
        figure: `wall time / (pages ÷ ${RPS} rps), ${scale} store, 50 ms latency`,
        measured: wall,
        bound: pages / RPS,
        target: '≤ 1.10 with zero 429s',
        extra: { pages, records: outcome.records, '429s': tooMany, retries: client.stats.retries },
      },
      'max',
      1.1,
    );
    return [{ ...result, pass: result.pass && tooMany === 0 }];
  } finally {
    await client.close();
    await sandbox.close();
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
