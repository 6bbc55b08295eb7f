import type { z } from 'zod';
import { SandboxRuleError } from '../model/types.js';

/**
 * The sandbox's one error body (the spec leaves errors open, part 7), used for every 4xx and 5xx:
 *
 *   {"error": {"code": "validation_error", "message": "...", "fields": [{"field": "lines.0.quantity", "message": "..."}]}}
 *
 * `fields` appears only when specific inputs (body fields, query parameters, headers) are at fault.
 */

export interface FieldProblem {
  field: string;
  message: string;
}

export interface ErrorBody {
  error: { code: string; message: string; fields?: FieldProblem[] };
}

/** An HTTP answer that ends request handling early; the server turns it into the error body above. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly fields?: FieldProblem[],
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }

  toBody(): ErrorBody {
    const error: ErrorBody['error'] = { code: this.code, message: this.message };
    if (this.fields?.length) error.fields = this.fields;
    return { error };
  }
}

/**
 * Turns zod issues into field problems. Body fields are dotted paths (`lines.0.quantity`); a query
 * parameter is named as the client wrote it (`status`, not `status.0` for the first value of a list).
 */
export function fieldProblems(error: z.ZodError, source: 'body' | 'query' = 'body'): FieldProblem[] {
  return error.issues.flatMap((issue) => {
    const path = issue.path.map(String);
    const name = (parts: string[]) => (source === 'query' ? parts.slice(0, 1) : parts).join('.') || source;
    // An unknown key is a problem with that key, so name it rather than its parent object.
    if (issue.code === 'unrecognized_keys') {
      return issue.keys.map((key) => ({ field: name([...path, key]), message: 'unknown field' }));
    }
    return [{ field: name(path), message: issue.message }];
  });
}

export function validationError(
  what: string,
  error: z.ZodError,
  source: 'body' | 'query' = 'body',
): HttpError {
  const fields = fieldProblems(error, source);
  const names = [...new Set(fields.map((f) => f.field))].join(', ');
  return new HttpError(400, 'validation_error', `Invalid ${what}: check ${names}.`, fields);
}

/** Maps anything a handler throws to an HttpError: model rule errors keep their status and code. */
export function toHttpError(error: unknown): HttpError {
  if (error instanceof HttpError) return error;
  if (error instanceof SandboxRuleError) {
    const fields = error.field ? [{ field: error.field, message: error.message }] : undefined;
    return new HttpError(error.status, error.code, error.message, fields);
  }
  const message = error instanceof Error ? error.message : String(error);
  return new HttpError(500, 'internal_error', `The sandbox failed unexpectedly: ${message}`);
}
