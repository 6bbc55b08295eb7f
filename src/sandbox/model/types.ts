import type {
  AssignedFulfillmentOrdersQuery,
  Cart,
  CartCreateRequest,
  CartUpdateRequest,
  Fulfillment,
  FulfillmentEvent,
  FulfillmentOrder,
  FulfillmentOrderFulfillRequest,
  FulfillmentOrderMove,
  FulfillmentOrderMoveRequest,
  Location,
  LocationCreateRequest,
  MetadataDefinition,
  MetadataQuery,
  Order2023,
  Order2024,
  OrderCreate2023Request,
  OrderCreate2024Request,
  OrderFulfillmentCreateRequest,
  OrderPatchRequest,
  Product,
  ProductsQuery,
  Subscription,
  SubscriptionsQuery,
  Ticket,
  Variant,
  VariantUpdateRequest,
} from '../../../schemas/index.js';

/**
 * The sandbox's domain model: the store's data and the rules of spec part 3, with no HTTP in it.
 * The HTTP layer (src/sandbox/http) validates auth, versions and bodies with the shared schemas,
 * then calls these methods with already-parsed input.
 */

/** A rule or lookup failure the HTTP layer turns into a JSON error (see docs/sandbox.md). */
export class SandboxRuleError extends Error {
  constructor(
    readonly status: 400 | 404 | 409 | 422,
    readonly code: string,
    message: string,
    readonly field?: string,
  ) {
    super(message);
  }
}

/**
 * A filtered view over a list resource, sorted by ascending `id` (the pagination order: new records get
 * higher ids, so a traversal never skips or repeats one). The HTTP layer paginates by binary-searching
 * `items` for the cursor position and applying `matches` as it scans forward.
 */
export interface ListView<T extends { id: number }> {
  items: readonly T[];
  matches: (item: T) => boolean;
}

export type Scale = 'small' | 'medium' | 'large' | number;

export interface SeedOptions {
  seed: number;
  scale: Scale;
  /** The seeded history ends at this instant; defaults to 2026-01-01T00:00:00Z so data never depends on the clock. */
  anchor?: Date;
  /** Time source for records created or changed later (API writes, mutations). Defaults to the real clock. */
  clock?: () => Date;
}

/** Changes applied between syncs through `POST /__sandbox/mutate`, so tests can check convergence. */
export interface MutationPlan {
  createSubscriptions?: number;
  cancelSubscriptions?: number;
  /** Moves past_due/retrying subscriptions back to active with a recovery dated now. */
  recoverSubscriptions?: number;
  /** Moves active subscriptions to past_due or retrying. */
  failSubscriptions?: number;
  /**
   * Changes the quantity of the first line of live (not canceled) subscriptions, and their total with it: one
   * more unit for the first, third … chosen, one less for the second, fourth … (one more where it has one unit).
   */
  requantifySubscriptions?: number;
  createProducts?: number;
  removeProducts?: number;
  updateProducts?: number;
  createFulfillmentOrders?: number;
  moveFulfillmentOrders?: number;
  closeFulfillmentOrders?: number;
  createLocations?: number;
  removeLocations?: number;
  /** Randomness for choosing which records change; the same plan and seed choose the same records. */
  seed?: number;
}

export interface MutationSummary {
  created: Record<string, number[]>;
  changed: Record<string, number[]>;
  removed: Record<string, number[]>;
}

export interface UploadedFile {
  fieldName: string;
  fileName: string;
  contentType: string;
  size: number;
}

export interface StoreModel {
  readonly counts: Record<
    | 'products'
    | 'subscriptions'
    | 'locations'
    | 'metadata'
    | 'fulfillmentOrders'
    | 'orders'
    | 'carts'
    | 'tickets',
    number
  >;

  listProducts(query: ProductsQuery): ListView<Product>;
  listSubscriptions(query: SubscriptionsQuery): ListView<Subscription>;
  listAssignedFulfillmentOrders(query: AssignedFulfillmentOrdersQuery): ListView<FulfillmentOrder>;
  listLocations(): ListView<Location>;
  listMetadata(query: MetadataQuery): ListView<MetadataDefinition>;

  getFulfillmentOrder(id: number): FulfillmentOrder;
  getFulfillmentEvent(orderNumber: string, fulfillmentId: number, eventId: string): FulfillmentEvent;
  /**
   * The ids of a fulfillment's tracking events. The API has no way to list them (a real integration learns
   * them from notifications, which the spec does not show: part 6), so the demo and tests ask the sandbox.
   */
  fulfillmentEventIds(orderNumber: string, fulfillmentId: number): number[];

  createOrder2024(body: OrderCreate2024Request): Order2024;
  createOrder2023(body: OrderCreate2023Request): Order2023;
  updateOrder(orderNumber: string, body: OrderPatchRequest): Order2024;
  markOrderPaid(orderNumber: string, body: { external_payment_method?: string | null }): Order2023;
  createOrderFulfillment(orderNumber: string, body: OrderFulfillmentCreateRequest): Fulfillment;

  createCart(body: CartCreateRequest): Cart;
  updateCart(id: number, body: CartUpdateRequest): Cart;
  updateVariant(id: number, body: VariantUpdateRequest): Variant;

  moveFulfillmentOrder(id: number, body: FulfillmentOrderMoveRequest): FulfillmentOrderMove;
  closeFulfillmentOrder(id: number, body: { message?: string }): FulfillmentOrder;
  fulfillFulfillmentOrder(id: number, body: FulfillmentOrderFulfillRequest): Fulfillment;

  createLocation(body: LocationCreateRequest): Location;
  attachTicketFiles(fields: Record<string, string>, files: UploadedFile[]): Ticket;

  mutate(plan: MutationPlan): MutationSummary;

  /** Every current record of a list resource, unfiltered (the truth tests compare a warehouse with). */
  snapshot(
    resource: 'products' | 'subscriptions' | 'locations' | 'metadata' | 'fulfillment_orders',
  ): readonly { id: number }[];
}
