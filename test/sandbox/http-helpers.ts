import assert from 'node:assert/strict';
import { request } from 'undici';
import type { z } from 'zod';
import { OPERATIONS, type OperationSpec, operationPath } from '../../schemas/index.js';
import type { Sandbox } from '../../src/sandbox/index.js';

/** A thin undici client for the sandbox contract tests: real HTTP, nothing of the sandbox mocked. */

export interface CallOptions {
  token?: string | null;
  /** The version header; defaults to the operation's own, `null` omits it. */
  version?: string | null;
  json?: unknown;
  body?: string | Buffer;
  headers?: Record<string, string>;
  query?: Record<string, string | string[]>;
}

export interface CallResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by schema or field by field.
  body: any;
}

export async function call(
  sandbox: Sandbox,
  method: string,
  pathOrUrl: string,
  options: CallOptions = {},
): Promise<CallResult> {
  const url = new URL(
    pathOrUrl.startsWith('http') ? pathOrUrl : sandbox.baseUrl + pathOrUrl.replace(/^\//, ''),
  );
  for (const [key, value] of Object.entries(options.query ?? {})) {
    for (const v of Array.isArray(value) ? value : [value]) url.searchParams.append(key, v);
  }
  const headers: Record<string, string> = { ...options.headers };
  const token = options.token === undefined ? 'sandbox-token' : options.token;
  if (token !== null) headers.authorization = `Bearer ${token}`;
  if (options.version !== null && options.version !== undefined)
    headers['x-platform-api-version'] = options.version;
  let body = options.body;
  if (options.json !== undefined) {
    body = JSON.stringify(options.json);
    headers['content-type'] ??= 'application/json';
  }
  const response = await request(url, { method: method as 'GET', headers, body });
  const text = await response.body.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: tests that care look at `text`.
  }
  return { status: response.statusCode, headers: response.headers, text, body: parsed };
}

/** Calls an operation of the table with its own method, path and version unless told otherwise. */
export function callOp(
  sandbox: Sandbox,
  op: OperationSpec,
  params: Record<string, string | number> = {},
  options: CallOptions = {},
): Promise<CallResult> {
  return call(sandbox, op.method, operationPath(op, params).slice(1), { version: op.version, ...options });
}

/** Placeholder path values: auth and version checks happen before any lookup, so they need not exist. */
export const DUMMY_PARAMS = { number: 'NO-SUCH', id: 999999, fulfillmentId: 999999, eventId: 'none' };

export const ALL_OPERATIONS = Object.values(OPERATIONS) as OperationSpec[];

/** Asserts the error envelope of docs/sandbox.md and returns it. */
export function assertError(result: CallResult, status: number, code?: string) {
  assert.equal(
    result.status,
    status,
    `expected ${status}, got ${result.status}: ${result.text.slice(0, 300)}`,
  );
  assert.equal(typeof result.body?.error?.code, 'string', `error body: ${result.text}`);
  assert.equal(typeof result.body.error.message, 'string');
  assert.ok(result.body.error.message.length > 0);
  if (code) assert.equal(result.body.error.code, code);
  return result.body.error as {
    code: string;
    message: string;
    fields?: { field: string; message: string }[];
  };
}

/** Asserts a success status and validates the body against a response schema. */
export function assertShape<T extends z.ZodType>(result: CallResult, status: number, schema: T): z.infer<T> {
  assert.equal(
    result.status,
    status,
    `expected ${status}, got ${result.status}: ${result.text.slice(0, 500)}`,
  );
  const parsed = schema.safeParse(result.body);
  assert.ok(parsed.success, `response does not match its schema: ${parsed.error?.message.slice(0, 800)}`);
  return parsed.data as z.infer<T>;
}

export function fieldNames(error: { fields?: { field: string }[] }): string[] {
  return (error.fields ?? []).map((f) => f.field);
}
