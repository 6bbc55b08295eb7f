import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  AssignedFulfillmentOrdersQuery,
  Cart,
  Fulfillment,
  FulfillmentOrder,
  Location,
  ProductsQuery,
  Ticket,
  Variant,
} from '../../schemas/index.js';
import { updateVariant as update } from '../../src/sandbox/model/catalogue-writes.js';
import type { StoreParts } from '../../src/sandbox/model/store.js';
import { attachFiles } from '../../src/sandbox/model/tickets.js';
import { SandboxRuleError } from '../../src/sandbox/model/types.js';
import { assertValid, matching, storeParts } from './model-helpers.js';

const rule = (status: number, code: string, field?: string) => (error: unknown) => {
  assert.ok(error instanceof SandboxRuleError, `expected a SandboxRuleError, got ${String(error)}`);
  assert.equal(error.status, status, error.message);
  assert.equal(error.code, code, error.message);
  if (field !== undefined) assert.equal(error.field, field);
  return true;
};

const updateVariant = (parts: StoreParts, id: number, body: Parameters<typeof update>[2]) =>
  update(parts.catalogue, id, body, parts.now());

describe('carts', () => {
  it('create prices lines in the currency; PUT replaces the lines and keeps the id', () => {
    const { carts, sizes } = storeParts(41);
    const cart = carts.create({
      lines: [{ product_id: 1, quantity: 2 }],
      currency: 'GBP',
      user: { email: 'a@example.com' },
      vouchers: ['SAVE5'],
    });
    assertValid(Cart, cart, 'cart');
    assert.equal(cart.id, sizes.carts + 1, 'ids above the seeded carts');
    assert.equal(cart.currency, 'GBP');
    assert.equal(cart.lines![0]!.quantity, 2);
    assert.ok(Number(cart.total_discount) > 0);
    const replaced = carts.update(cart.id, {
      lines: [
        { product_id: 2, quantity: 1 },
        { product_id: 3, quantity: 4 },
      ],
    });
    assert.equal(replaced.id, cart.id);
    assert.deepEqual(
      replaced.lines!.map((l) => [l.product_id, l.quantity]),
      [
        [2, 1],
        [3, 4],
      ],
    );
    assert.ok(
      replaced.lines!.every((l) => !cart.lines!.some((old) => old.id === l.id)),
      'new line ids',
    );
    assert.equal(replaced.voucher_discounts![0]!.voucher!.code, 'SAVE5', 'vouchers kept when not given');
    assert.throws(() => carts.update(999_999, { lines: [] }), rule(404, 'not_found'));
    assert.throws(
      () => carts.update(cart.id, { lines: [{ product_id: 424_242, quantity: 1 }] }),
      rule(400, 'unknown_product', 'lines.0.product_id'),
    );
    assert.throws(() => carts.create({ lines: [], currency: 'XX' }), rule(400, 'invalid', 'currency'));
  });

  it('a seeded cart can be replaced unless it was checked out', () => {
    const { carts, sizes } = storeParts(41);
    let refused = 0;
    for (let id = 1; id <= sizes.carts; id++) {
      try {
        assertValid(Cart, carts.update(id, { lines: [{ product_id: 1, quantity: 1 }] }), `cart ${id}`);
      } catch (error) {
        rule(409, 'cart_converted')(error);
        refused++;
      }
    }
    assert.ok(refused > 0 && refused < sizes.carts);
  });
});

describe('variant update', () => {
  it('replaces the fields given, re-indexes the SKU and bumps date_updated', () => {
    const store = storeParts(43);
    const product = store.catalogue.items.find((p) => p.variants!.length > 1)!;
    const variant = product.variants![0]!;
    const updated = store.catalogue.variant(variant.id);
    assert.equal(updated.variant.id, variant.id);
    const next = updateVariant(store, variant.id, {
      variant_attribute_values: [{ name: 'Size', value: 'XXL' }],
      sku: 'NEW-SKU-1',
      unit_cost: '3.10',
      prices: [
        { currency: 'USD', price: '12.00' },
        { currency: 'KWD', price: '3.125' },
      ],
    });
    assertValid(Variant, next, 'variant');
    assert.equal(next.sku, 'NEW-SKU-1');
    assert.equal(next.title, 'XXL');
    assert.equal(next.prices!.find((p) => p.currency === 'KWD')!.price, '3.125');
    assert.ok(next.date_updated! > variant.date_updated!);
    const bySku = (sku: string) =>
      matching(store.catalogue.list(ProductsQuery.parse({ sku }))).map((p) => p.id);
    assert.deepEqual(bySku('NEW-SKU-1'), [product.id]);
    assert.deepEqual(bySku(variant.sku!), []);
    assert.equal(
      store.catalogue.get(product.id)!.variants![0]!.sku,
      'NEW-SKU-1',
      'the product lists the new variant',
    );
    assert.equal(product.variants![0]!.sku, variant.sku, 'earlier snapshots are not changed');
    const other = product.variants![1]!;
    assert.throws(
      () => updateVariant(store, other.id, { variant_attribute_values: [], sku: 'NEW-SKU-1' }),
      rule(409, 'duplicate_sku', 'sku'),
    );
    assert.throws(
      () => updateVariant(store, 9_999_999, { variant_attribute_values: [] }),
      rule(404, 'not_found'),
    );
    assert.throws(
      () =>
        updateVariant(store, other.id, {
          variant_attribute_values: [],
          prices: [{ currency: 'KWD', price: '1.0001' }],
        }),
      rule(400, 'invalid', 'prices.0.price'),
    );
    assert.throws(
      () =>
        updateVariant(store, other.id, {
          variant_attribute_values: [],
          prices: [{ currency: 'JPY', price: '1' }],
        }),
      rule(400, 'invalid', 'prices.0.currency'),
    );
  });
});

describe('fulfillment orders', () => {
  it('move returns the moved and the original one; the moved one is new and at the new location', () => {
    const { fulfillmentOrders: fos, locations } = storeParts(47);
    const open = fos.items.find((fo) => fo.status === 'open' && fo.line_items!.length > 0)!;
    const from = open.assigned_location!.id;
    const to = locations.items.find((l) => l.id !== from)!.id;
    const maxId = Math.max(...fos.items.map((fo) => fo.id));
    const result = fos.move(open.id, { new_location_id: to });
    assertValid(FulfillmentOrder, result.moved_fulfillment_order, 'moved');
    assertValid(FulfillmentOrder, result.original_fulfillment_order, 'original');
    assert.equal(result.moved_fulfillment_order.id, maxId + 1);
    assert.equal(result.moved_fulfillment_order.assigned_location!.id, to);
    assert.equal(result.original_fulfillment_order.id, open.id);
    assert.equal(result.original_fulfillment_order.status, 'closed', 'everything moved');
    assert.deepEqual(fos.get(open.id), result.original_fulfillment_order);
    const listed = matching(fos.list(AssignedFulfillmentOrdersQuery.parse({ location_id: String(to) }))).map(
      (fo) => fo.id,
    );
    assert.ok(listed.includes(result.moved_fulfillment_order.id));
    assert.throws(() => fos.move(open.id, { new_location_id: to }), rule(409, 'not_movable'));
    const another = fos.items.find((fo) => fo.status === 'open' && fo.id !== open.id)!;
    assert.throws(
      () => fos.move(another.id, { new_location_id: 4242 }),
      rule(422, 'unknown_location', 'new_location_id'),
    );
    assert.throws(
      () => fos.move(another.id, { new_location_id: another.assigned_location!.id }),
      rule(422, 'same_location'),
    );
    assert.throws(() => fos.move(999_999, { new_location_id: to }), rule(404, 'not_found'));
  });

  it('a partial move leaves the remainder on the original', () => {
    const { fulfillmentOrders: fos, locations, orders, catalogue } = storeParts(47);
    const shippable = catalogue.items.find((p) => p.variants![0]!.requires_shipping)!;
    orders.create2024({ lines: [{ product_id: shippable.id, quantity: 3 }] });
    const fo = fos.items.at(-1)!;
    const item = fo.line_items![0]!;
    assert.equal(item.fulfillable_quantity, '3');
    const to = locations.items.find((l) => l.id !== fo.assigned_location!.id)!.id;
    assert.throws(
      () =>
        fos.move(fo.id, {
          new_location_id: to,
          fulfillment_order_line_items: [{ id: item.id, quantity: 99 }],
        }),
      rule(422, 'quantity_exceeds_remaining', 'fulfillment_order_line_items.0.quantity'),
    );
    const { moved_fulfillment_order: moved, original_fulfillment_order: original } = fos.move(fo.id, {
      new_location_id: to,
      fulfillment_order_line_items: [{ id: item.id, quantity: 1 }],
    });
    assert.equal(moved.line_items!.length, 1);
    assert.equal(moved.line_items![0]!.quantity, 1);
    const left = original.line_items!.find((i) => i.id === item.id)!;
    assert.equal(Number(left.fulfillable_quantity), Number(item.fulfillable_quantity) - 1);
    assert.equal(original.status, 'open');
  });

  it('close works only on a processing one and makes it incomplete', () => {
    const { fulfillmentOrders: fos } = storeParts(47);
    const processing = fos.items.find((fo) => fo.status === 'processing')!;
    const closed = fos.close(processing.id, { message: 'Carrier lost it' });
    assertValid(FulfillmentOrder, closed, 'closed');
    assert.equal(closed.status, 'incomplete');
    assert.equal(closed.merchant_requests!.at(-1)!.message, 'Carrier lost it');
    for (const status of ['open', 'closed', 'in_progress']) {
      const fo = fos.items.find((x) => x.status === status)!;
      assert.throws(
        () => fos.close(fo.id, {}),
        (e: unknown) => rule(409, 'not_processing')(e) && /only a processing/.test(String(e)),
      );
    }
    assert.throws(() => fos.close(processing.id, {}), rule(409, 'not_processing'));
  });

  it('fulfill creates a fulfillment on the order and closes what is fully shipped', () => {
    const parts = storeParts(47);
    const { fulfillmentOrders: fos, orders } = parts;
    const fo = fos.items.find(
      (x) => x.status === 'open' && x.line_items!.every((i) => Number(i.fulfillable_quantity) > 0),
    )!;
    const fulfillment = fos.fulfill(fo.id, {
      tracking_info: [{ number: 'TRACK1', company: 'dhl', url: 'https://t.example/1' }],
    });
    assertValid(Fulfillment, fulfillment, 'fulfillment');
    assert.equal(fulfillment.order_number, fo.order_number);
    assert.equal(fulfillment.tracking_code, 'TRACK1');
    assert.equal(fulfillment.location_id, fo.assigned_location!.id);
    assert.equal(fos.get(fo.id).status, 'closed');
    assert.ok(fos.get(fo.id).line_items!.every((i) => i.fulfillable_quantity === '0'));
    const order = orders.find(fo.order_number!)!;
    assert.ok(order.fulfillments.some((f) => f.id === fulfillment.id));
    assert.throws(() => fos.fulfill(fo.id, {}), rule(409, 'not_fulfillable'));
    assert.throws(() => fos.get(424_242), rule(404, 'not_found'));
  });
});

describe('locations and tickets', () => {
  it('location create takes the next id and shows in the list', () => {
    const { locations } = storeParts(53);
    const created = locations.create({
      address: { country: 'NL', line1: 'Dam 1', line4: 'Amsterdam' },
      name: 'Dam',
    });
    assertValid(Location, created, 'location');
    assert.equal(created.id, 6);
    assert.deepEqual(locations.list().items.at(-1), created);
    assert.equal(locations.create({ address: { country: 'US' } }).name, 'Location 7');
    assert.throws(
      () => locations.create({ address: { line1: 'x' } }),
      rule(400, 'invalid', 'address.country'),
    );
  });

  it('ticket attachments go on the ticket named by ticket_id, or the newest one', () => {
    const parts = storeParts(53);
    const attach = (fields: Record<string, string>, names: string[]) =>
      attachFiles(
        parts.tickets,
        fields,
        names.map((fileName) => ({ fieldName: 'files', fileName, contentType: 'image/png', size: 10 })),
        { comment: parts.ids.comment, attachment: parts.ids.attachment },
        parts.now(),
      );
    const before = parts.tickets[2]!;
    const ticket = attach({ ticket_id: String(before.id), body: 'Photos attached' }, ['a.png', 'b c.png']);
    assertValid(Ticket, ticket, 'ticket');
    const comment = ticket.comments!.at(-1)!;
    assert.equal(comment.body, 'Photos attached');
    assert.deepEqual(
      comment.attachments!.map((a) => a.file_name),
      ['a.png', 'b c.png'],
    );
    assert.match(comment.attachments![1]!.file!, /b%20c\.png$/);
    assert.equal(ticket.comments!.length, before.comments!.length + 1);
    assert.ok(ticket.updated_at! > before.updated_at!);
    const newest = attach({}, ['c.pdf']);
    assert.equal(newest.id, parts.tickets.at(-1)!.id);
    assert.equal(newest.id, Math.max(...parts.tickets.map((t) => t.id)));
    assert.throws(() => attach({ ticket_id: '99999' }, ['x']), rule(404, 'not_found'));
    assert.throws(() => attach({ ticket_id: 'one' }, ['x']), rule(400, 'invalid', 'ticket_id'));
    assert.deepEqual(attach({ ticket_id: '1' }, []), parts.tickets[0], 'no files, no change');
  });
});
