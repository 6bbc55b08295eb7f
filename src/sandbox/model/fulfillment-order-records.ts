import type { FulfillmentOrder, FulfillmentOrderLineItem, Location } from '../../../schemas/index.js';
import { formatMinor, taxOn } from './money.js';
import { type LineState, lineNet, type OrderState } from './order-state.js';
import { dayNumber, iso } from './time.js';

/** Facts the assigned-fulfillment-orders filters need and the record does not show (see docs). */
export interface FulfillmentOrderFacts {
  assignmentStatus: AssignmentStatus;
  createdMs: number;
  createdDay: number;
  locationId: number;
}

export type AssignmentStatus =
  | 'fulfillment_unrequested'
  | 'fulfillment_requested'
  | 'fulfillment_accepted'
  | 'cancellation_requested';

/** The platform's request_status shown for each hidden assignment status. */
export const REQUEST_STATUS: Record<AssignmentStatus, string> = {
  fulfillment_unrequested: 'unsubmitted',
  fulfillment_requested: 'submitted',
  fulfillment_accepted: 'accepted',
  cancellation_requested: 'cancellation_requested',
};

const ACTIONS: Record<string, string[]> = {
  open: ['create_fulfillment', 'move', 'hold', 'request_fulfillment'],
  scheduled: ['mark_as_open', 'move'],
  on_hold: ['release_hold', 'move'],
  in_progress: ['create_fulfillment', 'request_cancellation'],
  processing: ['create_fulfillment', 'close'],
};
export const supportedActions = (status: string) => [...(ACTIONS[status] ?? [])];

/** Statuses from which a fulfillment order may still be moved, or shipped from. */
export const MOVABLE = new Set(['open', 'scheduled', 'on_hold']);
export const FULFILLABLE = new Set(['open', 'scheduled', 'in_progress', 'processing']);

export function lineItemFor(
  id: number,
  foId: number,
  line: LineState,
  quantity: number,
  currency: string,
): FulfillmentOrderLineItem {
  const share = (minor: number) => Math.round((minor * quantity) / line.quantity);
  const net = share(lineNet(line));
  return {
    currency,
    fulfillable_quantity: String(quantity),
    fulfillment_order_id: foId,
    id,
    order_line_id: line.id,
    price_excl_tax: formatMinor(net, currency),
    price_incl_tax: formatMinor(net + taxOn(net, line.tax.rate), currency),
    product_id: String(line.source.product.id),
    product_image: line.source.image,
    product_title: line.source.product.title,
    quantity,
    sku: line.source.variant.sku ?? '',
    stockrecord_id: line.source.embedStockrecord.id,
    tax_lines: [
      {
        amount: formatMinor(taxOn(net, line.tax.rate), currency),
        currency,
        rate: line.tax.rate,
        source: line.tax.source,
        tax_id: line.tax.id,
        tax_title: line.tax.title,
      },
    ],
    total_discount: formatMinor(share(line.discount), currency),
  };
}

export interface NewFulfillmentOrder {
  id: number;
  order: OrderState;
  lines: { line: LineState; quantity: number }[];
  location: Location;
  createdMs: number;
  status: string;
  assignment: AssignmentStatus;
  nextLineItemId: () => number;
}

/** A fulfillment order record and its facts. */
export function makeFulfillmentOrder(input: NewFulfillmentOrder): {
  record: FulfillmentOrder;
  facts: FulfillmentOrderFacts;
} {
  const { order, status, assignment } = input;
  const closed = status === 'closed' || status === 'incomplete' || status === 'cancelled';
  const record: FulfillmentOrder = {
    assigned_location: input.location,
    fulfillment_holds:
      status === 'on_hold'
        ? [
            {
              created_at: iso(input.createdMs + 3_600_000),
              reason: 'incorrect_address',
              reason_message: 'Customer to confirm the house number',
            },
          ]
        : [],
    id: input.id,
    line_items: input.lines.map(({ line, quantity }) => {
      const item = lineItemFor(input.nextLineItemId(), input.id, line, quantity, order.currency);
      if (status === 'closed' || status === 'cancelled') item.fulfillable_quantity = '0';
      return item;
    }),
    merchant_requests: merchantRequests(assignment),
    order_number: order.number,
    request_status: closed && assignment === 'fulfillment_accepted' ? 'closed' : REQUEST_STATUS[assignment],
    shipping_address: order.shipping,
    shipping_method: { code: order.shippingCode, name: order.shippingMethod },
    status,
    supported_actions: supportedActions(status),
  };
  const facts: FulfillmentOrderFacts = {
    assignmentStatus: assignment,
    createdMs: input.createdMs,
    createdDay: dayNumber(input.createdMs),
    locationId: input.location.id,
  };
  return { record, facts };
}

function merchantRequests(assignment: AssignmentStatus) {
  if (assignment === 'fulfillment_unrequested') return [];
  const request = {
    message: 'Please ship within 2 business days',
    notify: true,
    type: 'fulfillment_request',
  };
  if (assignment !== 'cancellation_requested') return [request];
  return [request, { message: 'Customer asked to cancel', notify: false, type: 'cancellation_request' }];
}
