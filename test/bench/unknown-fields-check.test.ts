import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { assertUnknownFieldsKept } from '../../bench/ingest.js';
import { orderDocuments, UNKNOWN_FIELDS } from '../../bench/warehouse-data.js';

/**
 * The ingest benchmark's unknown-fields diagnostic fails unless `_extra` holds each unknown field of each
 * document: one row per document in each of the three tables (as bench/warehouse-data.ts generates them).
 */
describe('bench: the unknown-fields check', () => {
  it('the generator puts each unknown field once in each document', () => {
    const next = orderDocuments(42, 'unknown-fields');
    for (let n = 1; n <= 50; n++) {
      const order = next(n) as {
        lines: { tax_lines: Record<string, unknown>[]; [key: string]: unknown }[];
        [key: string]: unknown;
      };
      assert.ok(UNKNOWN_FIELDS.orders in order);
      assert.equal(order.lines.filter((line) => UNKNOWN_FIELDS.order_lines in line).length, 1);
      const taxLines = order.lines.flatMap((line) => line.tax_lines);
      assert.equal(taxLines.filter((tax) => UNKNOWN_FIELDS.order_line_tax_lines in tax).length, 1);
    }
  });

  it('passes when each table holds the field in one row per document', () => {
    assertUnknownFieldsKept({ orders: 1000, order_lines: 1000, order_line_tax_lines: 1000 }, 1000);
  });

  it('fails when a table holds the field in fewer rows than documents, or in none', () => {
    assert.throws(
      () => assertUnknownFieldsKept({ orders: 1000, order_lines: 999, order_line_tax_lines: 1000 }, 1000),
      /order_lines 999/,
    );
    assert.throws(
      () => assertUnknownFieldsKept({ orders: 0, order_lines: 0, order_line_tax_lines: 0 }, 1000),
      /orders 0/,
    );
    assert.throws(() => assertUnknownFieldsKept({}, 1000), /order_line_tax_lines undefined/);
  });
});
