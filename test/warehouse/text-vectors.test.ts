import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MessageChannel } from 'node:worker_threads';
import type { DuckDBConnection } from '@duckdb/node-api';
import { AppenderPool, partColumns } from '../../src/load/chunks.js';
import { createTableSql } from '../../src/load/ddl.js';
import { LANDING_PART_BYTES, storedBlocks } from '../../src/load/landing.js';
import { tableDef } from '../../src/model/index.js';
import { TableRows } from '../../src/normalize/index.js';
import { Rng } from '../../src/sandbox/model/random.js';
import { tempDatabase } from './helpers.js';

/**
 * The loader writes text a whole vector at a time: the column's UTF-8 bytes go into DuckDB's string heap in
 * one call and each row's 16-byte string_t (inline up to 12 bytes, else prefix + pointer) is written by
 * hand. These tests read back every value, across chunk boundaries, NULLs, empty strings, the 12/13-byte
 * inline edge, multi-byte characters, and lone surrogates where two values meet.
 */

const ALPHABET = ['a', 'Z', '0', ' ', 'é', 'ß', '日', '本', '😀', '"', '\\', '\n'];

function randomText(rng: Rng): string | null {
  if (rng.next() < 0.15) return null;
  const length = [0, 1, 4, 11, 12, 13, 14, 30, 200][rng.int(0, 8)]!;
  let text = '';
  while (text.length < length) text += ALPHABET[rng.int(0, ALPHABET.length - 1)];
  return text;
}

async function roundTrip(
  connection: DuckDBConnection,
  pool: AppenderPool,
  table: string,
  values: (string | null)[],
): Promise<(string | null)[]> {
  await connection.run(`CREATE TABLE ${table} (n BIGINT, t VARCHAR)`);
  const rows = new TableRows(table, [
    { name: 'n', type: 'BIGINT', comment: '' },
    { name: 't', type: 'VARCHAR', comment: '' },
  ]);
  values.forEach((value, n) => {
    const row = rows.addRow();
    rows.setInt64(0, row, n);
    if (value !== null) rows.setText(1, row, value);
  });
  rows.seal();
  (await pool.get(table)).append(rows, [
    { from: 'rows', column: 0 },
    { from: 'rows', column: 1 },
  ]);
  const reader = await connection.runAndReadAll(`SELECT t FROM ${table} ORDER BY n`);
  return reader.getRows().map(([t]) => (t === null ? null : String(t)));
}

describe('loader: text columns written a vector at a time', () => {
  let connection: DuckDBConnection;
  let pool: AppenderPool;
  let close: () => Promise<void>;

  before(async () => {
    ({ connection, close } = await tempDatabase());
    pool = new AppenderPool(connection);
  });

  after(async () => {
    await pool.closeAll();
    await close();
  });

  it('reads back 5,000 mixed values exactly (three chunks, NULLs, inline edge, multi-byte)', async () => {
    const rng = new Rng(7);
    const values = Array.from({ length: 5000 }, () => randomText(rng));
    assert.ok(values.some((v) => v?.length === 12) && values.some((v) => v?.length === 13));
    assert.deepEqual(await roundTrip(connection, pool, 'mixed', values), values);
  });

  it('a chunk of only NULLs, a chunk of only empty strings, and one long value', async () => {
    const values = [
      ...Array.from({ length: 2048 }, () => null),
      ...Array.from({ length: 2048 }, () => ''),
      'x'.repeat(100_000),
    ];
    assert.deepEqual(await roundTrip(connection, pool, 'edges', values), values);
  });

  it('lone surrogates meeting at a seam are stored as each value alone would be (U+FFFD)', async () => {
    const values = ['abc\ud83d', '\ude00def', 'plain', '\udc00', 'x'.repeat(20) + '\ud800'];
    const expected = values.map((v) => Buffer.from(v, 'utf8').toString('utf8'));
    assert.equal(expected[0], 'abc\ufffd');
    assert.deepEqual(await roundTrip(connection, pool, 'seams', values), expected);
  });

  it('a raw landing block appended as parts reads back byte for byte (chunks, a short last part, seq ≥ 2^32)', async () => {
    await connection.run(createTableSql(tableDef('_raw_landing_parts')));
    const rng = new Rng(11);
    // 2,049 whole parts and 5 bytes: two chunks, and a last part short enough to be stored inline.
    const large = Uint8Array.from({ length: 2049 * LANDING_PART_BYTES + 5 }, () => rng.int(0, 255));
    const tiny = Uint8Array.from([0, 1, 2, 255]);
    const appender = await pool.get('_raw_landing_parts');
    const columns = partColumns(tableDef('_raw_landing_parts').columns.map((c) => c.name));
    const first = 2 ** 33 + 5;
    assert.equal(appender.appendParts(columns, first, large, LANDING_PART_BYTES), 2050);
    assert.equal(appender.appendParts(columns, 7, tiny, LANDING_PART_BYTES), 1);
    const blocks = await storedBlocks(connection, [first, 7]);
    assert.deepEqual(Buffer.from(blocks.get(first)!), Buffer.from(large));
    assert.deepEqual(Buffer.from(blocks.get(7)!), Buffer.from(tiny));
    const parts = await connection.runAndReadAll(
      'SELECT first_seq, count(*), min(part), max(part), max(octet_length(bytes)) FROM _raw_landing_parts GROUP BY 1 ORDER BY 1',
    );
    assert.deepEqual(
      parts.getRows().map((row) => row.map(Number)),
      [
        [7, 1, 0, 0, 4],
        [first, 2050, 0, 2049, LANDING_PART_BYTES],
      ],
    );
    assert.throws(() => partColumns(['first_seq', 'part', 'bytes', 'extra']), /does not fill: extra/);
  });

  it('a sealed TableRows reads its text back and refuses new rows', () => {
    const rows = new TableRows('t', [{ name: 't', type: 'VARCHAR', comment: '' }]);
    for (const v of ['日本', null, 'long enough to leave the inline part']) {
      const row = rows.addRow();
      if (v !== null) rows.setText(0, row, v);
    }
    rows.seal();
    assert.deepEqual(
      [0, 1, 2].map((r) => rows.get(0, r)),
      ['日本', null, 'long enough to leave the inline part'],
    );
    assert.throws(() => rows.addRow(), /sealed/);
    // A table with no text column is sealed all the same.
    const numbers = new TableRows('n', [{ name: 'n', type: 'BIGINT', comment: '' }]);
    numbers.setInt64(0, numbers.addRow(), 1);
    numbers.seal();
    assert.throws(() => numbers.addRow(), /sealed/);
    numbers.clear();
    assert.equal(numbers.addRow(), 0, 'clear() makes it usable again');
  });
});

describe('encoded text can move to a worker thread', () => {
  it("a short column is not a view into Node's shared Buffer pool (Node 21+ refuses to transfer it)", () => {
    const rows = new TableRows('t', [{ name: 't', type: 'VARCHAR', comment: '' }]);
    for (const v of ['ab', 'c']) rows.setText(0, rows.addRow(), v);
    const text = rows.takeSnapshot().text[0]!;
    assert.notEqual(text.bytes.buffer, Buffer.from('pooled').buffer);
    assert.equal(text.bytes.byteOffset, 0);
    assert.deepEqual([...text.ends], [2, 3]);
    const { port1, port2 } = new MessageChannel();
    port1.postMessage(text, [text.bytes.buffer as ArrayBuffer, text.ends.buffer as ArrayBuffer]);
    port1.close();
    port2.close();
    assert.equal(text.bytes.byteLength, 0, 'the bytes moved');
  });
});

describe('text columns taken back and built again', () => {
  it('a truncated row and a cleared batch leave no bytes behind', () => {
    const rows = new TableRows('t', [{ name: 't', type: 'VARCHAR', comment: '' }]);
    rows.setText(0, rows.addRow(), 'kept');
    rows.addRow();
    rows.setText(0, rows.addRow(), 'taken back');
    rows.truncate(1);
    rows.setText(0, rows.addRow(), 'é');
    for (let i = 0; i < 600; i++) rows.setText(0, rows.addRow(), `row ${i} ${'x'.repeat(i % 40)}`);
    assert.equal(rows.get(0, 0), 'kept');
    assert.equal(rows.get(0, 1), 'é', 'readable before sealing');
    rows.seal();
    assert.equal(rows.get(0, 1), 'é');
    assert.equal(rows.get(0, 601), `row 599 ${'x'.repeat(599 % 40)}`);
    rows.clear();
    rows.addRow();
    rows.setText(0, rows.addRow(), 'again');
    rows.seal();
    assert.deepEqual([rows.get(0, 0), rows.get(0, 1)], [null, 'again']);
    const ordered = new TableRows('t', [{ name: 't', type: 'VARCHAR', comment: '' }]);
    const [first, second] = [ordered.addRow(), ordered.addRow()];
    ordered.setText(0, second, 'b');
    assert.throws(() => ordered.setText(0, first, 'a'), /set after row 1/, 'rows are written in order');
    assert.equal(rows.text[0]!.bytes.length, 5);
  });
});
