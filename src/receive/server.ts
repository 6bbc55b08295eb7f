import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../log.js';
import { DedupWindow } from './dedup.js';
import { asLine, Refusal, readBody, round } from './http.js';
import { signatureBytes, verifySignature } from './signature.js';
import { Spool } from './spool.js';
import { eventIdOf } from './spool-files.js';

/**
 * `store-sync receive`: an HTTP server that takes each store's signed webhook events at its path and appends
 * them to the store's spool, answering 200 only once the event is synced to disk (docs/receiver.md). It never
 * opens the warehouse. Whatever a request holds, the answer is a status code, never a crash.
 */

export interface ReceiverEndpoint {
  store: string;
  path: string;
  spoolDir: string;
  signatureHeader: string;
  /** The signing secret, then the previous one while it is rotated. */
  secrets: string[];
}

export interface ReceiverOptions {
  host: string;
  port: number;
  endpoints: ReceiverEndpoint[];
  maxBodyBytes: number;
  dedupEvents: number;
  rotateBytes: number;
  rotateMs: number;
  requestTimeoutMs: number;
  logger: Logger;
  /** false: one write and disk sync per event (the benchmark's comparison). */
  groupCommit?: boolean;
  /** How often the counters are logged when something happened (default a minute). */
  statsEveryMs?: number;
}

interface Route {
  endpoint: ReceiverEndpoint;
  header: string;
  spool: Spool;
  window: DedupWindow;
  /** Events being spooled, by id: a duplicate that arrives meanwhile waits for the first's outcome. */
  inFlight: Map<string, Promise<boolean>>;
}

export interface ReceiverHealth {
  ok: boolean;
  stopping: boolean;
  /** Requests being handled. */
  requests: number;
  /** Events waiting for their disk sync, over every spool. */
  queueDepth: number;
  spools: {
    store: string;
    path: string;
    spoolDir: string;
    writable: boolean;
    queueDepth: number;
    /** Since start: disk flushes, events per flush (group commit at work) and the mean flush time. */
    flushes: number;
    eventsPerFlush: number;
    flushMs: number;
    error?: string;
  }[];
}

export class Receiver {
  private readonly routes = new Map<string, Route>();
  private readonly handling = new Set<Promise<void>>();
  private readonly counts = new Map<string, number>();
  private stopping: Promise<void> | null = null;
  private statsTimer: NodeJS.Timeout | null = null;

  private constructor(
    private readonly options: ReceiverOptions,
    private readonly server: Server,
  ) {}

  /** Opens every spool (recovering what a killed receiver left), then listens. */
  static async start(options: ReceiverOptions): Promise<Receiver> {
    const timeout = options.requestTimeoutMs;
    const server = createServer({
      requestTimeout: timeout,
      headersTimeout: Math.min(timeout, 10_000),
      keepAliveTimeout: 5_000,
      // Node checks the two timeouts above this often (30 s by default, longer than the platform waits).
      connectionsCheckingInterval: Math.max(100, Math.min(1_000, timeout / 2)),
    });
    const receiver = new Receiver(options, server);
    try {
      for (const endpoint of options.endpoints) {
        const spool = await Spool.open({
          dir: endpoint.spoolDir,
          rotateBytes: options.rotateBytes,
          rotateMs: options.rotateMs,
          logger: options.logger.child({ store: endpoint.store }),
          recentIds: options.dedupEvents,
          ...(options.groupCommit === undefined ? {} : { groupCommit: options.groupCommit }),
        });
        receiver.routes.set(endpoint.path, {
          endpoint,
          header: endpoint.signatureHeader.toLowerCase(),
          spool,
          window: new DedupWindow(options.dedupEvents, spool.recentIds),
          inFlight: new Map(),
        });
      }
      server.on('request', (req: IncomingMessage, res: ServerResponse) => receiver.dispatch(req, res));
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(options.port, options.host, () => {
          server.off('error', reject);
          resolve();
        });
      });
    } catch (error) {
      await Promise.allSettled([...receiver.routes.values()].map((r) => r.spool.close()));
      throw error;
    }
    receiver.startStats();
    return receiver;
  }

  get address(): AddressInfo {
    return this.server.address() as AddressInfo;
  }

  /** The URL of each store's endpoint. */
  urls(): { store: string; url: string }[] {
    const { address, port, family } = this.address;
    const host = family === 'IPv6' ? `[${address}]` : address;
    return [...this.routes.values()].map((r) => ({
      store: r.endpoint.store,
      url: `http://${host}:${port}${r.endpoint.path}`,
    }));
  }

  async health(): Promise<ReceiverHealth> {
    const spools = await Promise.all(
      [...this.routes.values()].map(async (r) => ({
        store: r.endpoint.store,
        path: r.endpoint.path,
        spoolDir: r.endpoint.spoolDir,
        writable: await r.spool.writable(),
        queueDepth: r.spool.depth,
        flushes: r.spool.stats.flushes,
        eventsPerFlush: round(r.spool.stats.events / Math.max(1, r.spool.stats.flushes)),
        flushMs: round(r.spool.stats.flushMs / Math.max(1, r.spool.stats.flushes)),
        ...(r.spool.lastError ? { error: r.spool.lastError.message } : {}),
      })),
    );
    return {
      ok: this.stopping === null && spools.every((s) => s.writable),
      stopping: this.stopping !== null,
      requests: this.handling.size,
      queueDepth: spools.reduce((n, s) => n + s.queueDepth, 0),
      spools,
    };
  }

  /**
   * Stops accepting (new connections, and new requests on open ones get 503), lets the requests in flight
   * finish (bounded by the request timeout), writes and syncs what is queued, and closes each spool's open
   * file so that a drain can take everything.
   */
  stop(): Promise<void> {
    this.stopping ??= (async () => {
      if (this.statsTimer) clearInterval(this.statsTimer);
      const closed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      this.server.closeIdleConnections();
      const deadline = Date.now() + this.options.requestTimeoutMs + 5_000;
      while (this.handling.size > 0 && Date.now() < deadline) {
        const wait = Math.max(0, deadline - Date.now());
        await Promise.race([
          Promise.allSettled([...this.handling]),
          new Promise((resolve) => setTimeout(resolve, wait).unref()),
        ]);
      }
      await Promise.all([...this.routes.values()].map((r) => r.spool.close()));
      this.logStats();
      this.server.closeAllConnections();
      await closed;
    })();
    return this.stopping;
  }

  private dispatch(req: IncomingMessage, res: ServerResponse): void {
    // A client gone before its answer: writing to it fails, and that is no error of the receiver's.
    res.on('error', () => undefined);
    req.on('error', () => undefined);
    const handled = this.handle(req, res)
      .catch((error: unknown) => {
        // A bug, not the input: logged, and answered 500 so the platform retries.
        this.options.logger.error('receive.internal_error', { message: (error as Error)?.message });
        if (!res.headersSent) this.reply(res, 500, { error: 'internal error' }, true);
        else res.destroy();
      })
      .finally(() => this.handling.delete(handled));
    this.handling.add(handled);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = performance.now();
    const pathname = (req.url ?? '/').split('?')[0]!;
    if (pathname === '/healthz') {
      if (req.method !== 'GET' && req.method !== 'HEAD')
        return this.refuse(req, res, new Refusal(405, 'only GET here'), 'GET, HEAD');
      const health = await this.health();
      this.reply(res, health.ok ? 200 : 503, health, this.stopping !== null, req.method === 'HEAD');
      return;
    }
    const route = this.routes.get(pathname);
    if (!route) return this.refuse(req, res, new Refusal(404, 'no endpoint at this path'));
    if (req.method !== 'POST') return this.refuse(req, res, new Refusal(405, 'only POST here'), 'POST');
    if (this.stopping) return this.refuse(req, res, new Refusal(503, 'the receiver is stopping'));
    const outcome = await this.receive(req, route).catch((error: unknown) => {
      if (error instanceof Refusal) return error;
      throw error;
    });
    if (outcome instanceof Refusal) return this.refuse(req, res, outcome, undefined, route.endpoint.store);
    this.count(outcome.duplicate ? 'duplicate' : 'accepted');
    this.options.logger.debug('receive.event', {
      store: route.endpoint.store,
      event_id: outcome.id ?? undefined,
      duplicate: outcome.duplicate,
      ms: Math.round(performance.now() - started),
    });
    this.reply(
      res,
      200,
      { ok: true, ...(outcome.duplicate ? { duplicate: true } : {}) },
      this.stopping !== null,
    );
  }

  /** Reads, verifies and spools one event; a Refusal says what to answer instead of 200. */
  private async receive(
    req: IncomingMessage,
    route: Route,
  ): Promise<{ id: string | null; duplicate: boolean }> {
    const max = this.options.maxBodyBytes;
    const declared = Number(req.headers['content-length']);
    if (declared > max) throw new Refusal(413, `the body is larger than ${max} bytes`, true);
    const body = await readBody(req, max);
    const given = signatureBytes(req.headers[route.header]);
    if (!given) throw new Refusal(401, `missing or malformed ${route.endpoint.signatureHeader} header`);
    let text: string | null = null;
    let parsed: unknown;
    let parseError: Error | null = null;
    const json = (): string | null => {
      if (text === null && parseError === null) {
        const candidate = body.toString('utf8');
        try {
          parsed = JSON.parse(candidate);
          text = candidate;
        } catch (error) {
          parseError = error as Error;
        }
      }
      return text;
    };
    // A body that does not parse can only be verified raw; unverified, it is a 401 (nothing is said about
    // what a stranger sent), verified, a 400.
    if (!verifySignature(route.endpoint.secrets, body, given, json))
      throw new Refusal(401, 'wrong signature');
    if (json() === null)
      throw new Refusal(400, `the body is not JSON: ${(parseError as Error | null)?.message}`);
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed))
      throw new Refusal(400, 'expected a JSON object (an event envelope)');
    const id = eventIdOf(parsed);
    const line = asLine(body);
    if (id === null) {
      await this.spool(route, line);
      return { id, duplicate: false };
    }
    let awaited: Promise<boolean> | undefined;
    for (;;) {
      if (route.window.has(id)) return { id, duplicate: true };
      const earlier = route.inFlight.get(id);
      if (!earlier || earlier === awaited) break;
      // The same event, still being spooled: its outcome decides (if it failed, this one tries).
      awaited = earlier;
      if (await earlier) return { id, duplicate: true };
    }
    let failure: unknown;
    const spooled = this.spool(route, line).then(
      () => {
        route.window.add(id);
        return true;
      },
      (error: unknown) => {
        failure = error;
        return false;
      },
    );
    route.inFlight.set(id, spooled);
    try {
      if (!(await spooled)) throw failure;
      return { id, duplicate: false };
    } finally {
      if (route.inFlight.get(id) === spooled) route.inFlight.delete(id);
    }
  }

  private async spool(route: Route, line: Buffer): Promise<void> {
    try {
      await route.spool.append(line);
    } catch (error) {
      throw new Refusal(503, `the spool cannot be written: ${(error as Error).message}`);
    }
  }

  private refuse(
    req: IncomingMessage,
    res: ServerResponse,
    refusal: Refusal,
    allow?: string,
    store?: string,
  ): void {
    this.count(String(refusal.status));
    this.options.logger.debug('receive.refused', {
      status: refusal.status,
      reason: refusal.reason,
      path: (req.url ?? '/').split('?')[0],
      ...(store ? { store } : {}),
    });
    // An unread body is not read for nothing: the connection closes after the answer.
    const close = refusal.close || !req.complete || this.stopping !== null;
    this.reply(res, refusal.status, { error: refusal.reason }, close, false, {
      ...(allow ? { allow } : {}),
      ...(refusal.status === 503 ? { 'retry-after': '30' } : {}),
    });
  }

  private reply(
    res: ServerResponse,
    status: number,
    body: unknown,
    close: boolean,
    headOnly = false,
    headers: Record<string, string> = {},
  ): void {
    const text = `${JSON.stringify(body)}\n`;
    res.writeHead(status, {
      'content-type': 'application/json',
      'content-length': Buffer.byteLength(text),
      ...(close ? { connection: 'close' } : {}),
      ...headers,
    });
    res.end(headOnly ? undefined : text);
  }

  private count(key: string): void {
    this.counts.set(key, (this.counts.get(key) ?? 0) + 1);
  }

  private startStats(): void {
    this.statsTimer = setInterval(() => this.logStats(), this.options.statsEveryMs ?? 60_000);
    this.statsTimer.unref();
  }

  /** Counts since the last line, so that a flood of refusals is one line a minute, not one per request. */
  private logStats(): void {
    if (this.counts.size === 0) return;
    const fields = Object.fromEntries(
      [...this.counts].map(([key, n]) => [/^\d+$/.test(key) ? `status_${key}` : key, n]),
    );
    this.counts.clear();
    this.options.logger.info('receive.stats', fields);
  }
}
