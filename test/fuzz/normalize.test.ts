import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from 'fast-check';
import {
  type FieldRejection,
  NormalizeError,
  Normalizer,
  type TableRows,
} from '../../src/normalize/index.js';
import { caseArb, fuzzParameters, fuzzRuns, KINDS } from './support/cases.js';
import { type Cell, canonicalDouble, expectRows } from './support/oracle.js';
import { arbitraryFor } from './support/schema-arbitrary.js';

/**
 * Property: the normalizer turns any document, however hostile, into exactly the rows the table registry
 * describes (every value exact, every child with its parent, a value that does not fit left NULL and kept
 * in `_extra` with a field rejection naming it, unknown fields in `_extra`), or refuses the whole document
 * with a NormalizeError and takes back every row it had started. Never another exception, never half a
 * document.
 */

const RUNS = fuzzRuns(300);

function stagedCell(rows: TableRows, column: number, row: number): Cell {
  const value = rows.get(column, row);
  if (value === null) return null;
  // Lists are held as arrays; the oracle writes every list as its JSON text.
  if (Array.isArray(value)) return JSON.stringify(value);
  return rows.kinds[column] === 'f64' ? canonicalDouble(value as number) : String(value);
}

/** Rows of a table from `from` on, without the `_unit` column. */
function stagedRows(rows: TableRows, from: number): Cell[][] {
  const out: Cell[][] = [];
  for (let row = from; row < rows.length; row++) {
    const cells: Cell[] = [];
    for (let column = 1; column < rows.columns.length; column++) cells.push(stagedCell(rows, column, row));
    out.push(cells);
  }
  return out;
}

test('normalize: every document becomes its exact rows or is refused whole', () => {
  const normalizer = new Normalizer();
  let loaded = 0;
  let refused = 0;
  let refusedFields = 0;
  fc.assert(
    fc.property(fc.array(caseArb, { minLength: 1, maxLength: 3 }), (cases) => {
      normalizer.clear();
      for (const { kind, doc } of cases) {
        const lengths = new Map([...normalizer.tables].map(([name, rows]) => [name, rows.length]));
        const expected = expectRows(doc, kind.entity, kind.shape);
        let error: unknown = null;
        let refusals: readonly FieldRejection[] = [];
        try {
          refusals = normalizer.normalize(doc, kind.entity, kind.shape);
        } catch (caught) {
          error = caught;
        }
        if (error !== null) {
          assert.ok(error instanceof NormalizeError, `normalize threw ${String(error)} instead of refusing`);
          assert.ok(
            expected.rejected,
            `${kind.entity} refused (${error.reason}) though every value fits its column`,
          );
          assert.match(error.reason, /expected/, 'a refusal says what was expected');
          for (const [name, rows] of normalizer.tables)
            assert.equal(rows.length, lengths.get(name), `a refused ${kind.entity} left rows in ${name}`);
          refused++;
          continue;
        }
        assert.ok(
          !expected.rejected,
          `${kind.entity} loaded though it must be refused: ${expected.rejected && expected.why}`,
        );
        for (const [name, rows] of normalizer.tables) {
          const actual = stagedRows(rows, lengths.get(name)!);
          assert.deepEqual(actual, expected.rows.get(name) ?? [], `${kind.entity} → ${name}`);
        }
        const named = (r: { table: string; fieldPath: string }) => `${r.table}: ${r.fieldPath}`;
        assert.deepEqual(
          refusals.map(named).sort(),
          expected.refusals.map(named).sort(),
          `${kind.entity}: field rejections`,
        );
        for (const r of refusals)
          assert.match(r.reason, /expected/, 'a field rejection says what was expected');
        if (refusals.length) refusedFields++;
        loaded++;
      }
    }),
    fuzzParameters(RUNS),
  );
  // Both outcomes must actually occur, or the generator has drifted away from one of them.
  console.log(
    `normalize fuzz: ${loaded} loaded (${refusedFields} with field rejections), ${refused} refused`,
  );
  assert.ok(
    loaded > 0 && refused > 0 && refusedFields > 0,
    `loaded ${loaded}, with field rejections ${refusedFields}, refused ${refused}`,
  );
});

test('normalize: every document the API could send (schema-valid, documented ranges) loads', () => {
  const normalizer = new Normalizer();
  const tame = fc.constantFrom(...KINDS).chain((kind) =>
    (arbitraryFor(kind.schema, 'tame') as fc.Arbitrary<Record<string, unknown>>).map((doc) => ({
      kind,
      doc,
    })),
  );
  fc.assert(
    fc.property(tame, ({ kind, doc }) => {
      assert.ok(kind.schema.safeParse(doc).success, 'the generator made a document its own schema refuses');
      normalizer.clear();
      try {
        normalizer.normalize(doc, kind.entity, kind.shape);
      } catch (error) {
        assert.fail(`a valid ${kind.entity} was refused: ${(error as Error).message}`);
      }
    }),
    fuzzParameters(Math.max(100, Math.round(RUNS / 3))),
  );
});
