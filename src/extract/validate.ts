import type { z } from 'zod';
import type { Rejection } from '../contracts.js';

/**
 * Record-level validation (docs/operations.md, "What a run promises": honest): a record that fails its schema
 * becomes a Rejection carrying the reason and the raw JSON. It is never thrown (one bad record must not end a
 * run) and never dropped.
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

export function validateRecords(
  schema: z.ZodType,
  items: readonly unknown[],
  stream: string,
  source: string,
): Validated {
  const out: Validated = { records: [], rejections: [] };
  for (const item of items) {
    const parsed = schema.safeParse(item);
    if (parsed.success) {
      out.records.push(item as Record<string, unknown>);
    } else {
      out.rejections.push({
        stream,
        key: recordKey(item),
        reason: issuesText(parsed.error),
        raw: item,
        source,
      });
    }
  }
  return out;
}
