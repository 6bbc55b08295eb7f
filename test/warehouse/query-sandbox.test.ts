import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkText, explainedStatement, isEmptySql } from '../../src/load/query-sandbox.js';

/**
 * How `store-sync query` reads the few words it must read itself (docs/querying.md, "What `query` can and
 * cannot do"): what an EXPLAIN explains, and the statements refused before DuckDB prepares them. Comments are
 * skipped as DuckDB's scanner skips them; what cannot be read this way is undefined, which the caller
 * refuses.
 */

describe('query sandbox: the words read before DuckDB prepares a statement', () => {
  it('finds the statement an EXPLAIN explains, in each of its forms', () => {
    const copy = "COPY (SELECT 1) TO 'x.csv'";
    for (const prefix of [
      'EXPLAIN ',
      'explain analyze ',
      'EXPLAIN ANALYSE VERBOSE ',
      'EXPLAIN VERBOSE ',
      'EXPLAIN (ANALYZE, FORMAT json) ',
      "EXPLAIN (FORMAT 'json') ",
      ' ;; -- a comment\nEXPLAIN /* a /* nested */ comment */ ANALYZE ',
    ])
      assert.equal(explainedStatement(prefix + copy)?.trim(), copy, prefix);
    // A nested comment that hides a SELECT: what follows it is the COPY, as DuckDB reads it.
    assert.equal(explainedStatement(`EXPLAIN ANALYZE /* x /* y */ SELECT 1 */ ${copy}`), copy);
    // What it cannot read, it does not guess at.
    assert.equal(explainedStatement(`EXPLAIN (FORMAT $$json$$) ${copy}`), undefined);
    assert.equal(explainedStatement(`EXPLAIN (FORMAT E'js\\'on') ${copy}`), undefined);
    assert.equal(explainedStatement(`EXPLAIN /* unended ${copy}`), undefined);
    assert.equal(explainedStatement(`SELECT 1`), undefined);
  });

  it('refuses EXPORT and IMPORT DATABASE from their text, before preparing them', () => {
    for (const sql of [
      "EXPORT DATABASE 'out'",
      "/* c */ export database 'out' (FORMAT parquet)",
      "-- c\r\nEXPORT DATABASE 'out'",
      "-- c\rEXPORT DATABASE 'out'",
      "IMPORT DATABASE 'in'",
      "PRAGMA import_database('in')",
      'PRAGMA "IMPORT_DATABASE"(\'in\')',
    ])
      assert.throws(() => checkText(sql), /store-sync query only reads .* cannot (run EXPORT|import)/, sql);
    for (const sql of [
      'SELECT 1',
      "SELECT 'EXPORT DATABASE'",
      "-- EXPORT DATABASE 'out'\nSELECT 1",
      'PRAGMA show_tables',
    ])
      assert.doesNotThrow(() => checkText(sql), sql);
  });

  it('tells SQL that holds no statement', () => {
    for (const sql of ['', ' ; ', '-- only a comment', '/* a */ ; /* b /* c */ */'])
      assert.equal(isEmptySql(sql), true, sql);
    for (const sql of ['SELECT 1', '/* unended', '-- c\nSELECT 1']) assert.equal(isEmptySql(sql), false, sql);
  });
});
