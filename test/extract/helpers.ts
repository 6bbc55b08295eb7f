import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { PageCommit, Rejection, StreamState } from '../../src/contracts.js';
import { createLogger, type Logger } from '../../src/log.js';

/** Tiny loopback servers and collectors for extract tests (real HTTP, no mocks of project code). */

export interface TestServer {
  /** `http://127.0.0.1:PORT` */
  origin: string;
  /** Every request the server received: method + path and query, and its headers. */
  hits: { method: string; url: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

export type Handler = (req: IncomingMessage, res: ServerResponse, hit: number) => void;

export async function startServer(handler: Handler): Promise<TestServer> {
  const hits: TestServer['hits'] = [];
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    hits.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    handler(req, res, hits.length);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    origin: `http://127.0.0.1:${port}`,
    hits,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
) {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** Every line any logger wrote, to assert that no secret ever appears. */
export function captureLogger(): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  return {
    logger: createLogger({ format: 'json', level: 'debug', write: (line) => lines.push(line) }),
    lines,
  };
}

/** The warehouse side of a test: records by key, rejections, the last saved state, every commit. */
export class MemoryWarehouse {
  readonly rows = new Map<string, Record<string, unknown>>();
  readonly rejections: Rejection[] = [];
  readonly commits: PageCommit[] = [];
  state: StreamState | null = null;
  /** Throw after this many commits (simulates a kill between pages). */
  failAfter = Number.POSITIVE_INFINITY;

  commit = async (page: PageCommit): Promise<void> => {
    if (this.commits.length >= this.failAfter) throw new Error('simulated kill');
    this.commits.push(page);
    const loadedIn = page.state.pass?.startedAt ?? '';
    for (const record of page.records) {
      this.rows.set(String(record['id']), record);
      this.loadedIn.set(String(record['id']), loadedIn);
    }
    this.rejections.push(...page.rejections);
    this.state = page.state;
    // Soft deletes, as the warehouse applies them: whatever the completed scan did not load is gone, among
    // the records it covered (created on or after its createdFrom day, when it has one).
    const scan = page.completedFullScan;
    if (scan) {
      const covered = (key: string) =>
        scan.createdFrom === undefined ||
        String(this.rows.get(key)?.['date_created'] ?? '').slice(0, 10) >= scan.createdFrom;
      for (const [key, pass] of this.loadedIn) {
        if (pass < scan.passStartedAt && covered(key)) {
          this.rows.delete(key);
          this.loadedIn.delete(key);
        }
      }
    }
  };
  private readonly loadedIn = new Map<string, string>();

  keys(): number[] {
    return [...this.rows.keys()].map(Number).sort((a, b) => a - b);
  }
}
