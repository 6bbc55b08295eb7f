import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import type { StoreModel } from '../model/types.js';
import { ADMIN_PREFIX, handleAdmin } from './admin.js';
import { authenticate, authorize, type TokenSpec } from './auth.js';
import { HttpError, toHttpError } from './errors.js';
import type { FaultInjector, FaultKind } from './faults.js';
import { HANDLERS } from './handlers.js';
import { readInput } from './input.js';
import { encodeCursor } from './pagination.js';
import type { RateLimiter } from './rate-limit.js';
import { sendJson } from './respond.js';
import { matchRoute, type RouteMatch } from './router.js';
import type { StatsRecorder } from './stats.js';
import { selectOperation } from './versions.js';

/**
 * The sandbox's HTTP pipeline for one API request, in the order a real gateway would apply it:
 * route (404/405) → injected fault → latency → auth (401) → rate limit (429) → scope (403)
 * → version (400) → input validation (400/413/415) → the model's rules (4xx) → answer.
 */

/** All API paths of spec part 4 live under this root: the base URL is `http://host:port/api/`. */
export const API_ROOT = '/api';

export interface ServerParts {
  model: StoreModel;
  tokens: readonly TokenSpec[];
  pageSize: number;
  latencyMs: number;
  limiter: RateLimiter;
  faults: FaultInjector;
  stats: StatsRecorder;
  /** The request header the version is read from (X-Platform-API-Version, or another name a deployment uses). */
  versionHeader: string;
}

export interface SandboxServer {
  server: Server;
  /** Closes idle connections, ends the waits (latency, stalls) and every open connection, so `close` waits on nothing. */
  dropConnections(): void;
}

const INJECTED_HEADERS: Record<string, Record<string, string>> = {
  '429': { 'Retry-After': '1' },
  '503': { 'Retry-After': '1' },
};

export function createSandboxServer(parts: ServerParts): SandboxServer {
  const tokens = new Map(parts.tokens.map((t) => [t.token, t]));
  // Node gives every request header name in lower case.
  const versionKey = parts.versionHeader.toLowerCase();
  /** The waits in progress (latency, stalls), ended at once when the server stops. */
  const waits = new Set<AbortController>();

  async function handleApi(req: IncomingMessage, res: ServerResponse, url: URL): Promise<void> {
    const method = req.method ?? 'GET';
    let route: RouteMatch | null = null;
    let routeError: unknown = null;
    try {
      route = matchRoute(method, url.pathname.slice(API_ROOT.length));
    } catch (error) {
      routeError = error;
    }
    parts.stats.begin(route?.key ?? `${method} (no route)`);
    let counted = false;
    const count = (outcome: number | 'reset' | 'aborted') => {
      if (!counted) parts.stats.finish(outcome);
      counted = true;
    };
    res.on('close', () => count(res.headersSent ? res.statusCode : 'aborted'));

    const fault = parts.faults.roll();
    if (parts.latencyMs > 0 && !(await wait(res, parts.latencyMs))) return;
    if (fault === 'reset') {
      count('reset');
      req.socket.resetAndDestroy();
      return;
    }
    if (fault === 'stall' && !(await wait(res, parts.faults.stallMs))) return;
    if (fault && /^\d+$/.test(fault)) {
      const status = Number(fault);
      const error = new HttpError(
        status,
        status === 429 ? 'rate_limited' : 'server_error',
        injectedMessage(fault),
      );
      sendJson(res, status, error.toBody(), INJECTED_HEADERS[fault], null);
      return;
    }

    try {
      if (!route) throw routeError;
      const token = authenticate(req.headers.authorization, tokens);
      parts.limiter.take(token.token);
      authorize(token, route.operations[0]!.scopes);
      const op = selectOperation(route.operations, req.headers[versionKey], parts.versionHeader);
      const input = await readInput(req, op, url.searchParams);
      const origin = `http://${req.headers.host ?? hostOf(req)}`;
      const result = HANDLERS[op.id as keyof typeof HANDLERS]({
        ...input,
        model: parts.model,
        params: route.params,
        page: {
          pageSize: parts.pageSize,
          linkFor: (cursor) => {
            const link = new URL(url.pathname + url.search, origin);
            link.searchParams.set('cursor', encodeCursor(cursor));
            return link.toString();
          },
        },
      });
      sendJson(res, result.status, result.body, {}, fault);
    } catch (error) {
      const http = toHttpError(error);
      sendJson(res, http.status, http.toBody(), http.headers, fault === 'truncate' ? fault : null);
    }
  }

  /**
   * Holds the answer for `ms` (the added latency, a stall); false when the client gave up (or the server closed)
   * first. The wait ends with its connection: a timer left running after it would keep a stopping sandbox alive
   * until it fired (with `--latency-ms 600000`, ten minutes after a SIGTERM).
   */
  async function wait(res: ServerResponse, ms: number): Promise<boolean> {
    const controller = new AbortController();
    waits.add(controller);
    const onClose = () => controller.abort();
    res.once('close', onClose);
    try {
      await sleep(ms, undefined, { signal: controller.signal });
      return true;
    } catch {
      return false;
    } finally {
      waits.delete(controller);
      res.off('close', onClose);
    }
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://sandbox.invalid');
    try {
      if (url.pathname === API_ROOT || url.pathname.startsWith(`${API_ROOT}/`)) {
        await handleApi(req, res, url);
        return;
      }
      if (`${url.pathname}/`.startsWith(ADMIN_PREFIX)) {
        const result = await handleAdmin(req, url.pathname, () => readText(req), parts);
        sendJson(res, result.status, result.body);
        return;
      }
      throw new HttpError(404, 'not_found', `Nothing at ${url.pathname}: the API lives under ${API_ROOT}/.`);
    } catch (error) {
      const http = toHttpError(error);
      sendJson(res, http.status, http.toBody(), http.headers);
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  return {
    server,
    dropConnections() {
      // Idle keep-alive connections first (a client that was killed, or just pooling, leaves them open), then
      // the waits, then every connection still answering: nothing is left for `close` to wait on.
      server.closeIdleConnections();
      for (const controller of waits) controller.abort();
      server.closeAllConnections();
    },
  };
}

function injectedMessage(fault: FaultKind): string {
  return `Injected fault ${fault} (sandbox --faults); retrying later should succeed.`;
}

function hostOf(req: IncomingMessage): string {
  const address = req.socket.localAddress ?? '127.0.0.1';
  const host = address.includes(':') ? `[${address}]` : address;
  return `${host}:${req.socket.localPort}`;
}

async function readText(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > 1024 * 1024) throw new HttpError(413, 'payload_too_large', 'The request body exceeds 1 MiB.');
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}
