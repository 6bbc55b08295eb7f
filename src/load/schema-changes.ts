import type { DuckDBConnection } from '@duckdb/node-api';
import type { Logger } from '../log.js';
import { literal, timestampLiteral } from '../model/index.js';
import type { SchemaChange } from '../normalize/index.js';
import type { BatchMeta } from './batch-builder.js';

/**
 * `_schema_changes`: every field path a store sent that no column maps, per table (the values themselves are
 * in the rows' `_extra`). Each batch's changes are merged in the batch's own transaction, so the table is
 * as durable as the rows: the first sighting keeps its run and example, later ones move `last_seen_at` and
 * add to `count`. Batches are written in order whatever the number of ingest workers (ingest/parallel.ts),
 * so the table comes out the same. `status` and the run summaries name the new paths from here.
 */

/** The most of an example kept, in characters (the normalizer cuts it too; this bounds the table anyway). */
export const SCHEMA_EXAMPLE_CHARS = 200;

/** Changes merged per statement: five parameters each. */
const CHANGES_PER_STATEMENT = 500;

/** Cut to SCHEMA_EXAMPLE_CHARS code points, so a character outside the BMP is never split in two. */
function cut(example: string): string {
  if (example.length <= SCHEMA_EXAMPLE_CHARS) return example;
  return Array.from(example).slice(0, SCHEMA_EXAMPLE_CHARS).join('');
}

/**
 * Adds up a batch's changes by (table, path), the first one's example kept: a batch made of several sealed
 * parts may name a path twice, and MERGE needs one source row per target row.
 */
function byPath(changes: readonly SchemaChange[]): SchemaChange[] {
  const merged = new Map<string, SchemaChange>();
  for (const change of changes) {
    const key = `${change.table}\u0000${change.fieldPath}`;
    const seen = merged.get(key);
    if (seen) seen.count += change.count;
    else merged.set(key, { ...change });
  }
  return [...merged.values()];
}

/**
 * Merges a batch's schema changes into `_schema_changes`, inside the caller's transaction:
 * `first_seen_at` the least and `last_seen_at` the greatest of the stored time and the batch's `_synced_at`,
 * `count` summed, and `run_id` and `example` those of the first sighting. Values are bound as parameters:
 * a field name is whatever the document said (a quote, a NUL).
 */
export async function writeSchemaChanges(
  connection: DuckDBConnection,
  meta: BatchMeta,
  changes: readonly SchemaChange[],
): Promise<void> {
  const rows = byPath(changes);
  const at = timestampLiteral(meta.syncedAtMs);
  for (let start = 0; start < rows.length; start += CHANGES_PER_STATEMENT) {
    const part = rows.slice(start, start + CHANGES_PER_STATEMENT);
    const values: (string | number)[] = [];
    const tuples = part.map((change, i) => {
      values.push(change.table, change.fieldPath, cut(change.example), change.count);
      const p = i * 4;
      return `($${p + 1}, $${p + 2}, $${p + 3}, CAST($${p + 4} AS BIGINT))`;
    });
    await connection.run(
      `MERGE INTO _schema_changes AS t
       USING (SELECT * FROM (VALUES ${tuples.join(', ')}) AS v("table", field_path, example, count)) AS s
       ON t._store = ${literal(meta.store)} AND t."table" = s."table" AND t.field_path = s.field_path
       WHEN MATCHED THEN UPDATE SET
         first_seen_at = least(t.first_seen_at, ${at}),
         last_seen_at = greatest(t.last_seen_at, ${at}),
         count = t.count + s.count
       WHEN NOT MATCHED THEN INSERT (_store, "table", field_path, first_seen_at, last_seen_at, run_id, example, count)
         VALUES (${literal(meta.store)}, s."table", s.field_path, ${at}, ${at}, ${literal(meta.runId)}, s.example, s.count)`,
      values,
    );
  }
}

/** A table's new field paths, as the run summaries and `status` name them. */
export interface NewFields {
  store: string;
  table: string;
  /** Field paths relative to the table's item (`zz_a`, `billing_address.zz_b`), in alphabetical order. */
  fields: string[];
  /** When the first of them was first seen (ISO 8601, UTC). */
  firstSeenAt: string;
}

/** Most field paths a line names; the rest are counted. */
const FIELDS_NAMED = 10;

/** `orders: 2 new fields: \`zz_a\`, \`zz_b\` → see _schema_changes` */
export function newFieldsText({ table, fields }: Pick<NewFields, 'table' | 'fields'>): string {
  const named = fields.slice(0, FIELDS_NAMED).map((f) => `\`${f}\``);
  if (fields.length > FIELDS_NAMED) named.push(`and ${fields.length - FIELDS_NAMED} more`);
  return `${table}: ${fields.length} new field${fields.length === 1 ? '' : 's'}: ${named.join(', ')} → see _schema_changes`;
}

/** One `WARN schema.new_fields` line per table, saying what the summary says. */
export function logNewFields(logger: Logger, newFields: readonly NewFields[]): void {
  for (const entry of newFields)
    logger.warn('schema.new_fields', {
      message: newFieldsText(entry),
      store: entry.store,
      table: entry.table,
      fields: entry.fields,
    });
}

/** `from` added into `into`, one entry per store and table (a drain's files, each ingested on its own). */
export function addNewFields(into: NewFields[], from: readonly NewFields[]): void {
  for (const entry of from) {
    const same = into.find((e) => e.store === entry.store && e.table === entry.table);
    if (!same) {
      into.push({ ...entry, fields: [...entry.fields] });
      continue;
    }
    for (const field of entry.fields) if (!same.fields.includes(field)) same.fields.push(field);
    same.fields.sort();
    if (entry.firstSeenAt < same.firstSeenAt) same.firstSeenAt = entry.firstSeenAt;
  }
  into.sort((a, b) => (a.store === b.store ? cmp(a.table, b.table) : cmp(a.store, b.store)));
}

const cmp = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
