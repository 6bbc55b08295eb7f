import type { ServerResponse } from 'node:http';
import type { FaultKind } from './faults.js';

/**
 * Writing JSON answers, including the two faults that corrupt an answer rather than replace it:
 * `truncate` (a Content-Length promising more bytes than are sent) and `foreign-next` (a `next` link
 * pointing at another origin, which a careful client must refuse to follow with its token).
 */

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
  fault: FaultKind | null = null,
): void {
  if (res.headersSent || res.destroyed) return;
  const payload = fault === 'foreign-next' ? withForeignNext(body) : body;
  const bytes = Buffer.from(JSON.stringify(payload), 'utf8');
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=utf-8',
    'Content-Length': String(bytes.length),
    ...headers,
  });
  if (fault !== 'truncate') {
    res.end(bytes);
    return;
  }
  // Half the promised bytes, then the socket goes away: the client sees a body cut short.
  res.write(bytes.subarray(0, Math.floor(bytes.length / 2)), () => res.socket?.destroy());
}

function withForeignNext(body: unknown): unknown {
  if (!body || typeof body !== 'object' || typeof (body as { next?: unknown }).next !== 'string') return body;
  const next = new URL((body as { next: string }).next);
  next.hostname = next.hostname === '127.0.0.2' ? '127.0.0.3' : '127.0.0.2';
  return { ...body, next: next.toString() };
}
