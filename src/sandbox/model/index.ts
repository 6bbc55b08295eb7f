import { updateVariant } from './catalogue-writes.js';
import { listMetadata } from './metadata.js';
import { applyMutations } from './mutate.js';
import { buildStore } from './store.js';
import { attachFiles } from './tickets.js';
import type { SeedOptions, StoreModel } from './types.js';

export { type StoreSizes, sizesFor } from './scale.js';
export * from './types.js';

/**
 * A seeded, deterministic store behind the sandbox's HTTP layer. The same seed and scale give the same
 * data; records created or changed later are dated by `options.clock`. See docs/sandbox-data.md.
 */
export function createStore(options: SeedOptions): StoreModel {
  const parts = buildStore(options);
  const { catalogue, book, locations, orders, fulfillmentOrders, carts, now } = parts;
  return {
    get counts() {
      return {
        products: catalogue.items.length,
        subscriptions: book.items.length,
        locations: locations.items.length,
        metadata: parts.metadata.length,
        fulfillmentOrders: fulfillmentOrders.items.length,
        orders: orders.count,
        carts: carts.count,
        tickets: parts.tickets.length,
      };
    },
    listProducts: (query) => catalogue.list(query),
    listSubscriptions: (query) => book.list(query),
    listAssignedFulfillmentOrders: (query) => fulfillmentOrders.list(query),
    listLocations: () => locations.list(),
    listMetadata: (query) => listMetadata(parts.metadata, query),
    getFulfillmentOrder: (id) => fulfillmentOrders.get(id),
    getFulfillmentEvent: (number, fulfillmentId, eventId) => orders.event(number, fulfillmentId, eventId),
    fulfillmentEventIds: (number, fulfillmentId) => orders.eventIds(number, fulfillmentId),
    createOrder2024: (body) => orders.create2024(body),
    createOrder2023: (body) => orders.create2023(body),
    updateOrder: (number, body) => orders.update(number, body),
    markOrderPaid: (number, body) => orders.markPaid(number, body),
    createOrderFulfillment: (number, body) => orders.createFulfillment(number, body),
    createCart: (body) => carts.create(body),
    updateCart: (id, body) => carts.update(id, body),
    updateVariant: (id, body) => updateVariant(catalogue, id, body, now()),
    moveFulfillmentOrder: (id, body) => fulfillmentOrders.move(id, body),
    closeFulfillmentOrder: (id, body) => fulfillmentOrders.close(id, body),
    fulfillFulfillmentOrder: (id, body) => fulfillmentOrders.fulfill(id, body),
    createLocation: (body) => locations.create(body),
    attachTicketFiles: (fields, files) =>
      attachFiles(
        parts.tickets,
        fields,
        files,
        { comment: parts.ids.comment, attachment: parts.ids.attachment },
        now(),
      ),
    mutate: (plan) => applyMutations(parts, plan),
    snapshot: (resource) => {
      switch (resource) {
        case 'products':
          return [...catalogue.items];
        case 'subscriptions':
          return [...book.items];
        case 'locations':
          return [...locations.items];
        case 'metadata':
          return [...parts.metadata];
        case 'fulfillment_orders':
          return [...fulfillmentOrders.items];
      }
    },
  };
}
