import type { StreamName } from '../contracts.js';
import { fulfillmentOrdersStream } from './streams/fulfillment-orders.js';
import { locationsStream } from './streams/locations.js';
import { metadataDefinitionsStream } from './streams/metadata-definitions.js';
import { productsStream } from './streams/products.js';
import { subscriptionsStream } from './streams/subscriptions.js';
import type { StreamDefinition } from './streams/types.js';

/** The extract stage: the API client, the streams and the driver that runs a stream into `commit`. */

export const STREAMS: Readonly<Record<StreamName, StreamDefinition>> = {
  locations: locationsStream,
  metadata_definitions: metadataDefinitionsStream,
  products: productsStream,
  subscriptions: subscriptionsStream,
  fulfillment_orders: fulfillmentOrdersStream,
};

export {
  ApiClient,
  type ClientOptions,
  type ClientStats,
  DEFAULT_TIMEOUTS,
  type Timeouts,
} from './client.js';
export { type DateWindow, dayOf } from './dates.js';
export type { CallInput, CallResult, ListPage, QueryParams, RequestMeter } from './operations.js';
export { defaultStreamOptions } from './options.js';
export { type DeniedStream, probeStreamAccess, type StreamAccess } from './probe.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
export { type RunStreamArgs, runStream, type StreamProgress, type StreamSummary } from './run-stream.js';
export type { StreamDefinition, StreamName } from './streams/types.js';
export { isLoopbackHost, parseBaseUrl } from './url-safety.js';
