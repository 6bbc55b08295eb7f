import * as z from 'zod';
import {
  API_VERSION_2023,
  API_VERSION_2024,
  type ApiVersion,
  Fulfillment,
  FulfillmentEvent,
  Order2023,
  Order2024,
} from './orders.js';
import * as rq from './requests.js';
import {
  Cart,
  FulfillmentOrder,
  FulfillmentOrderMove,
  MetadataDefinition,
  Product,
  Subscription,
  Ticket,
  Variant,
} from './resources.js';
import { Location } from './shared.js';

/**
 * The operations of spec part 4 as data: method, path, version, scopes and schemas.
 * The sandbox routes and authorizes from this table and the client sends and parses by it,
 * so the two sides cannot disagree about an operation.
 */

export const SCOPES = [
  'orders:read',
  'orders:write',
  'carts:write',
  'catalogue:read',
  'catalogue:write',
  'subscriptions:read',
  'fulfillment_orders:read',
  'fulfillment_orders:write',
  'fulfillment_service:read',
  'fulfillment_service:write',
  'locations:read',
  'locations:write',
  'metadata:read',
  'tickets:write',
] as const;
export type Scope = (typeof SCOPES)[number];

export interface OperationSpec {
  id: string;
  method: 'GET' | 'POST' | 'PUT' | 'PATCH';
  /** Path relative to the base URL, with `{param}` placeholders. */
  path: string;
  version: ApiVersion;
  /** A token holding any one of these may call the operation (where the spec lists two, see docs/sandbox.md). */
  scopes: readonly Scope[];
  body: 'none' | 'json' | 'multipart';
  request?: z.ZodType;
  query?: z.ZodType;
  /** For list operations this is the item schema; the page wraps it. */
  response: z.ZodType;
  list: boolean;
}

type OperationInput = Omit<OperationSpec, 'list' | 'body'> & Partial<Pick<OperationSpec, 'list' | 'body'>>;

/**
 * An operation with its literal types kept (its `list` flag, its response schema), so that the client's
 * typed shapes and the ids a stream may read are derived from this table (src/extract/operations.ts)
 * instead of being written out a second time.
 */
export type Operation<Spec extends OperationInput> = Omit<OperationSpec, keyof Spec> &
  Spec & { list: Spec extends { list: true } ? true : false };

const op = <const Spec extends OperationInput>(spec: Spec): Operation<Spec> =>
  ({
    list: false,
    body: spec.method === 'GET' ? 'none' : 'json',
    ...spec,
  }) as Operation<Spec>;

export const OPERATIONS = {
  createOrder: op({
    id: 'createOrder',
    method: 'POST',
    path: '/orders/',
    version: API_VERSION_2024,
    scopes: ['orders:write'],
    request: rq.OrderCreate2024Request,
    response: Order2024,
  }),
  createOrder2023: op({
    id: 'createOrder2023',
    method: 'POST',
    path: '/orders/',
    version: API_VERSION_2023,
    scopes: ['orders:write'],
    request: rq.OrderCreate2023Request,
    response: Order2023,
  }),
  updateOrder: op({
    id: 'updateOrder',
    method: 'PATCH',
    path: '/orders/{number}/',
    version: API_VERSION_2024,
    scopes: ['orders:write'],
    request: rq.OrderPatchRequest,
    response: Order2024,
  }),
  markOrderPaid: op({
    id: 'markOrderPaid',
    method: 'POST',
    path: '/orders/{number}/mark-as-paid/',
    version: API_VERSION_2023,
    scopes: ['orders:write'],
    request: rq.MarkAsPaidRequest,
    response: Order2023,
  }),
  createOrderFulfillment: op({
    id: 'createOrderFulfillment',
    method: 'POST',
    path: '/orders/{number}/fulfillments/',
    version: API_VERSION_2024,
    scopes: ['orders:write'],
    request: rq.OrderFulfillmentCreateRequest,
    response: Fulfillment,
  }),
  getFulfillmentEvent: op({
    id: 'getFulfillmentEvent',
    method: 'GET',
    path: '/orders/{number}/fulfillments/{fulfillmentId}/events/{eventId}/',
    version: API_VERSION_2024,
    scopes: ['orders:read'],
    response: FulfillmentEvent,
  }),
  createCart: op({
    id: 'createCart',
    method: 'POST',
    path: '/carts/',
    version: API_VERSION_2024,
    scopes: ['carts:write'],
    request: rq.CartCreateRequest,
    response: Cart,
  }),
  updateCart: op({
    id: 'updateCart',
    method: 'PUT',
    path: '/carts/{id}/',
    version: API_VERSION_2024,
    scopes: ['carts:write'],
    request: rq.CartUpdateRequest,
    response: Cart,
  }),
  listProducts: op({
    id: 'listProducts',
    method: 'GET',
    path: '/products/',
    version: API_VERSION_2024,
    scopes: ['catalogue:read'],
    query: rq.ProductsQuery,
    response: Product,
    list: true,
  }),
  updateVariant: op({
    id: 'updateVariant',
    method: 'PUT',
    path: '/products/variants/{id}/',
    version: API_VERSION_2024,
    scopes: ['catalogue:write'],
    request: rq.VariantUpdateRequest,
    response: Variant,
  }),
  listSubscriptions: op({
    id: 'listSubscriptions',
    method: 'GET',
    path: '/subscriptions/',
    version: API_VERSION_2023,
    scopes: ['subscriptions:read'],
    query: rq.SubscriptionsQuery,
    response: Subscription,
    list: true,
  }),
  getFulfillmentOrder: op({
    id: 'getFulfillmentOrder',
    method: 'GET',
    path: '/fulfillment-orders/{id}/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:read', 'fulfillment_orders:read'],
    response: FulfillmentOrder,
  }),
  listAssignedFulfillmentOrders: op({
    id: 'listAssignedFulfillmentOrders',
    method: 'GET',
    path: '/assigned-fulfillment-orders/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:read'],
    query: rq.AssignedFulfillmentOrdersQuery,
    response: FulfillmentOrder,
    list: true,
  }),
  moveFulfillmentOrder: op({
    id: 'moveFulfillmentOrder',
    method: 'POST',
    path: '/fulfillment-orders/{id}/move/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_orders:write'],
    request: rq.FulfillmentOrderMoveRequest,
    response: FulfillmentOrderMove,
  }),
  closeFulfillmentOrder: op({
    id: 'closeFulfillmentOrder',
    method: 'POST',
    path: '/fulfillment-orders/{id}/close/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:write', 'fulfillment_orders:write'],
    request: rq.FulfillmentOrderCloseRequest,
    response: FulfillmentOrder,
  }),
  fulfillFulfillmentOrder: op({
    id: 'fulfillFulfillmentOrder',
    method: 'POST',
    path: '/fulfillment-orders/{id}/fulfillments/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:write', 'fulfillment_orders:write'],
    request: rq.FulfillmentOrderFulfillRequest,
    response: Fulfillment,
  }),
  listLocations: op({
    id: 'listLocations',
    method: 'GET',
    path: '/locations/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:read', 'locations:read'],
    query: rq.LocationsQuery,
    response: Location,
    list: true,
  }),
  createLocation: op({
    id: 'createLocation',
    method: 'POST',
    path: '/locations/',
    version: API_VERSION_2024,
    scopes: ['fulfillment_service:write', 'locations:write'],
    request: rq.LocationCreateRequest,
    response: Location,
  }),
  listMetadata: op({
    id: 'listMetadata',
    method: 'GET',
    path: '/metadata/',
    version: API_VERSION_2023,
    scopes: ['metadata:read'],
    query: rq.MetadataQuery,
    response: MetadataDefinition,
    list: true,
  }),
  attachTicketFiles: op({
    id: 'attachTicketFiles',
    method: 'POST',
    path: '/tickets/attachments/',
    version: API_VERSION_2024,
    scopes: ['tickets:write'],
    body: 'multipart',
    response: Ticket,
  }),
} as const satisfies Record<string, OperationSpec>;

export type OperationId = keyof typeof OPERATIONS;

/** A cursor page as every list operation returns it; items are validated one by one by the caller. */
export const Page = z.looseObject({
  next: z.string().nullable(),
  previous: z.string().nullish(),
  results: z.array(z.unknown()),
});
export type Page = z.infer<typeof Page>;

/** Fills `{param}` placeholders, encoding each value. */
export function operationPath(spec: OperationSpec, params: Record<string, string | number> = {}): string {
  return spec.path.replace(/\{(\w+)\}/g, (_, name: string) => {
    const value = params[name];
    if (value === undefined) throw new Error(`missing path parameter ${name} for ${spec.id}`);
    return encodeURIComponent(String(value));
  });
}
