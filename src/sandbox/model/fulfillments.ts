import type { FulfillmentEvent, Location } from '../../../schemas/index.js';
import type { FulfillmentState, IdSource, LineState, OrderState } from './order-state.js';
import type { Rng } from './random.js';
import { DAY_MS, iso } from './time.js';
import { REGIONS, STORE_ORIGIN } from './vocab.js';

const TRACKING_URLS: Record<string, string> = {
  ups: 'https://www.ups.com/track?tracknum=',
  usps: 'https://tools.usps.com/go/TrackConfirmAction?tLabels=',
  fedex: 'https://www.fedex.com/fedextrack/?trknbr=',
  dhl: 'https://www.dhl.com/track?tracking-id=',
  royal_mail: 'https://www.royalmail.com/track-your-item#/tracking-results/',
};
export const trackingLinkFor = (carrier: string, code: string) =>
  `${TRACKING_URLS[carrier] ?? `${STORE_ORIGIN}/track/`}${code}`;

/** Carrier a seeded shipment to a country uses. */
export function carrierFor(country: string | null | undefined, rng: Rng): string {
  if (country === 'US') return rng.pick(['ups', 'usps', 'fedex']);
  if (country === 'GB') return rng.pick(['royal_mail', 'dhl']);
  return rng.pick(['dhl', 'dhl_ecommerce', 'other']);
}

const coordinates = (city: string | null | undefined) => {
  const region = REGIONS.find((r) => r.city === city);
  return region ? { latitude: region.latitude, longitude: region.longitude } : { latitude: 0, longitude: 0 };
};

const EVENT_MESSAGES: Record<string, string> = {
  label_printed: 'Shipping label created',
  confirmed: 'Shipment information received by carrier',
  in_transit: 'In transit to destination',
  out_for_delivery: 'Out for delivery',
  delivered: 'Delivered',
};

function event(
  id: number,
  f: { id: number },
  order: OrderState,
  status: string,
  atMs: number,
  etaMs: number,
  at: 'origin' | 'destination',
  origin: Location,
): FulfillmentEvent {
  const place =
    at === 'origin'
      ? { ...origin.address, city: origin.address?.line4 }
      : { ...order.shipping, city: order.shipping?.line4 };
  return {
    city: place.city ?? '',
    country: place.country ?? '',
    created_at: iso(atMs + 60_000),
    estimated_delivery_at: iso(etaMs),
    fulfillment: f.id,
    happened_at: iso(atMs),
    id,
    ...coordinates(place.city),
    line1: place.line1 ?? '',
    line2: place.line2 ?? '',
    message: EVENT_MESSAGES[status] ?? status,
    order: order.number,
    postcode: place.postcode ?? '',
    state: place.state ?? '',
    status,
    updated_at: iso(atMs + 60_000),
  };
}

export interface NewFulfillment {
  order: OrderState;
  ids: IdSource;
  items: { line: LineState; quantity: number }[];
  location: Location;
  createdMs: number;
  carrier: string;
  trackingCode: string;
  trackingLink?: string;
  /** For seeded shipments: how far the parcel got by this instant. A new one only gets its first event. */
  progressUntilMs?: number;
}

/** Creates a shipment for the given line quantities, records it on the order and marks the lines. */
export function addFulfillment(input: NewFulfillment): FulfillmentState {
  const { order, ids, location } = input;
  const f: FulfillmentState = {
    id: ids.fulfillment(),
    createdMs: input.createdMs,
    status: 'success',
    deliveryStatus: null,
    locationId: location.id,
    originAddress: location.address ?? {},
    carrier: input.carrier,
    trackingCode: input.trackingCode,
    trackingLink: input.trackingLink ?? trackingLinkFor(input.carrier, input.trackingCode),
    shippingMethod: order.shippingMethod,
    items: input.items.map(({ line, quantity }) => ({ id: ids.fulfillmentLine(), line, quantity })),
    events: [],
  };
  const eta = input.createdMs + 4 * DAY_MS;
  const steps: [string, number, 'origin' | 'destination'][] = [
    ['label_printed', 0, 'origin'],
    ['in_transit', DAY_MS, 'origin'],
    ['out_for_delivery', 3 * DAY_MS, 'destination'],
    ['delivered', 3 * DAY_MS + 5 * 3_600_000, 'destination'],
  ];
  const until = input.progressUntilMs ?? input.createdMs;
  for (const [status, offset, at] of steps) {
    if (f.events.length > 0 && input.createdMs + offset > until) break;
    f.events.push(event(ids.event(), f, order, status, input.createdMs + offset, eta, at, location));
    f.deliveryStatus = status;
  }
  // A fulfillment order may ship what the order already counts as shipped (its own record is the
  // authority for what it ships), so the order's count never exceeds what can be shipped.
  for (const item of f.items) {
    item.line.fulfilled = Math.min(
      item.line.quantity - item.line.refunded,
      item.line.fulfilled + item.quantity,
    );
  }
  order.fulfillments.push(f);
  return f;
}

/** The order's fulfillment_status after its lines' fulfilled quantities changed. */
export function fulfillmentStatusOf(order: OrderState): string {
  const shippable = order.lines.filter((l) => l.source.requiresShipping && l.quantity > l.refunded);
  if (shippable.length === 0) return 'not_required';
  const open = shippable.some((l) => l.fulfilled < l.quantity - l.refunded);
  const any = shippable.some((l) => l.fulfilled > 0);
  return !open ? 'fulfilled' : any ? 'processing' : 'unfulfilled';
}
