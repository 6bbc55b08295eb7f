import type { IncomingMessage } from 'node:http';

/** The receiver's HTTP pieces: what a refusal answers, reading a bounded body, the spool line of an event. */

export const round = (n: number) => Math.round(n * 10) / 10;

export class Refusal {
  constructor(
    readonly status: number,
    readonly reason: string,
    readonly close = false,
  ) {}
}

/**
 * The body, or a Refusal: 413 once it passes `max` bytes (reading stops there, and the answer closes the
 * connection), 400 when the client goes away before its end.
 */
export function readBody(req: IncomingMessage, max: number): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const fail = (refusal: Refusal) => {
      if (settled) return;
      settled = true;
      req.off('data', onData);
      reject(refusal);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > max) {
        req.pause();
        fail(new Refusal(413, `the body is larger than ${max} bytes`, true));
      } else chunks.push(chunk);
    };
    req.on('data', onData);
    req.once('end', () => {
      if (settled) return;
      settled = true;
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, size));
    });
    req.once('error', () => fail(new Refusal(400, 'the request was cut off', true)));
    req.once('close', () => {
      if (!req.complete) fail(new Refusal(400, 'the request was cut off', true));
    });
  });
}

/**
 * The event as one spool line: the body as received, its line breaks (JSON whitespace only, as a string
 * cannot hold a raw one) turned into spaces so that a pretty-printed body stays one NDJSON line.
 */
export function asLine(body: Buffer): Buffer {
  const line = Buffer.allocUnsafe(body.length + 1);
  body.copy(line);
  for (let i = line.indexOf(0x0a); i >= 0 && i < body.length; i = line.indexOf(0x0a, i + 1)) line[i] = 0x20;
  for (let i = line.indexOf(0x0d); i >= 0 && i < body.length; i = line.indexOf(0x0d, i + 1)) line[i] = 0x20;
  line[body.length] = 0x0a;
  return line;
}
