import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATIONS } from '../../schemas/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { assertError, type CallResult, call, callOp, fieldNames } from './http-helpers.js';

/** Request validation over real HTTP: limits and patterns of part 8, closed enums, bodies, routes, filters. */

describe('sandbox request validation', () => {
  let sandbox: Sandbox;
  let productId: number;
  let variantId: number;
  let orderNumber: string;
  let cartId: number;
  let locationId: number;
  let foId: number;

  before(async () => {
    sandbox = await startSandbox({ rateLimit: 0 });
    const product = sandbox.store.snapshot('products')[0] as { id: number; variants?: { id: number }[] };
    productId = product.id;
    variantId = product.variants![0]!.id;
    locationId = sandbox.store.snapshot('locations')[0]!.id;
    // An open fulfillment order can be moved, so a move to an unknown location fails on the location.
    const open = sandbox.store
      .snapshot('fulfillment_orders')
      .find((fo) => (fo as { status?: string }).status === 'open');
    foId = open!.id;
    const order = await callOp(sandbox, OPERATIONS.createOrder, {}, { json: { lines: [line()] } });
    assert.equal(order.status, 201, order.text);
    orderNumber = order.body.number;
    const cart = await callOp(sandbox, OPERATIONS.createCart, {}, { json: { lines: [line()] } });
    assert.equal(cart.status, 201, cart.text);
    cartId = cart.body.id;
  });
  after(() => sandbox.close());

  const line = () => ({ product_id: productId, quantity: 1 });
  const address = { country: 'US', line1: '1 Main St', line4: 'Springfield' };

  function assertInvalid(result: CallResult, field: string) {
    const error = assertError(result, 400, 'validation_error');
    assert.ok(fieldNames(error).includes(field), `expected ${field} in ${JSON.stringify(error.fields)}`);
    assert.ok(error.message.includes(field), error.message);
    return error;
  }

  describe('limits and patterns (part 8)', () => {
    it('currency at most 3 characters on order create (2024-04-01) and cart create', async () => {
      assertInvalid(
        await callOp(sandbox, OPERATIONS.createOrder, {}, { json: { lines: [line()], currency: 'EURO' } }),
        'currency',
      );
      assertInvalid(
        await callOp(sandbox, OPERATIONS.createCart, {}, { json: { lines: [line()], currency: 'EURO' } }),
        'currency',
      );
      const ok = await callOp(
        sandbox,
        OPERATIONS.createOrder,
        {},
        { json: { lines: [line()], currency: 'EUR' } },
      );
      assert.equal(ok.status, 201, ok.text);
      const cart = await callOp(
        sandbox,
        OPERATIONS.createCart,
        {},
        { json: { lines: [line()], currency: 'GBP' } },
      );
      assert.equal(cart.status, 201, cart.text);
    });

    it('currency is refused by the 2023-02-10 order create', async () => {
      assertInvalid(
        await callOp(
          sandbox,
          OPERATIONS.createOrder2023,
          {},
          { json: { lines: [{ quantity: 1 }], currency: 'EUR' } },
        ),
        'currency',
      );
    });

    it('status at most 100 characters on the order PATCH', async () => {
      const patch = (status: string) =>
        callOp(sandbox, OPERATIONS.updateOrder, { number: orderNumber }, { json: { status } });
      assertInvalid(await patch('x'.repeat(101)), 'status');
      assert.equal((await patch('x'.repeat(100))).status, 200);
    });

    it('name at most 128 characters on location create', async () => {
      const create = (name: string) =>
        callOp(sandbox, OPERATIONS.createLocation, {}, { json: { address, name } });
      assertInvalid(await create('n'.repeat(129)), 'name');
      assert.equal((await create('n'.repeat(128))).status, 201);
    });

    it('callback_url must be an absolute URI', async () => {
      const result = await callOp(
        sandbox,
        OPERATIONS.createLocation,
        {},
        {
          json: { address, callback_url: 'not a url' },
        },
      );
      assertInvalid(result, 'callback_url');
    });

    it('shipping_price follows the decimal pattern', async () => {
      const create = (shipping_price: string) =>
        callOp(sandbox, OPERATIONS.createOrder, {}, { json: { lines: [line()], shipping_price } });
      for (const bad of ['12345678901', '1.234', '1e3', '12,50', 'free']) {
        assertInvalid(await create(bad), 'shipping_price');
      }
      for (const good of ['1234567890.12', '0', '0.5']) assert.equal((await create(good)).status, 201, good);
    });

    it('unit_cost follows the decimal pattern', async () => {
      const update = (unit_cost: string) =>
        callOp(
          sandbox,
          OPERATIONS.updateVariant,
          { id: variantId },
          {
            json: { variant_attribute_values: [], unit_cost },
          },
        );
      for (const bad of ['1.001', '99999999999', 'abc']) assertInvalid(await update(bad), 'unit_cost');
      const ok = await update('12.50');
      assert.equal(ok.status, 200, ok.text);
    });
  });

  describe('closed request enums', () => {
    it('payment_method and status on order create', async () => {
      assertInvalid(
        await callOp(
          sandbox,
          OPERATIONS.createOrder,
          {},
          { json: { lines: [line()], payment_method: 'cash' } },
        ),
        'payment_method',
      );
      assertInvalid(
        await callOp(sandbox, OPERATIONS.createOrder, {}, { json: { lines: [line()], status: 'pending' } }),
        'status',
      );
    });

    it('fulfillment_status on the order PATCH', async () => {
      assertInvalid(
        await callOp(
          sandbox,
          OPERATIONS.updateOrder,
          { number: orderNumber },
          {
            json: { fulfillment_status: 'shipped' },
          },
        ),
        'fulfillment_status',
      );
    });

    it('carrier on the order fulfillment create', async () => {
      assertInvalid(
        await callOp(
          sandbox,
          OPERATIONS.createOrderFulfillment,
          { number: orderNumber },
          {
            json: { carrier: 'pigeon' },
          },
        ),
        'carrier',
      );
    });
  });

  describe('required fields and types', () => {
    const cases: [keyof typeof OPERATIONS, () => Record<string, string | number>, unknown, string][] = [
      ['createOrder', () => ({}), {}, 'lines'],
      ['createOrder', () => ({}), { lines: [{ product_id: 1, quantity: 0 }] }, 'lines.0.quantity'],
      ['createOrder', () => ({}), { lines: [{ quantity: 1 }] }, 'lines.0.product_id'],
      ['createCart', () => ({}), { lines: 'many' }, 'lines'],
      ['updateCart', () => ({ id: cartId }), {}, 'lines'],
      ['updateVariant', () => ({ id: variantId }), {}, 'variant_attribute_values'],
      ['moveFulfillmentOrder', () => ({ id: foId }), {}, 'new_location_id'],
      ['moveFulfillmentOrder', () => ({ id: foId }), { new_location_id: 'two' }, 'new_location_id'],
      ['createLocation', () => ({}), { name: 'no address' }, 'address'],
      ['updateOrder', () => ({ number: orderNumber }), { tags: [1, 2] }, 'tags.0'],
      ['closeFulfillmentOrder', () => ({ id: foId }), { message: 5 }, 'message'],
      ['fulfillFulfillmentOrder', () => ({ id: foId }), { notify: 'yes' }, 'notify'],
    ];
    for (const [id, params, json, field] of cases) {
      it(`${id}: ${JSON.stringify(json)} names ${field}`, async () => {
        assertInvalid(await callOp(sandbox, OPERATIONS[id], params(), { json }), field);
      });
    }

    it('lists every bad field at once', async () => {
      const result = await callOp(
        sandbox,
        OPERATIONS.createOrder,
        {},
        {
          json: { lines: [{ product_id: 1, quantity: -1 }], currency: 'EURO', shipping_price: 'x' },
        },
      );
      const error = assertError(result, 400, 'validation_error');
      assert.deepEqual(fieldNames(error).sort(), ['currency', 'lines.0.quantity', 'shipping_price']);
      for (const f of error.fields!) assert.ok(f.message.length > 0);
    });
  });

  describe('bodies, media types and routes', () => {
    it('answers 400 invalid_json to malformed JSON', async () => {
      const result = await callOp(
        sandbox,
        OPERATIONS.createCart,
        {},
        {
          body: '{"lines": [',
          headers: { 'content-type': 'application/json' },
        },
      );
      assertError(result, 400, 'invalid_json');
    });

    it('answers 415 to a JSON operation sent another media type', async () => {
      const result = await callOp(
        sandbox,
        OPERATIONS.createCart,
        {},
        {
          body: 'lines=1',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
        },
      );
      assertError(result, 415, 'unsupported_media_type');
    });

    it('answers 415 to the upload without multipart, 400 to unreadable multipart', async () => {
      const json = await callOp(sandbox, OPERATIONS.attachTicketFiles, {}, { json: { files: [] } });
      assertError(json, 415, 'unsupported_media_type');
      const broken = await callOp(
        sandbox,
        OPERATIONS.attachTicketFiles,
        {},
        {
          body: 'this is not multipart',
          headers: { 'content-type': 'multipart/form-data; boundary=xyz' },
        },
      );
      assertError(broken, 400, 'invalid_multipart');
    });

    it('answers 404 to an unknown path and 405 with Allow to a wrong method', async () => {
      assertError(
        await call(sandbox, 'GET', 'orders/', { version: '2024-04-01' }),
        405,
        'method_not_allowed',
      );
      const wrong = await call(sandbox, 'DELETE', 'locations/', { version: '2024-04-01' });
      assertError(wrong, 405, 'method_not_allowed');
      assert.equal(wrong.headers.allow, 'GET, POST');
      assertError(await call(sandbox, 'GET', 'customers/', { version: '2024-04-01' }), 404, 'not_found');
      assertError(await call(sandbox, 'GET', 'products', { version: '2024-04-01' }), 404, 'not_found');
      assertError(await call(sandbox, 'GET', `${sandbox.origin}/products/`), 404, 'not_found');
      const notInteger = await callOp(sandbox, OPERATIONS.getFulfillmentOrder, { id: 'abc' });
      assertError(notInteger, 404, 'not_found');
    });

    it('answers 404 from the model for unknown records', async () => {
      assertError(await callOp(sandbox, OPERATIONS.getFulfillmentOrder, { id: 987654321 }), 404);
      assertError(await callOp(sandbox, OPERATIONS.updateOrder, { number: 'NO-SUCH' }, { json: {} }), 404);
      assertError(
        await callOp(
          sandbox,
          OPERATIONS.updateVariant,
          { id: 987654321 },
          { json: { variant_attribute_values: [] } },
        ),
        404,
      );
    });

    it('answers a 4xx naming the field when a body refers to an unknown record', async () => {
      const move = await callOp(
        sandbox,
        OPERATIONS.moveFulfillmentOrder,
        { id: foId },
        { json: { new_location_id: 987654 } },
      );
      const error = assertError(move, 422);
      assert.deepEqual(fieldNames(error), ['new_location_id']);
    });
  });

  describe('filters via HTTP', () => {
    const list = (op: keyof typeof OPERATIONS, query: Record<string, string | string[]>) =>
      callOp(sandbox, OPERATIONS[op], {}, { query });

    it('answers 400 naming each invalid date parameter', async () => {
      const subscriptionDates = [
        'date_from',
        'date_to',
        'next_renewal_date_from',
        'next_renewal_date_to',
        'cancel_date_from',
        'cancel_date_to',
        'recoveries_date_from',
        'recoveries_date_to',
      ];
      for (const param of subscriptionDates) {
        for (const bad of ['2025-13-01', '2025-02-30', '01/02/2025', 'yesterday']) {
          assertInvalid(await list('listSubscriptions', { [param]: bad }), param);
        }
      }
      for (const param of ['date_created_from', 'date_created_to']) {
        assertInvalid(await list('listAssignedFulfillmentOrders', { [param]: '2025-1-1' }), param);
      }
    });

    it('answers 400 naming each invalid enum or boolean parameter', async () => {
      const cases: [keyof typeof OPERATIONS, string, string][] = [
        ['listSubscriptions', 'status', 'paused'],
        ['listSubscriptions', 'card_type', 'amex'],
        ['listSubscriptions', 'recoveries_source', 'magic'],
        ['listSubscriptions', 'payment_method', 'cash'],
        ['listSubscriptions', 'gateway_status', 'broken'],
        ['listSubscriptions', 'is_test', 'yes'],
        ['listAssignedFulfillmentOrders', 'assignment_status', 'done'],
        ['listMetadata', 'object', 'invoice'],
        ['listMetadata', 'type', 'date'],
        ['listMetadata', 'enable_export', '1'],
        ['listProducts', 'is_public', 'maybe'],
        ['listProducts', 'is_gift_card', 'no'],
      ];
      for (const [op, param, value] of cases) assertInvalid(await list(op, { [param]: value }), param);
    });

    it('passes valid filters to the model and every result satisfies them', async () => {
      const active = await list('listSubscriptions', { status: ['active', 'past_due'] });
      assert.equal(active.status, 200);
      assert.ok(active.body.results.length > 0);
      for (const s of active.body.results) assert.ok(['active', 'past_due'].includes(s.status), s.status);

      const canceled = await list('listSubscriptions', { status: 'canceled', date_from: '2024-06-01' });
      assert.equal(canceled.status, 200);
      for (const s of canceled.body.results) {
        assert.equal(s.status, 'canceled');
        assert.ok(s.date_created >= '2024-06-01', s.date_created);
      }

      const metadata = await list('listMetadata', { object: 'order,product', type: 'text' });
      assert.equal(metadata.status, 200);
      for (const m of metadata.body.results) {
        assert.ok(['order', 'product'].includes(m.object));
        assert.equal(m.type, 'text');
      }

      const hidden = await list('listProducts', { is_public: 'false' });
      assert.equal(hidden.status, 200);
      for (const p of hidden.body.results) assert.equal(p.is_public, false);

      const assigned = await list('listAssignedFulfillmentOrders', { location_id: String(locationId) });
      assert.equal(assigned.status, 200);
      for (const fo of assigned.body.results) assert.equal(fo.assigned_location?.id, locationId);
    });
  });
});
