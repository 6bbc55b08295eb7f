/**
 * The bound of bench/extract-unlimited.ts, run as a process of its own: a bare undici loop that downloads
 * the pages `store-sync sync` reads and does nothing else with them but JSON.parse. It follows the same
 * chains (each slice's first page, then its `next` links) with the same concurrency the sync uses: every
 * stream at once, `concurrency` chains of a stream at once, at most `connections` requests in flight.
 *
 *   node dist/bench/peers/bare-download.js SPEC.json
 *
 * SPEC.json is a BareSpec; it prints one JSON line: {pages, records, ms}.
 */
import { readFileSync } from 'node:fs';
import pLimit from 'p-limit';
import { Pool } from 'undici';

export interface BareSpec {
  token: string;
  /** The request header the API version goes in (schemas/headers.ts, API_VERSION_HEADER). */
  versionHeader: string;
  /** Requests in flight at once: the sync's pool (ApiClient maxInFlight). */
  connections: number;
  streams: {
    name: string;
    /** The API version header the stream's operation sends. */
    version: string;
    /** Chains of the stream read at once (its `concurrency` option). */
    concurrency: number;
    /** The first page of each of the stream's slices, as the sync plans them. */
    startUrls: string[];
  }[];
}

async function download(spec: BareSpec): Promise<{ pages: number; records: number; ms: number }> {
  const origin = new URL(spec.streams[0]!.startUrls[0]!).origin;
  const pool = new Pool(origin, { connections: spec.connections });
  const inFlight = pLimit(spec.connections);
  let pages = 0;
  let records = 0;
  const started = performance.now();
  await Promise.all(
    spec.streams.map((stream) => {
      const headers = { authorization: `Bearer ${spec.token}`, [spec.versionHeader]: stream.version };
      const chains = pLimit(stream.concurrency);
      return Promise.all(
        stream.startUrls.map((start) =>
          chains(async () => {
            let link: string | null = start;
            while (link) {
              const url: URL = new URL(link);
              const page = await inFlight(async () => {
                const response = await pool.request({
                  method: 'GET',
                  path: url.pathname + url.search,
                  headers,
                });
                if (response.statusCode !== 200)
                  throw new Error(`${url.pathname}: HTTP ${response.statusCode}`);
                return (await response.body.json()) as { results?: unknown[]; next: string | null };
              });
              pages++;
              records += page.results?.length ?? 0;
              link = page.next === null ? null : new URL(page.next, url).href;
            }
          }),
        ),
      );
    }),
  );
  const ms = performance.now() - started;
  await pool.close();
  return { pages, records, ms };
}

const file = process.argv[2];
if (!file) throw new Error('usage: bare-download.js SPEC.json (a BareSpec)');
console.log(JSON.stringify(await download(JSON.parse(readFileSync(file, 'utf8')) as BareSpec)));
