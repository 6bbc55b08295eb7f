import { randomUUID } from 'node:crypto';
import { type Dispatcher, request } from 'undici';
import { DEFAULT_SIGNATURE_HEADER } from '../config.js';
import { pythonJsonDumps, type SignatureForm, signHex } from './signature.js';

/**
 * The platform's side, for the demo, the tests and the benchmark: webhook envelopes, signed as the platform
 * signs them (over the payload re-serialised as Python's json.dumps writes it) or over the raw body.
 */

export interface EnvelopeOptions {
  eventId?: string;
  eventType?: string;
  object?: string;
  /** Omitted from the envelope when null. */
  apiVersion?: string | null;
}

/** `{object, data, event_id, event_type, webhook, api_version}` around a document. */
export function webhookEnvelope(data: unknown, options: EnvelopeOptions = {}): Record<string, unknown> {
  const object = options.object ?? 'order';
  return {
    object,
    data,
    event_id: options.eventId ?? randomUUID(),
    event_type: options.eventType ?? `${object}.updated`,
    webhook: { id: 1, url: 'https://example.invalid/webhooks' },
    ...(options.apiVersion === null ? {} : { api_version: options.apiVersion ?? '2024-04-01' }),
  };
}

/** The signature header's value for `body` in either form. */
export function signBody(secret: string, body: string, form: SignatureForm = 'python'): string {
  if (form === 'raw') return signHex(secret, body);
  const dumped = pythonJsonDumps(body);
  if (dumped === null) throw new Error('the body cannot be signed in the re-serialised form');
  return signHex(secret, dumped);
}

export interface DeliverOptions {
  form?: SignatureForm;
  header?: string;
  /** A signature to send instead of the right one (tests of refusals); null sends none. */
  signature?: string | null;
  dispatcher?: Dispatcher;
  signal?: AbortSignal;
}

/** POSTs one event and returns the status it got (its body is read and dropped). */
export async function deliver(
  url: string,
  secret: string,
  payload: unknown,
  options: DeliverOptions = {},
): Promise<number> {
  const body = typeof payload === 'string' ? payload : JSON.stringify(payload);
  const signature =
    options.signature === undefined ? signBody(secret, body, options.form) : options.signature;
  const response = await request(url, {
    method: 'POST',
    body,
    headers: {
      'content-type': 'application/json',
      ...(signature === null ? {} : { [options.header ?? DEFAULT_SIGNATURE_HEADER]: signature }),
    },
    ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
  });
  await response.body.dump();
  return response.statusCode;
}

/**
 * Delivers every payload with `concurrency` requests at a time, retrying one that failed (not 200) as the
 * platform does, up to `attempts` times; returns each payload's last status (0: no answer).
 */
export async function deliverAll(
  url: string,
  secret: string,
  payloads: unknown[],
  options: DeliverOptions & { concurrency?: number; attempts?: number } = {},
): Promise<number[]> {
  const statuses = new Array<number>(payloads.length).fill(0);
  let next = 0;
  const worker = async () => {
    while (next < payloads.length) {
      const i = next++;
      for (let attempt = 0; attempt < (options.attempts ?? 3) && statuses[i] !== 200; attempt++) {
        statuses[i] = await deliver(url, secret, payloads[i], options).catch(() => 0);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, options.concurrency ?? 8) }, worker));
  return statuses;
}
