import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
// undici's own FormData: the global one belongs to Node's bundled undici and does not mix with this client.
import { FormData, request } from 'undici';
import {
  Cart,
  Fulfillment,
  FulfillmentEvent,
  FulfillmentOrder,
  FulfillmentOrderMove,
  Location,
  MetadataDefinition,
  OPERATIONS,
  type OperationId,
  Order2023,
  Order2024,
  Page,
  Product,
  Subscription,
  Ticket,
  Variant,
} from '../../schemas/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { ALL_OPERATIONS, assertError, assertShape, callOp } from './http-helpers.js';

/**
 * Every operation of part 4 over real HTTP: the success answer validated against its response schema,
 * and the rules of part 3. Records come from the seeded store (via its snapshots) or are created here.
 */

interface FoRecord {
  id: number;
  status?: string;
  assigned_location?: { id: number } | null;
}

describe('sandbox operations', () => {
  let sandbox: Sandbox;
  const covered = new Set<OperationId>();
  let productId: number;

  before(async () => {
    sandbox = await startSandbox({ seed: 2, rateLimit: 0 });
    productId = sandbox.store.snapshot('products')[0]!.id;
  });
  after(() => sandbox.close());

  const fos = () => sandbox.store.snapshot('fulfillment_orders') as readonly FoRecord[];
  const foWithStatus = (status: string) => {
    const found = fos().find((fo) => fo.status === status);
    assert.ok(found, `the seeded store has a ${status} fulfillment order`);
    return found;
  };

  async function createOrder2024() {
    const result = await callOp(
      sandbox,
      OPERATIONS.createOrder,
      {},
      {
        json: { lines: [{ product_id: productId, quantity: 2 }], currency: 'USD', tags: ['test'] },
      },
    );
    return assertShape(result, 201, Order2024);
  }

  /** A page answer: the page envelope, then every item against the operation's item schema. */
  async function assertPage(id: OperationId, schema: typeof Product | typeof Subscription | typeof Location) {
    const result = await callOp(sandbox, OPERATIONS[id]);
    const page = assertShape(result, 200, Page);
    assert.ok(page.results.length > 0, `${id} returns records`);
    for (const item of page.results) {
      const parsed = schema.safeParse(item);
      assert.ok(parsed.success, `${id} item: ${parsed.error?.message.slice(0, 500)}`);
    }
    covered.add(id);
    return page;
  }

  it('POST /orders/ (2024-04-01) creates an order in the 2024-04-01 shape', async () => {
    const order = await createOrder2024();
    assert.equal(typeof order.number, 'string');
    assert.equal(order.currency, 'USD');
    assert.deepEqual(order.tags, ['test']);
    assert.equal(order.lines?.[0]?.product_id, productId);
    assert.equal(order.lines?.[0]?.quantity, 2);
    assert.equal(typeof order.total_outstanding, 'string', 'total_outstanding exists only in 2024-04-01');
    covered.add('createOrder');
  });

  it('POST /orders/ (2023-02-10) creates an order in the 2023-02-10 shape', async () => {
    const result = await callOp(
      sandbox,
      OPERATIONS.createOrder2023,
      {},
      { json: { lines: [{ quantity: 1 }] } },
    );
    const order = assertShape(result, 201, Order2023);
    const line = order.lines?.[0] as Record<string, unknown>;
    assert.equal(typeof line.product, 'object', '2023-02-10 lines embed the product');
    assert.equal(typeof line.stockrecord, 'object', '2023-02-10 lines embed the stockrecord');
    assert.equal('product_id' in line, false);
    assert.equal('total_outstanding' in (result.body as object), false);
    covered.add('createOrder2023');
  });

  it('PATCH /orders/{number}/ sets fulfillment_status and status directly', async () => {
    const order = await createOrder2024();
    const result = await callOp(
      sandbox,
      OPERATIONS.updateOrder,
      { number: order.number! },
      {
        json: { fulfillment_status: 'on_hold', status: 'archived', tags: ['vip'] },
      },
    );
    const updated = assertShape(result, 200, Order2024);
    assert.equal(updated.fulfillment_status, 'on_hold');
    assert.equal(updated.status, 'archived');
    assert.deepEqual(updated.tags, ['vip']);
    covered.add('updateOrder');
  });

  it('mark-as-paid answers the 2023-02-10 shape once, then refuses a fully paid order with a 4xx', async () => {
    const order = await createOrder2024();
    assert.notEqual(order.payment_status, 'paid');
    const first = await callOp(
      sandbox,
      OPERATIONS.markOrderPaid,
      { number: order.number! },
      {
        json: { external_payment_method: 'bank_transfer' },
      },
    );
    const paid = assertShape(first, 200, Order2023);
    assert.equal(paid.number, order.number);
    assert.equal(paid.payment_status, 'paid');
    assert.equal('total_outstanding' in (first.body as object), false, 'the 2023-02-10 shape');
    const again = await callOp(sandbox, OPERATIONS.markOrderPaid, { number: order.number! });
    const error = assertError(again, 409, 'order_already_paid');
    assert.match(error.message, /already/);
    covered.add('markOrderPaid');
  });

  it('POST /orders/{number}/fulfillments/ adds a shipment', async () => {
    const order = await createOrder2024();
    const result = await callOp(
      sandbox,
      OPERATIONS.createOrderFulfillment,
      { number: order.number! },
      {
        json: { carrier: 'dhl', tracking_code: 'TRACK-1', lines: [{ id: order.lines![0]!.id, quantity: 1 }] },
      },
    );
    const fulfillment = assertShape(result, 201, Fulfillment);
    assert.equal(fulfillment.order_number, order.number);
    assert.equal(fulfillment.tracking_code, 'TRACK-1');
    assert.equal(fulfillment.line_items?.[0]?.order_line_id, order.lines![0]!.id);
    covered.add('createOrderFulfillment');
  });

  it('GET /orders/{number}/fulfillments/{fulfillmentId}/events/{eventId}/ retrieves an event', async () => {
    // A seeded renewal order with a shipment; seeded events are numbered fulfillment id × 8 + 1, 2, …
    const subscriptions = sandbox.store.snapshot('subscriptions') as readonly Subscription[];
    const subscription = subscriptions.find((s) => s.orders?.length)!;
    const number = subscription.orders![0]!.order_number!;
    const order = assertShape(
      await callOp(sandbox, OPERATIONS.updateOrder, { number }, { json: {} }),
      200,
      Order2024,
    );
    const fulfillment = order.fulfillments?.[0];
    assert.ok(fulfillment, `order ${number} has a fulfillment`);
    const params = { number, fulfillmentId: fulfillment.id, eventId: fulfillment.id * 8 + 1 };
    const event = assertShape(
      await callOp(sandbox, OPERATIONS.getFulfillmentEvent, params),
      200,
      FulfillmentEvent,
    );
    assert.equal(event.fulfillment, fulfillment.id);
    assert.equal(event.order, number);
    assertError(
      await callOp(sandbox, OPERATIONS.getFulfillmentEvent, { ...params, eventId: 'nope' }),
      404,
      'not_found',
    );
    covered.add('getFulfillmentEvent');
  });

  it('POST /carts/ creates a cart and PUT /carts/{id}/ replaces its lines', async () => {
    const created = assertShape(
      await callOp(
        sandbox,
        OPERATIONS.createCart,
        {},
        { json: { lines: [{ product_id: productId, quantity: 1 }] } },
      ),
      201,
      Cart,
    );
    assert.equal(created.lines?.length, 1);
    const other = sandbox.store.snapshot('products')[1]!.id;
    const replaced = assertShape(
      await callOp(
        sandbox,
        OPERATIONS.updateCart,
        { id: created.id },
        {
          json: { lines: [{ product_id: other, quantity: 3 }], metadata: { note: 'gift' } },
        },
      ),
      200,
      Cart,
    );
    assert.equal(replaced.id, created.id);
    assert.deepEqual(
      replaced.lines?.map((l) => [
        (l as { product_id?: number }).product_id,
        (l as { quantity?: number }).quantity,
      ]),
      [[other, 3]],
    );
    covered.add('createCart');
    covered.add('updateCart');
  });

  it('GET /products/ answers a page of products', async () => {
    await assertPage('listProducts', Product);
  });

  it('PUT /products/variants/{id}/ updates a variant', async () => {
    const product = sandbox.store.snapshot('products')[0] as { variants?: { id: number }[] };
    const variantId = product.variants![0]!.id;
    const result = await callOp(
      sandbox,
      OPERATIONS.updateVariant,
      { id: variantId },
      {
        json: { variant_attribute_values: [], unit_cost: '7.25', sku: 'SKU-TEST-1', track_stock: true },
      },
    );
    const variant = assertShape(result, 200, Variant);
    assert.equal(variant.id, variantId);
    assert.equal(variant.unit_cost, '7.25');
    assert.equal(variant.sku, 'SKU-TEST-1');
    covered.add('updateVariant');
  });

  it('GET /subscriptions/ answers a page of subscriptions', async () => {
    await assertPage('listSubscriptions', Subscription);
  });

  it('GET /fulfillment-orders/{id}/ retrieves a fulfillment order', async () => {
    const id = fos()[0]!.id;
    const fo = assertShape(
      await callOp(sandbox, OPERATIONS.getFulfillmentOrder, { id }),
      200,
      FulfillmentOrder,
    );
    assert.equal(fo.id, id);
    covered.add('getFulfillmentOrder');
  });

  it('GET /assigned-fulfillment-orders/ answers a page of fulfillment orders', async () => {
    await assertPage('listAssignedFulfillmentOrders', FulfillmentOrder as unknown as typeof Location);
  });

  it('POST /fulfillment-orders/{id}/move/ returns both the moved and the original', async () => {
    const fo = foWithStatus('open');
    const target = sandbox.store.snapshot('locations').find((l) => l.id !== fo.assigned_location?.id)!;
    const result = await callOp(
      sandbox,
      OPERATIONS.moveFulfillmentOrder,
      { id: fo.id },
      {
        json: { new_location_id: target.id },
      },
    );
    const move = assertShape(result, 200, FulfillmentOrderMove);
    assert.equal(move.moved_fulfillment_order.assigned_location?.id, target.id);
    assert.ok(move.original_fulfillment_order.id, 'the original is returned too');
    assert.ok(
      [move.moved_fulfillment_order.id, move.original_fulfillment_order.id].includes(fo.id),
      'one of the two is the fulfillment order that was moved',
    );
    covered.add('moveFulfillmentOrder');
  });

  it('POST /fulfillment-orders/{id}/close/ moves a processing one to incomplete and refuses others', async () => {
    const processing = foWithStatus('processing');
    const closed = assertShape(
      await callOp(
        sandbox,
        OPERATIONS.closeFulfillmentOrder,
        { id: processing.id },
        { json: { message: 'lost' } },
      ),
      200,
      FulfillmentOrder,
    );
    assert.equal(closed.id, processing.id);
    assert.equal(closed.status, 'incomplete');
    const again = await callOp(sandbox, OPERATIONS.closeFulfillmentOrder, { id: processing.id });
    assert.ok([409, 422].includes(again.status), `closing an incomplete one: ${again.status}`);
    assert.match(assertError(again, again.status).message, /processing/);
    const open = foWithStatus('open');
    assert.ok(
      [409, 422].includes((await callOp(sandbox, OPERATIONS.closeFulfillmentOrder, { id: open.id })).status),
    );
    covered.add('closeFulfillmentOrder');
  });

  it('POST /fulfillment-orders/{id}/fulfillments/ creates a fulfillment', async () => {
    const fo = foWithStatus('in_progress');
    const result = await callOp(
      sandbox,
      OPERATIONS.fulfillFulfillmentOrder,
      { id: fo.id },
      {
        json: { notify: false, tracking_info: [{ number: 'T-9', company: 'ups' }] },
      },
    );
    assertShape(result, 201, Fulfillment);
    covered.add('fulfillFulfillmentOrder');
  });

  it('GET /locations/ and POST /locations/', async () => {
    await assertPage('listLocations', Location);
    const result = await callOp(
      sandbox,
      OPERATIONS.createLocation,
      {},
      {
        json: {
          address: { country: 'NL', line1: 'Damrak 1', line4: 'Amsterdam' },
          name: 'Amsterdam hub',
          accept_return: true,
          callback_url: 'https://example.com/hook',
        },
      },
    );
    const location = assertShape(result, 201, Location);
    assert.equal(location.name, 'Amsterdam hub');
    assert.equal(location.address?.country, 'NL');
    assert.ok(sandbox.store.snapshot('locations').some((l) => l.id === location.id));
    covered.add('createLocation');
  });

  it('GET /metadata/ answers a page of metadata definitions', async () => {
    await assertPage('listMetadata', MetadataDefinition as unknown as typeof Location);
  });

  it('POST /tickets/attachments/ takes multipart/form-data', async () => {
    const form = new FormData();
    form.append('ticket_id', '1');
    form.append('files', new Blob(['hello'], { type: 'text/plain' }), 'hello.txt');
    form.append('files', new Blob([new Uint8Array([1, 2, 3])]), 'data.bin');
    const response = await request(`${sandbox.baseUrl}tickets/attachments/`, {
      method: 'POST',
      headers: { authorization: 'Bearer sandbox-token', 'x-platform-api-version': '2024-04-01' },
      body: form,
    });
    const text = await response.body.text();
    const ticket = assertShape(
      { status: response.statusCode, headers: {}, text, body: JSON.parse(text) },
      201,
      Ticket,
    );
    assert.equal(ticket.id, 1);
    const names = (ticket.comments ?? []).flatMap((c) => (c.attachments ?? []).map((a) => a.file_name));
    assert.ok(names.includes('hello.txt') && names.includes('data.bin'), names.join());
    covered.add('attachTicketFiles');
  });

  it('covers all 20 operations of the table', () => {
    assert.deepEqual([...covered].sort(), ALL_OPERATIONS.map((op) => op.id).sort());
  });
});
