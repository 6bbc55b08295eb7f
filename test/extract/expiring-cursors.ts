import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';

/**
 * A loopback proxy in front of a sandbox whose cursors expire, as a real API's do: every `next` link it hands
 * out carries the cursor of the current generation (`g1.<upstream cursor>`), and `expire()` starts a new
 * generation, after which the older cursors are answered 400 "Invalid cursor" (a fresh chain gets new ones).
 * `failCursorPages` answers 500 to every page after a chain's first, so a run stops with cursors saved.
 */

export interface ExpiringProxy {
  /** The sandbox's API root, served through the proxy. */
  baseUrl: string;
  origin: string;
  /** Every request: its path, the cursor it carried (as sent), and the status it got. */
  hits: { path: string; cursor: string | null; status: number }[];
  /** Cursors handed out so far (as the client saw them in `next` links). */
  issued: Set<string>;
  expire(): void;
  failCursorPages: boolean;
  close(): Promise<void>;
}

export async function startExpiringProxy(upstream: {
  origin: string;
  baseUrl: string;
}): Promise<ExpiringProxy> {
  let generation = 1;
  let origin = '';
  const proxy: ExpiringProxy = {
    baseUrl: '',
    origin: '',
    hits: [],
    issued: new Set(),
    expire: () => {
      generation++;
    },
    failCursorPages: false,
    close: async () => {},
  };
  const answer = (res: import('node:http').ServerResponse, status: number, body: unknown) => {
    const text = JSON.stringify(body);
    res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  };
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', origin);
    const cursor = url.searchParams.get('cursor');
    const hit = { path: url.pathname, cursor, status: 0 };
    proxy.hits.push(hit);
    if (cursor !== null) {
      const match = /^g(\d+)\.(.*)$/.exec(cursor);
      if (!match || Number(match[1]) !== generation) {
        hit.status = 400;
        return answer(res, 400, { detail: 'Invalid cursor.' });
      }
      if (proxy.failCursorPages) {
        hit.status = 500;
        return answer(res, 500, { detail: 'down for a moment' });
      }
      url.searchParams.set('cursor', match[2]!);
    }
    request(`${upstream.origin}${url.pathname}${url.search}`, {
      method: 'GET',
      headers: { ...req.headers, host: new URL(upstream.origin).host },
    })
      .then(async (reply) => {
        const text = await reply.body.text();
        hit.status = reply.statusCode;
        let body: unknown = text;
        try {
          body = JSON.parse(text);
        } catch {}
        if (body && typeof body === 'object' && 'next' in body) {
          const page = body as { next: string | null; previous?: string | null };
          const rewrite = (link: string | null | undefined) => {
            if (!link) return link ?? null;
            const at = new URL(link);
            const rewritten = new URL(`${at.pathname}${at.search}`, origin);
            const inner = at.searchParams.get('cursor');
            if (inner !== null) {
              const wrapped = `g${generation}.${inner}`;
              rewritten.searchParams.set('cursor', wrapped);
              proxy.issued.add(wrapped);
            }
            return rewritten.toString();
          };
          page.next = rewrite(page.next);
          if ('previous' in page) page.previous = rewrite(page.previous);
          return answer(res, reply.statusCode, page);
        }
        res.writeHead(reply.statusCode, {
          'content-type': String(reply.headers['content-type'] ?? 'text/plain'),
        });
        res.end(text);
      })
      .catch((error: Error) => res.destroy(error));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.origin = origin;
  proxy.baseUrl = `${origin}${new URL(upstream.baseUrl).pathname}`;
  proxy.close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}
