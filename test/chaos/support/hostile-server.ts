import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A small loopback server that is not the sandbox: it answers `GET /api/products/` with one hostile
 * response per scenario, and counts every request it gets (and whether it carried a token), so a test can
 * prove the client neither looped nor leaked.
 */

export interface Hit {
  url: string;
  authorized: boolean;
}

export interface HostileServer {
  origin: string;
  hits: Hit[];
  close(): Promise<void>;
}

export type Responder = (req: IncomingMessage, res: ServerResponse, url: URL, origin: string) => void;

export async function startHostileServer(respond: Responder): Promise<HostileServer> {
  const hits: Hit[] = [];
  const sockets = new Set<Socket>();
  let origin = '';
  const server = createServer((req, res) => {
    hits.push({ url: req.url ?? '', authorized: req.headers.authorization !== undefined });
    respond(req, res, new URL(req.url ?? '/', origin), origin);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    origin,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function send(res: ServerResponse, status: number, contentType: string | null, body: string): void {
  const headers: Record<string, string | number> = { 'content-length': Buffer.byteLength(body) };
  if (contentType !== null) headers['content-type'] = contentType;
  res.writeHead(status, headers);
  res.end(body);
}

export const sendJson = (res: ServerResponse, body: unknown) =>
  send(res, 200, 'application/json', JSON.stringify(body));

/** A product as small as the schema allows, with one priced variant. */
export function product(id: number, overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id,
    title: `Product ${id}`,
    date_created: '2024-01-01T00:00:00Z',
    date_updated: '2024-01-02T00:00:00Z',
    variants: [
      { id: id * 10, product_id: id, sku: `SKU-${id}`, prices: [{ currency: 'EUR', price: '9.99' }] },
    ],
    ...overrides,
  };
}

export const page = (results: unknown[], next: string | null = null) => ({ next, previous: null, results });
