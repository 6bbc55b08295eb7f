import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from 'fast-check';
import { ingestPaths } from '../../pipelines/ingest.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import type { ColumnDef } from '../../src/model/index.js';
import { detectDocument } from '../../src/normalize/index.js';
import { fuzzParameters, fuzzRuns } from './support/cases.js';
import { type Line, lineArb, lineText, uniqueKeys } from './support/documents.js';
import { type Cell, type Expected, expectRows, missingKeys } from './support/oracle.js';
import { asStored, sortedLines, storeRows } from './support/warehouse-rows.js';

/**
 * Property, end to end through `ingestPaths` into a real DuckDB file: every line of a hostile NDJSON file
 * either loads, with exactly the rows it must become in every table (children with their parent, every
 * decimal, instant and id exact, a value that does not fit NULL and kept in `_extra` with a field-level
 * row in `_rejected_records`), or lands in `_rejected_records` whole with a reason, and the ingest itself
 * never throws. Each generated file is its own store in one warehouse, so runs do not see each other.
 */

const DOCUMENTS = fuzzRuns(300);
/** Lines per generated file: enough for several documents per transaction. */
const PER_FILE = 24;

let dir: string;
let warehouse: Warehouse;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-fuzz-ingest-'));
  warehouse = await openWarehouse(path.join(dir, 'fuzz.duckdb'));
});

after(async () => {
  await warehouse?.close();
  await rm(dir, { recursive: true, force: true });
});

interface Expectation {
  rows: Map<string, Cell[][]>;
  /** Lines with a record refused whole (level `record`). */
  rejectedLines: number[];
  /** `line: table: field path` of each field rejection (level `field`), sorted. */
  refusedFields: string[];
}

/** What the pipeline must make of the file, line by line, worked out by the oracle. */
function expectationFor(texts: string[]): Expectation {
  const rows = new Map<string, Cell[][]>();
  const rejectedLines: number[] = [];
  const refusedFields: string[] = [];
  texts.forEach((text, i) => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      rejectedLines.push(i + 1);
      return;
    }
    // Detection refuses whole documents, or items of an array one by one; the rest of the line loads.
    const detected = detectDocument(value);
    const results = detected.records.map((r) => expectRows(r.record, r.entity, r.apiVersion, r.envelope));
    const refused = (r: Expected) => r.rejected || missingKeys(r).length > 0;
    // A document with several records (a move result) is refused when one of them is, and the rest load.
    if (detected.errors.length > 0 || results.some(refused)) rejectedLines.push(i + 1);
    for (const result of results) {
      if (result.rejected || refused(result)) continue;
      for (const r of result.refusals) refusedFields.push(`${i + 1}: ${r.table}: ${r.fieldPath}`);
      for (const [table, tableRows] of result.rows) {
        const columns = result.columns.get(table)! as ColumnDef[];
        const stored = tableRows.map((row) => row.map((cell, c) => asStored(columns[c]!, cell)));
        rows.set(table, [...(rows.get(table) ?? []), ...stored]);
      }
    }
  });
  return { rows, rejectedLines, refusedFields: refusedFields.sort() };
}

test('ingest: every line loads exactly or lands in _rejected_records with a reason', async () => {
  let file = 0;
  let nextKey = 1;
  let loaded = 0;
  let rejected = 0;
  await fc.assert(
    fc.asyncProperty(
      fc.array(lineArb, { minLength: PER_FILE / 2, maxLength: PER_FILE * 1.5 }),
      async (lines: Line[]) => {
        const store = `fuzz_${++file}`;
        // Keys are rewritten on a copy: fast-check replays and shrinks the generated values themselves.
        const texts = lines.map((line) => {
          if (line.kind === 'junk') return lineText(line);
          const doc = structuredClone(line.case.doc);
          uniqueKeys(doc, line.case.kind.entity, () => nextKey++);
          return lineText({ ...line, case: { ...line.case, doc } });
        });
        const input = path.join(dir, `${store}.ndjson`);
        await writeFile(input, `${texts.join('\n')}\n`);
        const expected = expectationFor(texts);

        await ingestPaths(warehouse, [input], { store, runId: `run-${store}`, logger: silentLogger });

        const { rejections, actual } = await warehouse.exclusive(async () => {
          const reader = await warehouse.connection.runAndReadAll(
            `SELECT source, reason, level, field_path FROM _rejected_records WHERE _store = '${store}'`,
          );
          return { rejections: reader.getRows(), actual: await storeRows(warehouse.connection, store) };
        });
        for (const [, reason] of rejections)
          assert.ok(String(reason ?? '').length > 0, 'a rejection without a reason');
        const lineOf = (source: unknown) => Number(String(source).split(':').pop());
        const rejectedLines = rejections.filter((r) => r[2] === 'record').map(([source]) => lineOf(source));
        assert.deepEqual(
          [...new Set(rejectedLines)].sort((a, b) => a - b),
          expected.rejectedLines,
          'lines refused whole in _rejected_records',
        );
        // A refused line's field rejections go with it; a loaded line's are each a row.
        const refusedFields = rejections
          .filter((r) => r[2] === 'field')
          .map(
            ([source, reason, , fieldPath]) =>
              `${lineOf(source)}: ${String(reason).split(':')[0]}: ${fieldPath}`,
          )
          .sort();
        assert.deepEqual(refusedFields, expected.refusedFields, 'field rejections in _rejected_records');
        for (const table of new Set([...actual.keys(), ...expected.rows.keys()])) {
          assert.deepEqual(
            sortedLines(actual.get(table) ?? []),
            sortedLines(expected.rows.get(table) ?? []),
            `rows of ${table}`,
          );
        }
        rejected += expected.rejectedLines.length;
        loaded += texts.length - expected.rejectedLines.length;
      },
    ),
    // Every file is one more store in the same warehouse, so a file takes longer the more came before it: about
    // 0.3 s for the first ones and 1.1 s on average over the chaos suite's 417 files on this project's 2-core
    // machine (history versions included). The bound is only there to stop a runaway shrink, so it leaves room.
    fuzzParameters(Math.max(4, Math.ceil(DOCUMENTS / PER_FILE)), 3000),
  );
  console.log(`ingest fuzz: ${loaded} lines loaded, ${rejected} rejected`);
  assert.ok(loaded > 0 && rejected > 0, `loaded ${loaded}, rejected ${rejected}`);
});
