import type { z } from 'zod';
import type { Rejection } from '../contracts.js';

/**
 * Record validation (docs/operations.md, "What a run promises": honest): a record that fails its schema
 * becomes a Rejection carrying the reason and the raw JSON, unless its only problems are values normalize
 * refuses one by one (`loadsWithFieldRejections`). It is never thrown (one bad record must not end a run)
 * and never dropped.
 */

const MAX_ISSUES = 5;

/** "lines.0.price: expected decimal text …; id: expected an integer id" */
export function issuesText(error: z.ZodError): string {
  const issues = error.issues.slice(0, MAX_ISSUES).map((issue) => {
    const path = issue.path.map(String).join('.');
    return path ? `${path}: ${issue.message}` : issue.message;
  });
  const more = error.issues.length - MAX_ISSUES;
  return issues.join('; ') + (more > 0 ? `; and ${more} more` : '');
}

/** The record's key when one can be read: its id (or order number), else null. */
export function recordKey(raw: unknown): string | null {
  if (raw === null || typeof raw !== 'object') return null;
  const { id, number } = raw as { id?: unknown; number?: unknown };
  for (const value of [id, number]) {
    if (typeof value === 'number' || (typeof value === 'string' && value !== '')) return String(value);
  }
  return null;
}

export interface Validated {
  /** Records exactly as received (unknown fields kept): the schemas only check, they do not reshape. */
  records: Record<string, unknown>[];
  rejections: Rejection[];
}

/** The fields that key a record: a bad value there leaves nothing to load it under. */
const KEY_FIELDS = new Set(['id', 'number']);

/** Types whose absence is a record of another shape, not a value that does not fit. */
const CONTAINERS = new Set(['object', 'array', 'record', 'tuple', 'map', 'set']);

type Issue = z.core.$ZodIssue;

/** `lines[0].price` */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const segment of path)
    out += typeof segment === 'number' ? `[${segment}]` : `${out === '' ? '' : '.'}${String(segment)}`;
  return out;
}

/** Whether an issue says the record's structure is not the expected one: an object or array where one was due. */
function structural(issue: Issue): boolean {
  if (issue.code === 'invalid_type') return CONTAINERS.has(issue.expected);
  if (issue.code === 'invalid_union')
    return issue.errors.some((branch) => branch.some((i) => i.path.length === 0 && structural(i)));
  return false;
}

function valueAt(record: unknown, path: readonly PropertyKey[]): unknown {
  let value = record;
  for (const segment of path) {
    if (value === null || typeof value !== 'object') return undefined;
    value = (value as Record<PropertyKey, unknown>)[segment];
  }
  return value;
}

/**
 * Whether a record that failed its schema still loads, its bad values refused one by one by normalize (which
 * sets the column NULL, keeps the value in `_extra` and writes a `field` rejection; docs/warehouse.md,
 * "Rejections, raw landing and rebuild"). Only a value that is there can be refused and kept: so not when an
 * issue is on the record itself, its key, its version (`versionFields`: a record that cannot be ordered
 * cannot be merged), its structure (normalize reads children from the arrays and objects the schema
 * promises), or a value that is missing or null (nothing would show the problem).
 */
function loadsWithFieldRejections(
  item: unknown,
  issues: readonly Issue[],
  versionFields: ReadonlySet<string>,
) {
  return issues.every((issue) => {
    const [top] = issue.path;
    if (top === undefined || typeof top !== 'string') return false;
    if (KEY_FIELDS.has(top) || versionFields.has(top) || structural(issue)) return false;
    const value = valueAt(item, issue.path);
    return value !== undefined && value !== null;
  });
}

/**
 * `versionFields`: the record fields its unit's version is read from (the stream's table's `unit.version`,
 * given by the pipeline, which knows the model): a bad value there rejects the record whole.
 */
export function validateRecords(
  schema: z.ZodType,
  items: readonly unknown[],
  stream: string,
  source: string,
  versionFields: readonly string[] = [],
): Validated {
  const out: Validated = { records: [], rejections: [] };
  const guarded = new Set(versionFields);
  for (const item of items) {
    const parsed = schema.safeParse(item);
    if (parsed.success || loadsWithFieldRejections(item, parsed.error.issues, guarded)) {
      out.records.push(item as Record<string, unknown>);
    } else {
      const first = parsed.error.issues[0];
      out.rejections.push({
        stream,
        key: recordKey(item),
        reason: issuesText(parsed.error),
        raw: item,
        source,
        ...(first && first.path.length > 0 ? { fieldPath: issuePath(first.path) } : {}),
      });
    }
  }
  return out;
}
