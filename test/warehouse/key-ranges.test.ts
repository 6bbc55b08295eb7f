import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { DuckDBConnection } from '@duckdb/node-api';
import { KeyRanges } from '../../src/load/key-ranges.js';
import { tempDatabase } from './helpers.js';

/**
 * The loader skips the "is any of these keys stored?" query when a batch's keys all lie outside the range
 * it knows the stored keys to be in. Getting that wrong would append a second row for a key, so the range
 * must never be narrower than the truth: these tests check it against real tables.
 */
describe('loader: ranges of stored keys', () => {
  let connection: DuckDBConnection;
  let close: () => Promise<void>;

  before(async () => {
    ({ connection, close } = await tempDatabase());
    await connection.run(`
      CREATE TABLE numbered (_store VARCHAR, number VARCHAR);
      INSERT INTO numbered VALUES ('s', '9'), ('s', '10'), ('s', '95'), ('other', '5000');
      CREATE TABLE ids (_store VARCHAR, id BIGINT);
      INSERT INTO ids VALUES ('s', 100), ('s', 200);
      CREATE TABLE named (_store VARCHAR, code VARCHAR);
      INSERT INTO named VALUES ('s', 'B-1'), ('s', 'D-9');
      CREATE TABLE accented (_store VARCHAR, code VARCHAR);
      INSERT INTO accented VALUES ('s', 'é');`);
  });

  after(() => close());

  const outside = (
    ranges: KeyRanges,
    table: string,
    column: string,
    keys: (string | number)[],
    store = 's',
  ) => ranges.outside(connection, table, column, store, KeyRanges.span(keys)!);

  it('order numbers are ordered as numbers, not as text ("96" is past "10", though "10" < "96" < "9" as text)', async () => {
    const ranges = new KeyRanges();
    assert.equal(await outside(ranges, 'numbered', 'number', ['96', '120']), true);
    assert.equal(await outside(ranges, 'numbered', 'number', ['1', '8']), true);
    assert.equal(await outside(ranges, 'numbered', 'number', ['11', '12']), false, 'inside 9 … 95');
    assert.equal(await outside(ranges, 'numbered', 'number', ['95']), false, 'the stored maximum');
  });

  it('each store has its own range; a store with no rows is outside everything', async () => {
    const ranges = new KeyRanges();
    assert.equal(await outside(ranges, 'numbered', 'number', ['5000'], 'other'), false);
    assert.equal(await outside(ranges, 'numbered', 'number', ['1', '99999'], 'new store'), true);
  });

  it('widening with written keys: the next batch over them is checked', async () => {
    const ranges = new KeyRanges();
    assert.equal(await outside(ranges, 'ids', 'id', [300, 400]), true);
    ranges.widen('ids', 's', KeyRanges.span([300, 400]));
    assert.equal(await outside(ranges, 'ids', 'id', [350]), false);
    assert.equal(await outside(ranges, 'ids', 'id', [401, 500]), true);
    assert.equal(await outside(ranges, 'ids', 'id', [1, 99]), true);
  });

  it('ASCII text keys are ordered as text; other text is never trusted', async () => {
    const ranges = new KeyRanges();
    assert.equal(await outside(ranges, 'named', 'code', ['A-1']), true);
    assert.equal(await outside(ranges, 'named', 'code', ['C-1']), false);
    assert.equal(KeyRanges.span(['ü']), null, 'a non-ASCII key has no span');
    assert.equal(
      await outside(ranges, 'accented', 'code', ['a']),
      false,
      'stored non-ASCII keys: always check',
    );
  });

  it('mixing numbers and text in a widen makes the table always checked', async () => {
    const ranges = new KeyRanges();
    assert.equal(await outside(ranges, 'named', 'code', ['Z-1']), true);
    ranges.widen('named', 's', KeyRanges.span(['123']));
    assert.equal(await outside(ranges, 'named', 'code', ['Z-2']), false);
    ranges.clear();
    assert.equal(await outside(ranges, 'named', 'code', ['Z-2']), true, 'read again after clear()');
  });
});
