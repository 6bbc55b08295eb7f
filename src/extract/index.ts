import { OPERATIONS } from '../../schemas/index.js';
import { STREAMS as DECLARED, type StreamDeclaration, type StreamName } from '../streams.js';
import { fulfillmentOrdersStream } from './streams/fulfillment-orders.js';
import { fullScanStream } from './streams/full-scan.js';
import { subscriptionsStream } from './streams/subscriptions.js';
import type { DeclaredStream, StreamDefinition } from './streams/types.js';

/** The extract stage: the API client, the streams and the driver that runs a stream into `commit`. */

type WindowedStreamName = Extract<(typeof DECLARED)[number], { strategy: 'date_windows' }>['name'];

/** The reader of each date-windowed stream: one missing here is a compile error. */
const WINDOWED_READERS: Record<WindowedStreamName, (declared: DeclaredStream) => StreamDefinition> = {
  subscriptions: subscriptionsStream,
  fulfillment_orders: fulfillmentOrdersStream,
};

function runnable(declaration: StreamDeclaration): StreamDefinition {
  const declared: DeclaredStream = { ...declaration, operation: OPERATIONS[declaration.operation] };
  return declaration.strategy === 'full_scan'
    ? fullScanStream(declared)
    : WINDOWED_READERS[declaration.name as WindowedStreamName](declared);
}

/** The streams of src/streams.ts, runnable, by name, in the order a sync runs them. */
export const STREAMS: Readonly<Record<StreamName, StreamDefinition>> = Object.fromEntries(
  DECLARED.map((declaration) => [declaration.name, runnable(declaration)]),
) as Record<StreamName, StreamDefinition>;

export {
  ApiClient,
  type ClientOptions,
  type ClientStats,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_TIMEOUTS,
  type Timeouts,
} from './client.js';
export { type DateWindow, dayOf } from './dates.js';
export type {
  CallInput,
  CallResult,
  ListPage,
  QueryParams,
  RequestMeter,
  RequestWait,
} from './operations.js';
export { type DeniedStream, firstRequestFailure, probeStreamAccess, type StreamAccess } from './probe.js';
export { DEFAULT_RETRY_POLICY, type RetryPolicy } from './retry.js';
export {
  type RunStreamArgs,
  runStream,
  type StreamActivity,
  type StreamProgress,
  type StreamSummary,
} from './run-stream.js';
export { fullScanStream } from './streams/full-scan.js';
export type { DeclaredStream, StreamDefinition } from './streams/types.js';
export { isLoopbackHost, parseBaseUrl } from './url-safety.js';
