import type { MetadataDefinition, Ticket } from '../../../schemas/index.js';
import { seedAttributionPool } from './attribution.js';
import { CartDesk } from './carts.js';
import { Catalogue } from './catalogue.js';
import { type Customer, seedCustomers } from './customers.js';
import { FulfillmentOrderDesk } from './fulfillment-orders.js';
import { LocationBook, makeLocation } from './locations.js';
import { seedMetadata } from './metadata.js';
import { OrderDesk } from './orders.js';
import { IdCounter, type StoreSizes, sizesFor } from './scale.js';
import { seedCatalogue } from './seed-catalogue.js';
import { seedFulfillmentOrders } from './seed-fulfillment-orders.js';
import type { OrderWorld } from './seed-orders.js';
import { type SubscriptionDraftContext, seedSubscriptions } from './seed-subscriptions.js';
import { SubscriptionBook } from './subscriptions.js';
import { seedTickets } from './tickets.js';
import { DEFAULT_ANCHOR } from './time.js';
import type { SeedOptions } from './types.js';

/** Every part of a seeded store, for the StoreModel facade and for mutations. */
export interface StoreParts {
  seed: number;
  anchorMs: number;
  now: () => number;
  sizes: StoreSizes;
  catalogue: Catalogue;
  customers: readonly Customer[];
  book: SubscriptionBook;
  locations: LocationBook;
  orders: OrderDesk;
  fulfillmentOrders: FulfillmentOrderDesk;
  metadata: MetadataDefinition[];
  tickets: Ticket[];
  carts: CartDesk;
  subscriptionDraft: SubscriptionDraftContext;
  ids: {
    product: IdCounter;
    variant: IdCounter;
    stockrecord: IdCounter;
    image: IdCounter;
    subscription: IdCounter;
    comment: IdCounter;
    attachment: IdCounter;
  };
  usedSlugs: Set<string>;
}

/** Seeds a whole store. Order matters only where one part draws on another (products before subscriptions). */
export function buildStore(options: SeedOptions): StoreParts {
  const sizes = sizesFor(options.scale);
  const seed = options.seed;
  if (!Number.isSafeInteger(seed)) throw new TypeError(`seed must be a whole number, got ${seed}`);
  const anchorMs = options.anchor?.getTime() ?? DEFAULT_ANCHOR;
  const clock = options.clock ?? (() => new Date());
  const now = () => clock().getTime();

  const ids = {
    product: new IdCounter(sizes.products + 1),
    variant: new IdCounter(1),
    stockrecord: new IdCounter(1),
    image: new IdCounter(1),
    subscription: new IdCounter(sizes.subscriptions + 1),
    comment: new IdCounter(1),
    attachment: new IdCounter(1),
  };
  const seededProducts = seedCatalogue(seed, sizes.products, sizes.locations, anchorMs, ids);
  const catalogue = new Catalogue(seededProducts);
  const usedSlugs = new Set(seededProducts.map((p) => p.product.slug!));
  const customers = seedCustomers(seed, sizes.customers);
  const userIds = new IdCounter(sizes.customers + 1);
  const attributions = seedAttributionPool(
    seed,
    Math.min(2_000, Math.max(50, Math.round(sizes.subscriptions / 10))),
  );
  const seededLocations = Array.from({ length: sizes.locations }, (_, i) => makeLocation(seed, i + 1));
  const locations = new LocationBook([...seededLocations], new IdCounter(sizes.locations + 1));

  const merchandise = seededProducts.filter((p) => !p.hidden.isGiftCard);
  const subscribable = merchandise.filter((p) => p.product.enable_subscription);
  const subscriptionLineIds = new IdCounter(1);
  const subscriptionDraft: SubscriptionDraftContext = {
    catalogue,
    subscribable: (subscribable.length > 0 ? subscribable : merchandise).map((p) => p.product.id),
    customers,
    attributions,
    anchorMs,
    nextLineId: () => subscriptionLineIds.next(),
  };
  const book = new SubscriptionBook(seedSubscriptions(seed, sizes.subscriptions, subscriptionDraft));

  const publicProducts = seededProducts.filter((p) => p.product.is_public);
  const world: OrderWorld = {
    seed,
    anchorMs,
    catalogue,
    book,
    customers,
    attributions,
    seededLocations,
    oneOffOrders: sizes.oneOffOrders,
    purchasable: (publicProducts.length > 0 ? publicProducts : seededProducts).map((p) => p.product.id),
    fulfillmentOrderStatus: new Map(),
  };
  const orders = new OrderDesk(world, locations, () => catalogue.items, userIds, now);
  const fo = seedFulfillmentOrders(world, sizes.fulfillmentOrders, seededLocations);
  const fulfillmentOrders = new FulfillmentOrderDesk(
    fo.seeded,
    new IdCounter(sizes.fulfillmentOrders + 1),
    new IdCounter(fo.nextLineItemId),
    locations,
    orders,
    now,
  );
  orders.onCreated = (order) => {
    fulfillmentOrders.createForOrder(order);
  };
  const tickets = seedTickets(
    {
      seed,
      anchorMs,
      customers,
      productCount: sizes.products,
      firstOneOff: book.renewalOrders,
      oneOffOrders: sizes.oneOffOrders,
    },
    sizes.tickets,
    ids.comment,
    ids.attachment,
  );
  const carts = new CartDesk(
    { seed, anchorMs, catalogue, customers, purchasable: world.purchasable, seededCarts: sizes.carts },
    userIds,
    now,
  );
  return {
    seed,
    anchorMs,
    now,
    sizes,
    catalogue,
    customers,
    book,
    locations,
    orders,
    fulfillmentOrders,
    metadata: seedMetadata(seed, sizes.metadata, anchorMs),
    tickets,
    carts,
    subscriptionDraft,
    ids,
    usedSlugs,
  };
}
