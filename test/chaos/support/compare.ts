import assert from 'node:assert/strict';
import path from 'node:path';
import { type DuckDBConnection, DuckDBInstance } from '@duckdb/node-api';
import { dataTables, type TableDef, tableDef } from '../../../src/model/index.js';
import type { StreamName } from '../../../src/streams.js';
import { API_STREAMS, buildReference, fetchTruth, ROOT_TABLE, type Truth } from './truth.js';

/**
 * Table-by-table, row-by-row comparison of two warehouses, in a scratch DuckDB that attaches both files
 * read-only. Every column counts except the ones a re-load is allowed to change (`_synced_at`, `_run_id`)
 * and `_deleted_at`, which is checked on its own: live rows (not soft-deleted) must be the same multiset,
 * with no key twice. Plus an id-level check straight from the sandbox's JSON, independent of normalize.
 */

const q = (name: string) => `"${name.replaceAll('"', '""')}"`;
const ALLOWED_TO_DIFFER = new Set(['_synced_at', '_run_id', '_deleted_at']);

async function withFiles<T>(
  files: Record<string, string>,
  fn: (c: DuckDBConnection) => Promise<T>,
): Promise<T> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  try {
    for (const [alias, file] of Object.entries(files))
      await connection.run(`ATTACH '${file.replaceAll("'", "''")}' AS ${alias} (READ_ONLY)`);
    return await fn(connection);
  } finally {
    connection.closeSync();
    instance.closeSync();
  }
}

const rowsOf = async (c: DuckDBConnection, sql: string) => (await c.runAndReadAll(sql)).getRows();

export interface TableComparison {
  table: string;
  actual: number;
  expected: number;
  /** Rows of the reference that the warehouse lacks (lost). */
  missing: number;
  /** Rows the warehouse has that the reference does not (extra or stale). */
  extra: number;
  /** Keys held by more than one live row (duplicated). */
  duplicates: number;
  examples: string[];
}

function live(def: TableDef, alias: string): string {
  return `${alias}.${q(def.name)}${def.fullScan ? ' WHERE _deleted_at IS NULL' : ''}`;
}

export async function compareWarehouses(
  actualFile: string,
  referenceFile: string,
): Promise<TableComparison[]> {
  return withFiles({ a: actualFile, e: referenceFile }, async (c) => {
    const out: TableComparison[] = [];
    for (const def of dataTables()) {
      const columns = def.columns.filter((col) => !ALLOWED_TO_DIFFER.has(col.name)).map((col) => q(col.name));
      const select = (alias: string) => `SELECT ${columns.join(', ')} FROM ${live(def, alias)}`;
      const keys = def.key.map(q).join(', ');
      const [row] = await rowsOf(
        c,
        `SELECT (SELECT count(*) FROM ${live(def, 'a')}), (SELECT count(*) FROM ${live(def, 'e')}),
           (SELECT count(*) FROM (${select('e')} EXCEPT ALL ${select('a')})),
           (SELECT count(*) FROM (${select('a')} EXCEPT ALL ${select('e')})),
           (SELECT count(*) FROM (SELECT ${keys} FROM ${live(def, 'a')} GROUP BY ALL HAVING count(*) > 1))`,
      );
      const [actual, expected, missing, extra, duplicates] = row!.map(Number) as number[];
      const examples: string[] = [];
      if (missing || extra) {
        const sample = async (label: string, from: string, minus: string) => {
          const rows = await rowsOf(c, `SELECT ${keys} FROM (${from} EXCEPT ALL ${minus}) LIMIT 3`);
          for (const r of rows)
            examples.push(`${label} ${def.key.map((k, i) => `${k}=${String(r[i])}`).join(' ')}`);
        };
        await sample('missing', select('e'), select('a'));
        await sample('extra', select('a'), select('e'));
      }
      out.push({
        table: def.name,
        actual: actual!,
        expected: expected!,
        missing: missing!,
        extra: extra!,
        duplicates: duplicates!,
        examples,
      });
    }
    return out;
  });
}

/** Fails with every table that differs, each with a few example keys. */
export function assertSameTables(comparisons: readonly TableComparison[], label: string): void {
  const bad = comparisons.filter((t) => t.missing || t.extra || t.duplicates || t.actual !== t.expected);
  const lines = bad.map(
    (t) =>
      `${t.table}: ${t.actual} rows, reference ${t.expected}; missing ${t.missing}, extra ${t.extra}, duplicated keys ${t.duplicates}` +
      (t.examples.length ? `\n    ${t.examples.join('\n    ')}` : ''),
  );
  assert.equal(bad.length, 0, `${label}: tables differ from the reference\n  ${lines.join('\n  ')}`);
  assert.ok(
    comparisons.some((t) => t.expected > 0),
    `${label}: the reference is empty, so the comparison proves nothing`,
  );
}

/** Live and soft-deleted keys of a stream's root table, and the keys it rejected. */
export async function streamKeys(
  file: string,
  stream: StreamName,
): Promise<{ live: Set<string>; deleted: Set<string>; rejected: Set<string> }> {
  return withFiles({ w: file }, async (c) => {
    const table = q(ROOT_TABLE[stream]);
    const ids = async (where: string) =>
      new Set(
        (await rowsOf(c, `SELECT CAST(id AS VARCHAR) FROM w.${table} WHERE ${where}`)).map((r) =>
          String(r[0]),
        ),
      );
    const softDeletes = tableDef(ROOT_TABLE[stream]).fullScan === true;
    const live = await ids(`_store = 'default'${softDeletes ? ' AND _deleted_at IS NULL' : ''}`);
    const deleted = softDeletes
      ? await ids("_store = 'default' AND _deleted_at IS NOT NULL")
      : new Set<string>();
    const rejected = new Set(
      (
        await rowsOf(
          c,
          `SELECT DISTINCT key FROM w._rejected_records WHERE stream = '${stream}' AND key IS NOT NULL`,
        )
      ).map((r) => String(r[0])),
    );
    return { live, deleted, rejected };
  });
}

/**
 * Nothing lost, nothing extra, by id and straight from the sandbox's JSON: every live row is a current
 * record, and every current record is live or was rejected with a reason.
 */
export async function assertIdsMatchTruth(file: string, truth: Truth, label: string): Promise<void> {
  for (const stream of API_STREAMS) {
    const { live, rejected } = await streamKeys(file, stream);
    const ids = new Set(truth[stream].map((r) => String(r.id)));
    const extra = [...live].filter((id) => !ids.has(id));
    const lost = [...ids].filter((id) => !live.has(id) && !rejected.has(id));
    assert.deepEqual(
      { extra: extra.slice(0, 5), lost: lost.slice(0, 5) },
      { extra: [], lost: [] },
      `${label}: ${stream}`,
    );
  }
}

/**
 * The end of every scenario: the warehouse equals a clean load of the sandbox's current truth, table by
 * table and row by row, and by id against the raw JSON. Answers the truth for further checks.
 */
export async function assertWarehouseIsTruth(
  file: string,
  origin: string,
  dir: string,
  label: string,
): Promise<Truth> {
  const truth = await fetchTruth(origin);
  const reference = path.join(dir, `reference-${label.replace(/\W+/g, '-')}-${Date.now()}.duckdb`);
  await buildReference(reference, truth);
  assertSameTables(await compareWarehouses(file, reference), label);
  await assertIdsMatchTruth(file, truth, label);
  return truth;
}

/** Runs one read-only query over a warehouse file (after the process that wrote it has exited). */
export function queryFile(file: string, sql: string): Promise<unknown[][]> {
  return withFiles({ w: file }, (c) => rowsOf(c, sql));
}
