import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it } from 'node:test';
import { planTables } from '../../src/model/index.js';
import { Normalizer } from '../../src/normalize/index.js';
import { FIXTURES } from './helpers.js';

/**
 * A 2023-02-10 product lists its variants under `children`: the object path writes them to `variants` and
 * its child tables exactly as it writes a 2024-04-01 product's `variants`, and a child that comes without an
 * id is keyed by its position there too (`#-`), its prices and stockrecords reading that id as their parent's.
 */

type Row = Record<string, unknown>;

const product = async (name: string): Promise<Row> =>
  JSON.parse(await readFile(path.join(FIXTURES, 'shapes-2023', name), 'utf8')) as Row;

/** Every row the normalizer writes for one product record, by table, by column name. */
function rowsOf(record: Row): Record<string, Row[]> {
  const normalizer = new Normalizer(false);
  normalizer.normalize(record, 'product', null);
  const out: Record<string, Row[]> = {};
  for (const table of planTables('product')) {
    const rows = normalizer.tables.get(table)!;
    out[table] = Array.from({ length: rows.length }, (_, row) =>
      Object.fromEntries(
        rows.columns.map((column, i) => [column.name, rows.valid[i]![row] ? rows.get(i, row) : null]),
      ),
    );
  }
  return out;
}

describe('normalize: a product with its variants under `children`', () => {
  it('writes the rows a product with the same variants under `variants` writes', async () => {
    const under2023 = rowsOf(await product('product-2023.json'));
    assert.deepEqual(under2023, rowsOf(await product('product-2024.json')));
    assert.deepEqual(
      ['variants', 'variant_prices', 'variant_stockrecords', 'variant_attribute_values'].map(
        (table) => under2023[table]!.length,
      ),
      [2, 4, 2, 2],
    );
  });

  it('keys a child without an id by its position, and its own children by that id', async () => {
    const record = await product('product-2023.json');
    const children = record.children as Row[];
    delete children[1]!.id;
    const rows = rowsOf(record);
    const pick = (table: string, ...columns: string[]) =>
      rows[table]!.map((row) => Object.fromEntries(columns.map((c) => [c, row[c]])));
    assert.deepEqual(pick('variants', 'product_id', 'id', 'sku'), [
      { product_id: 620, id: 6201, sku: 'SMP-S' },
      { product_id: 620, id: -2, sku: 'SMP-L' },
    ]);
    assert.deepEqual(pick('variant_stockrecords', 'variant_id', 'id'), [
      { variant_id: 6201, id: 62011 },
      { variant_id: -2, id: 62021 },
    ]);
    assert.deepEqual(pick('variant_prices', 'variant_id', 'index', 'currency'), [
      { variant_id: 6201, index: 0, currency: 'EUR' },
      { variant_id: 6201, index: 1, currency: 'USD' },
      { variant_id: -2, index: 0, currency: 'EUR' },
      { variant_id: -2, index: 1, currency: 'USD' },
    ]);
  });
});
