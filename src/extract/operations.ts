import type { FormData } from 'undici';
import type { z } from 'zod';
import type * as S from '../../schemas/index.js';

/**
 * Compile-time shapes of the operations in schemas/operations.ts. The runtime table there says how to send
 * and parse each one; these types say what a caller passes and gets back, so `client.call('createOrder',
 * { body })` is checked against the request schema and returns a typed Order. The list operations' shapes
 * and ids are derived from the table itself (its `list: true` entries and their item schemas), so a list
 * operation added there is callable, pageable and readable by a stream with no edit here.
 */

type Operations = typeof S.OPERATIONS;

interface Shape<Params extends string, Body, Response> {
  params: Params;
  body: Body;
  response: Response;
}

/** A list operation's page: `results` are validated items. */
export interface ListPage<T> {
  next: string | null;
  previous?: string | null | undefined;
  results: T[];
}

type In<T extends z.ZodType> = z.input<T>;

/** The operations whose response is a page of items (`list: true`): the ones a stream can read. */
export type ListOperationId = {
  [K in keyof Operations]: Operations[K]['list'] extends true ? K : never;
}[keyof Operations];

/** A list operation takes no path parameters or body, and returns a page of its validated items. */
type ListShapes = {
  [K in ListOperationId]: Shape<never, undefined, ListPage<z.output<Operations[K]['response']>>>;
};

export interface OperationShapes extends ListShapes {
  createOrder: Shape<never, In<typeof S.OrderCreate2024Request>, S.Order2024>;
  createOrder2023: Shape<never, In<typeof S.OrderCreate2023Request>, S.Order2023>;
  updateOrder: Shape<'number', In<typeof S.OrderPatchRequest>, S.Order2024>;
  markOrderPaid: Shape<'number', In<typeof S.MarkAsPaidRequest>, S.Order2023>;
  createOrderFulfillment: Shape<'number', In<typeof S.OrderFulfillmentCreateRequest>, S.Fulfillment>;
  getFulfillmentEvent: Shape<'number' | 'fulfillmentId' | 'eventId', undefined, S.FulfillmentEvent>;
  createCart: Shape<never, In<typeof S.CartCreateRequest>, S.Cart>;
  updateCart: Shape<'id', In<typeof S.CartUpdateRequest>, S.Cart>;
  updateVariant: Shape<'id', In<typeof S.VariantUpdateRequest>, S.Variant>;
  getFulfillmentOrder: Shape<'id', undefined, S.FulfillmentOrder>;
  moveFulfillmentOrder: Shape<'id', In<typeof S.FulfillmentOrderMoveRequest>, S.FulfillmentOrderMove>;
  closeFulfillmentOrder: Shape<'id', In<typeof S.FulfillmentOrderCloseRequest>, S.FulfillmentOrder>;
  fulfillFulfillmentOrder: Shape<'id', In<typeof S.FulfillmentOrderFulfillRequest>, S.Fulfillment>;
  createLocation: Shape<never, In<typeof S.LocationCreateRequest>, S.Location>;
  attachTicketFiles: Shape<never, FormData, S.Ticket>;
}

/** Query values as callers give them; arrays are sent comma-separated, as the API accepts. */
export type QueryParams = Record<string, string | number | boolean | readonly string[] | null | undefined>;

/** Counts one stream's own requests while several streams share a client. */
export interface RequestMeter {
  requests: number;
  retries: number;
  /** Answers 429 (rate limited) among them. */
  rateLimited?: number;
  /** Answers received, whatever their status: a sign of life a stall check sees before a page commits. */
  responses?: number;
  /**
   * The stream's requests not yet answered, for a stall warning to name what the run waits for; kept only
   * when the caller gives a set.
   */
  waiting?: Set<RequestWait>;
}

/** One request in progress: where it is (queued behind the rate limit, sent, or backing off before a retry). */
export interface RequestWait {
  method: string;
  path: string;
  phase: 'queued' | 'sent' | 'backoff';
}

type ParamsInput<P extends string> = [P] extends [never]
  ? { params?: undefined }
  : { params: Record<P, string | number> };
type BodyInput<B> = [B] extends [undefined] ? { body?: undefined } : { body: B };

export type CallInput<K extends keyof OperationShapes> = ParamsInput<OperationShapes[K]['params']> &
  BodyInput<OperationShapes[K]['body']> & {
    query?: QueryParams;
    signal?: AbortSignal;
    meter?: RequestMeter;
  };

export type CallResult<K extends keyof OperationShapes> = OperationShapes[K]['response'];
