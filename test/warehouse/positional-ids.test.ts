import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EntityKind } from '../../src/contracts.js';
import { NormalizeError, Normalizer } from '../../src/normalize/index.js';

/**
 * The object path's row writer on array items without their own id: such an item of an owned table is keyed
 * by its position as a negative id (`#-`: -1 = first), and a column holding its id in the rows below it
 * reads the same (`^#-`). An id that is present wins; one that is present but not an integer, and a unit's
 * missing key, still reject the whole record.
 */

type Row = Record<string, unknown>;

function rowsOf(record: Row, entity: EntityKind = 'order'): (table: string, ...columns: string[]) => Row[] {
  const normalizer = new Normalizer(false);
  normalizer.normalize(record, entity, null);
  return (table, ...columns) => {
    const rows = normalizer.tables.get(table)!;
    const at = columns.map((c) => rows.columns.findIndex((column) => column.name === c));
    return Array.from({ length: rows.length }, (_, row) =>
      Object.fromEntries(columns.map((c, i) => [c, rows.valid[at[i]!]![row] ? rows.get(at[i]!, row) : null])),
    );
  };
}

function refusal(record: Row, entity: EntityKind = 'order'): string {
  try {
    new Normalizer(false).normalize(record, entity, null);
  } catch (error) {
    assert.ok(error instanceof NormalizeError);
    return error.reason;
  }
  assert.fail('the record loaded');
}

describe('normalize: array items without their own id are keyed by position', () => {
  it('an order line without an id gets -(position + 1); a present id is kept; null counts as missing', () => {
    const rows = rowsOf({
      number: 'P-1',
      lines: [
        { id: 5, quantity: 1, tax_lines: [{ amount: '1.00' }] },
        { quantity: 2, tax_lines: [{ amount: '2.00' }, { amount: '0.50' }] },
        { id: null, quantity: 3 },
      ],
    });
    assert.deepEqual(rows('order_lines', 'order_number', 'id', 'quantity'), [
      { order_number: 'P-1', id: 5, quantity: 1 },
      { order_number: 'P-1', id: -2, quantity: 2 },
      { order_number: 'P-1', id: -3, quantity: 3 },
    ]);
    assert.deepEqual(rows('order_line_tax_lines', 'line_id', 'index', 'amount'), [
      { line_id: 5, index: 0, amount: 1000 },
      { line_id: -2, index: 0, amount: 2000 },
      { line_id: -2, index: 1, amount: 500 },
    ]);
  });

  it('refunds, their lines, adjustments and transactions: each level reads its own and its parent position', () => {
    const rows = rowsOf({
      number: 'P-2',
      refunds: [
        { id: 70, refund_line_items: [{ quantity: 1 }], transactions: [{ amount: '1.00' }] },
        { adjustments: [{ type: 'a' }, { id: 9, type: 'b' }], refund_line_items: [{ quantity: 2 }] },
      ],
    });
    assert.deepEqual(rows('order_refunds', 'id'), [{ id: 70 }, { id: -2 }]);
    assert.deepEqual(rows('order_refund_lines', 'refund_id', 'id', 'quantity'), [
      { refund_id: 70, id: -1, quantity: 1 },
      { refund_id: -2, id: -1, quantity: 2 },
    ]);
    assert.deepEqual(rows('order_refund_adjustments', 'refund_id', 'id', 'type'), [
      { refund_id: -2, id: -1, type: 'a' },
      { refund_id: -2, id: 9, type: 'b' },
    ]);
    assert.deepEqual(rows('order_refund_transactions', 'refund_id', 'id'), [{ refund_id: 70, id: -1 }]);
  });

  it("under a fulfillment (a unit inside the order), line items and their tax lines; the unit's own id is required", () => {
    const rows = rowsOf({
      number: 'P-3',
      fulfillments: [{ id: 40, line_items: [{ quantity: 1, tax_lines: [{ amount: '1.00' }] }] }],
    });
    assert.deepEqual(rows('fulfillment_line_items', 'fulfillment_id', 'id'), [
      { fulfillment_id: 40, id: -1 },
    ]);
    assert.deepEqual(rows('fulfillment_line_item_tax_lines', 'fulfillment_id', 'line_item_id', 'index'), [
      { fulfillment_id: 40, line_item_id: -1, index: 0 },
    ]);
    assert.equal(
      refusal({ number: 'P-3', fulfillments: [{ line_items: [{ quantity: 1 }] }] }),
      'fulfillments[0].id: missing, expected an integer id',
    );
  });

  it('products: variants without ids key their prices and stockrecords; a product without its id is refused', () => {
    const rows = rowsOf(
      {
        id: 12,
        title: 't',
        images: [{ src: 'https://cdn.example/a.png' }],
        variants: [
          { id: 120, prices: [{ price: '1.00' }] },
          { prices: [{ price: '2.00' }], stockrecords: [{}] },
        ],
      },
      'product',
    );
    assert.deepEqual(rows('product_images', 'product_id', 'id'), [{ product_id: 12, id: -1 }]);
    assert.deepEqual(rows('variants', 'product_id', 'id'), [
      { product_id: 12, id: 120 },
      { product_id: 12, id: -2 },
    ]);
    assert.deepEqual(rows('variant_prices', 'variant_id', 'index'), [
      { variant_id: 120, index: 0 },
      { variant_id: -2, index: 0 },
    ]);
    assert.deepEqual(rows('variant_stockrecords', 'product_id', 'variant_id', 'id'), [
      { product_id: 12, variant_id: -2, id: -1 },
    ]);
    assert.equal(refusal({ title: 't', variants: [] }, 'product'), 'id: missing, expected an integer id');
  });

  it('ticket attachments under comments with and without ids', () => {
    const rows = rowsOf(
      {
        id: 3,
        subject: 's',
        comments: [{ attachments: [{ file_name: 'a' }] }, { id: 8, attachments: [{}, {}] }],
      },
      'ticket',
    );
    assert.deepEqual(rows('ticket_comments', 'ticket_id', 'id'), [
      { ticket_id: 3, id: -1 },
      { ticket_id: 3, id: 8 },
    ]);
    assert.deepEqual(rows('ticket_attachments', 'comment_id', 'id'), [
      { comment_id: -1, id: -1 },
      { comment_id: 8, id: -1 },
      { comment_id: 8, id: -2 },
    ]);
  });

  it('an id that is there but not an integer is refused, naming the id (not the position) and the value', () => {
    assert.equal(
      refusal({ number: 'P-4', lines: [{ id: 1 }, { id: '2x' }] }),
      'lines[1].id: got "2x", expected an integer',
    );
    assert.equal(
      refusal({ number: 'P-4', lines: [{ tax_lines: [] }, { id: -0.5 }] }),
      'lines[1].id: got -0.5, expected an integer',
    );
    assert.equal(refusal({ lines: [{ quantity: 1 }] }), 'number: missing, expected a string');
  });
});
