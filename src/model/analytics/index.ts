import { dimDate } from './calendar.js';
import { customersSummary } from './customers.js';
import { fulfillmentBacklog, inventoryLevels, orderCoverage } from './operations.js';
import { dailySales, fctOrderLines, fctOrders } from './orders.js';
import { subscriptionEvents } from './subscription-events.js';
import {
  subscriptionChurnMonthly,
  subscriptionCohorts,
  subscriptionMonths,
  subscriptionMrrMonthly,
} from './subscriptions.js';
import type { AnalyticsModel } from './types.js';

/**
 * The analyst models (issue 27), as DuckDB views: always current, nothing to
 * refresh after a run. In creation order: a view may read the ones before it. docs/analytics.md shows them in
 * use; docs/warehouse.md lists them with their columns.
 */
export const analyticsModels: readonly AnalyticsModel[] = [
  fctOrders,
  fctOrderLines,
  dailySales,
  customersSummary,
  inventoryLevels,
  fulfillmentBacklog,
  orderCoverage,
  subscriptionEvents,
  dimDate,
  subscriptionMonths,
  subscriptionMrrMonthly,
  subscriptionChurnMonthly,
  subscriptionCohorts,
];

export { FINISHED_FULFILLMENT_STATUSES } from './operations.js';
export type { AnalyticsModel, ModelColumn } from './types.js';
