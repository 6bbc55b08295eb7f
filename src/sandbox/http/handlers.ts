import type {
  AssignedFulfillmentOrdersQuery,
  CartCreateRequest,
  CartUpdateRequest,
  FulfillmentOrderFulfillRequest,
  FulfillmentOrderMoveRequest,
  LocationCreateRequest,
  MetadataQuery,
  OperationId,
  OrderCreate2023Request,
  OrderCreate2024Request,
  OrderFulfillmentCreateRequest,
  OrderPatchRequest,
  ProductsQuery,
  SubscriptionsQuery,
  VariantUpdateRequest,
} from '../../../schemas/index.js';
import type { ListView, StoreModel } from '../model/types.js';
import type { RequestInput } from './input.js';
import { type PageRequest, paginate } from './pagination.js';

/**
 * One function per operation of the table in schemas/operations.ts, calling the model with input the
 * server has already authorized and validated against that operation's schemas (hence the casts).
 */

export interface HandlerContext extends RequestInput {
  model: StoreModel;
  params: Record<string, string | number>;
  page: Omit<PageRequest, 'cursor'>;
}

export interface HandlerResult {
  status: number;
  body: unknown;
}

type Handler = (ctx: HandlerContext) => HandlerResult;

const ok = (body: unknown): HandlerResult => ({ status: 200, body });
// Success codes are not in the spec (4.9); creating something answers 201, as REST APIs commonly do.
const created = (body: unknown): HandlerResult => ({ status: 201, body });

function page<T extends { id: number }>(ctx: HandlerContext, view: ListView<T>): HandlerResult {
  const cursor = ctx.query['cursor'] as string | undefined;
  return ok(paginate(view, { ...ctx.page, cursor }));
}

const num = (ctx: HandlerContext, name: string) => ctx.params[name] as number;
const str = (ctx: HandlerContext, name: string) => ctx.params[name] as string;

export const HANDLERS: Record<OperationId, Handler> = {
  createOrder: (ctx) => created(ctx.model.createOrder2024(ctx.body as OrderCreate2024Request)),
  createOrder2023: (ctx) => created(ctx.model.createOrder2023(ctx.body as OrderCreate2023Request)),
  updateOrder: (ctx) => ok(ctx.model.updateOrder(str(ctx, 'number'), ctx.body as OrderPatchRequest)),
  markOrderPaid: (ctx) =>
    ok(ctx.model.markOrderPaid(str(ctx, 'number'), ctx.body as { external_payment_method?: string | null })),
  createOrderFulfillment: (ctx) =>
    created(ctx.model.createOrderFulfillment(str(ctx, 'number'), ctx.body as OrderFulfillmentCreateRequest)),
  getFulfillmentEvent: (ctx) =>
    ok(ctx.model.getFulfillmentEvent(str(ctx, 'number'), num(ctx, 'fulfillmentId'), str(ctx, 'eventId'))),
  createCart: (ctx) => created(ctx.model.createCart(ctx.body as CartCreateRequest)),
  updateCart: (ctx) => ok(ctx.model.updateCart(num(ctx, 'id'), ctx.body as CartUpdateRequest)),
  listProducts: (ctx) => page(ctx, ctx.model.listProducts(ctx.query as ProductsQuery)),
  updateVariant: (ctx) => ok(ctx.model.updateVariant(num(ctx, 'id'), ctx.body as VariantUpdateRequest)),
  listSubscriptions: (ctx) => page(ctx, ctx.model.listSubscriptions(ctx.query as SubscriptionsQuery)),
  getFulfillmentOrder: (ctx) => ok(ctx.model.getFulfillmentOrder(num(ctx, 'id'))),
  listAssignedFulfillmentOrders: (ctx) =>
    page(ctx, ctx.model.listAssignedFulfillmentOrders(ctx.query as AssignedFulfillmentOrdersQuery)),
  moveFulfillmentOrder: (ctx) =>
    ok(ctx.model.moveFulfillmentOrder(num(ctx, 'id'), ctx.body as FulfillmentOrderMoveRequest)),
  closeFulfillmentOrder: (ctx) =>
    ok(ctx.model.closeFulfillmentOrder(num(ctx, 'id'), ctx.body as { message?: string })),
  fulfillFulfillmentOrder: (ctx) =>
    created(ctx.model.fulfillFulfillmentOrder(num(ctx, 'id'), ctx.body as FulfillmentOrderFulfillRequest)),
  listLocations: (ctx) => page(ctx, ctx.model.listLocations()),
  createLocation: (ctx) => created(ctx.model.createLocation(ctx.body as LocationCreateRequest)),
  listMetadata: (ctx) => page(ctx, ctx.model.listMetadata(ctx.query as MetadataQuery)),
  attachTicketFiles: (ctx) =>
    created(ctx.model.attachTicketFiles(ctx.body as Record<string, string>, ctx.files)),
};
