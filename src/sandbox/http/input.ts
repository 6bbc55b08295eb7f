import type { IncomingMessage } from 'node:http';
import type { OperationSpec, QueryInput } from '../../../schemas/index.js';
import type { UploadedFile } from '../model/types.js';
import { HttpError, validationError } from './errors.js';

/** Reading and validating what a request carries: query, JSON body or multipart form, all via the shared schemas. */

const JSON_LIMIT = 1024 * 1024;
const MULTIPART_LIMIT = 20 * 1024 * 1024;

export interface RequestInput {
  query: Record<string, unknown>;
  /** The parsed JSON body (validated), or for multipart the form's text fields. */
  body: unknown;
  files: UploadedFile[];
}

/** Repeated parameters become arrays, as the list schemas expect (`status=a&status=b`). */
export function queryInput(search: URLSearchParams): QueryInput {
  const out: QueryInput = {};
  for (const key of new Set(search.keys())) {
    const values = search.getAll(key);
    out[key] = values.length === 1 ? values[0] : values;
  }
  return out;
}

export async function readInput(
  req: IncomingMessage,
  op: OperationSpec,
  search: URLSearchParams,
): Promise<RequestInput> {
  const input: RequestInput = { query: {}, body: undefined, files: [] };
  if (op.query) {
    const parsed = op.query.safeParse(queryInput(search));
    if (!parsed.success) throw validationError('query parameters', parsed.error, 'query');
    input.query = parsed.data as Record<string, unknown>;
  }
  if (op.body === 'none') return input;
  const limit = op.body === 'multipart' ? MULTIPART_LIMIT : JSON_LIMIT;
  const raw = await readBody(req, limit);
  const contentType = req.headers['content-type'] ?? '';
  if (op.body === 'multipart') {
    const form = await readMultipart(raw, contentType);
    input.body = form.fields;
    input.files = form.files;
    return input;
  }
  const json = parseJson(raw, contentType);
  const parsed = op.request!.safeParse(json);
  if (!parsed.success) throw validationError('request body', parsed.error);
  input.body = parsed.data;
  return input;
}

async function readBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > limit) {
      throw new HttpError(413, 'payload_too_large', `The request body exceeds ${limit} bytes.`);
    }
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

function parseJson(raw: Buffer, contentType: string): unknown {
  // An empty body stands for `{}` so body-less POSTs (mark-as-paid, close) work without ceremony.
  if (raw.length === 0) return {};
  if (!/^application\/([\w.+-]+\+)?json\b/i.test(contentType)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `Send the body as JSON with "Content-Type: application/json" (got "${contentType || 'none'}").`,
    );
  }
  try {
    return JSON.parse(raw.toString('utf8'));
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HttpError(400, 'invalid_json', `The request body is not valid JSON: ${reason}`);
  }
}

async function readMultipart(
  raw: Buffer,
  contentType: string,
): Promise<{ fields: Record<string, string>; files: UploadedFile[] }> {
  if (!/^multipart\/form-data\b/i.test(contentType)) {
    throw new HttpError(
      415,
      'unsupported_media_type',
      `This operation takes multipart/form-data (got "${contentType || 'none'}").`,
    );
  }
  let form: FormData;
  try {
    form = await new Response(raw, { headers: { 'content-type': contentType } }).formData();
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new HttpError(400, 'invalid_multipart', `The multipart body could not be parsed: ${reason}`);
  }
  const fields: Record<string, string> = {};
  const files: UploadedFile[] = [];
  for (const [name, value] of form.entries()) {
    if (typeof value === 'string') fields[name] = value;
    else {
      files.push({
        fieldName: name,
        fileName: value.name,
        contentType: value.type || 'application/octet-stream',
        size: value.size,
      });
    }
  }
  return { fields, files };
}
