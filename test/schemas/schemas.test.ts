import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  decimalText,
  LocationCreateRequest,
  OPERATIONS,
  Order2023,
  Order2024,
  OrderCreate2023Request,
  OrderCreate2024Request,
  OrderPatchRequest,
  operationPath,
  SubscriptionsQuery,
  VariantUpdateRequest,
} from '../../schemas/index.js';

describe('response schemas', () => {
  it('keeps unknown extra fields and tolerates missing ones', () => {
    const parsed = Order2024.parse({ number: 'A-1', brand_new_field: { x: 1 } });
    assert.deepEqual(parsed.brand_new_field, { x: 1 });
  });

  it('tells the two order line shapes apart by their fields', () => {
    const line2023 = { id: 1, product: { id: 5, title: 'Tea' }, stockrecord: { id: 9, partner_sku: 'T-1' } };
    assert.equal(Order2023.safeParse({ number: 'A', lines: [line2023] }).success, true);
    assert.equal(Order2024.safeParse({ number: 'A', lines: [{ id: 1, product_id: 'x' }] }).success, false);
  });

  it('refuses money that is not plain decimal text', () => {
    for (const bad of ['1e5', 'NaN', '', '1,00', ' 1', 'Infinity', '-']) {
      assert.equal(decimalText.safeParse(bad).success, false, bad);
    }
    for (const good of ['0', '-0.50', '9999999999.99', '.5', '1.', '1.234']) {
      assert.equal(decimalText.safeParse(good).success, true, good);
    }
  });

  it('refuses timestamps that are not ISO 8601 and ids that are not integers', () => {
    assert.equal(Order2024.safeParse({ number: 'A', created_at: 'yesterday' }).success, false);
    assert.equal(Order2024.safeParse({ number: 'A', lines: [{ id: '12' }] }).success, false);
    assert.equal(Order2024.safeParse({ number: 'A', lines: [{ id: 1.5 }] }).success, false);
    assert.equal(Order2024.safeParse({ number: 'A', created_at: '2025-03-01T10:00:00Z' }).success, true);
  });
});

describe('request schemas', () => {
  it('enforces the limits of part 8', () => {
    const line = { product_id: 1, quantity: 1 };
    assert.equal(OrderCreate2024Request.safeParse({ lines: [line], currency: 'EURO' }).success, false);
    assert.equal(
      OrderCreate2024Request.safeParse({ lines: [line], shipping_price: '12345678901.00' }).success,
      false,
    );
    assert.equal(OrderCreate2024Request.safeParse({ lines: [line], shipping_price: '1.234' }).success, false);
    assert.equal(OrderCreate2024Request.safeParse({ lines: [line], shipping_price: '10.5' }).success, true);
    assert.equal(OrderPatchRequest.safeParse({ status: 'x'.repeat(101) }).success, false);
    assert.equal(LocationCreateRequest.safeParse({ address: {}, name: 'x'.repeat(129) }).success, false);
    assert.equal(
      VariantUpdateRequest.safeParse({ variant_attribute_values: [], unit_cost: '1e3' }).success,
      false,
    );
  });

  it('closes the request enums and keeps currency to the 2024-04-01 variant', () => {
    const line = { product_id: 1, quantity: 1 };
    assert.equal(OrderCreate2024Request.safeParse({ lines: [line], payment_method: 'cash' }).success, false);
    assert.equal(OrderPatchRequest.safeParse({ fulfillment_status: 'shipped' }).success, false);
    assert.equal(
      OrderCreate2023Request.safeParse({ lines: [{ quantity: 1 }], currency: 'EUR' }).success,
      false,
    );
  });

  it('parses list queries from repeated or comma-separated parameters', () => {
    const query = SubscriptionsQuery.parse({
      status: ['active', 'past_due,retrying'],
      is_test: 'false',
      date_from: '2025-01-31',
    });
    assert.deepEqual(query.status, ['active', 'past_due', 'retrying']);
    assert.equal(query.is_test, false);
    assert.equal(SubscriptionsQuery.safeParse({ date_from: '2025-02-30' }).success, false);
    assert.equal(SubscriptionsQuery.safeParse({ status: 'paused' }).success, false);
  });
});

describe('operation catalogue', () => {
  it('covers every operation of part 4 with its version and scopes', () => {
    assert.equal(Object.keys(OPERATIONS).length, 20);
    assert.equal(OPERATIONS.markOrderPaid.version, '2023-02-10');
    assert.deepEqual(OPERATIONS.listLocations.scopes, ['fulfillment_service:read', 'locations:read']);
    assert.equal(operationPath(OPERATIONS.updateOrder, { number: 'A/1' }), '/orders/A%2F1/');
  });
});
