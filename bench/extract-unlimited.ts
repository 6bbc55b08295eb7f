import { Pool } from 'undici';
import { ApiClient, STREAMS } from '../src/extract/index.js';
import { ALL_STREAMS, SANDBOX_TOKEN, seconds, spawnSandbox, syncAll } from './extract-support.js';
import { type Benchmark, ratioResult, runAloneIfMain } from './lib.js';

/**
 * The pipeline's own cost. A large store with no rate limit and 20 ms latency is extracted twice: by the
 * pipeline (pacing, retries, cursor checks, schema validation of every record) and by a bare undici loop
 * that only downloads and parses the same pages along the same chains, all chains at once as the pipeline
 * runs them. The bare loop runs right before and right after the pipeline; its mean is the bound.
 */

const CONNECTIONS = 8;

async function bareDownload(baseUrl: string): Promise<{ ms: number; pages: number }> {
  const base = new URL(baseUrl);
  const pool = new Pool(base.origin, { connections: CONNECTIONS });
  let pages = 0;
  const started = performance.now();
  await Promise.all(
    ALL_STREAMS.map(async (name) => {
      const spec = STREAMS[name].operation;
      const headers = { authorization: `Bearer ${SANDBOX_TOKEN}`, 'x-platform-api-version': spec.version };
      let link: string | null = new URL(spec.path.slice(1), base).href;
      while (link) {
        const url: URL = new URL(link);
        const response = await pool.request({ method: 'GET', path: url.pathname + url.search, headers });
        const page = (await response.body.json()) as { next: string | null };
        pages++;
        link = page.next;
      }
    }),
  );
  const ms = performance.now() - started;
  await pool.close();
  return { ms, pages };
}

const bench: Benchmark = async ({ quick, log }) => {
  const scale = quick ? 'medium' : 'large';
  const sandbox = await spawnSandbox(['--scale', scale, '--rate-limit', '0', '--latency-ms', '20']);
  const client = new ApiClient({
    baseUrl: sandbox.baseUrl,
    token: SANDBOX_TOKEN,
    rateLimit: 0,
    maxInFlight: CONNECTIONS,
  });
  try {
    log(`extract-unlimited: ${scale} store, no rate limit, 20 ms latency`);
    await bareDownload(sandbox.baseUrl); // warm-up: JIT, connections, the sandbox's lazy caches
    const before = await bareDownload(sandbox.baseUrl);
    const started = performance.now();
    const outcome = await syncAll(client, 'full_refresh', new Date());
    const pipelineMs = performance.now() - started;
    const after = await bareDownload(sandbox.baseUrl);
    const bareMs = (before.ms + after.ms) / 2;
    log(
      `  bare ${seconds(before.ms)} s / ${seconds(after.ms)} s (${before.pages} pages), pipeline ${seconds(pipelineMs)} s (${outcome.pages} pages)`,
    );
    return [
      ratioResult(
        {
          name: 'extract-unlimited',
          figure: `pipeline time / bare undici download of the same pages, ${scale} store, 20 ms latency`,
          measured: seconds(pipelineMs),
          bound: seconds(bareMs),
          target: '≤ 1.25',
          extra: {
            pages: outcome.pages,
            records: outcome.records,
            'records/s': Math.round(outcome.records / (pipelineMs / 1000)),
            'bare before s': seconds(before.ms),
            'bare after s': seconds(after.ms),
          },
        },
        'max',
        1.25,
      ),
    ];
  } finally {
    await client.close();
    await sandbox.close();
  }
};

export default bench;

await runAloneIfMain(import.meta.url, bench);
