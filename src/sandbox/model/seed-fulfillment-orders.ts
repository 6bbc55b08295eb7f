import type { FulfillmentOrder, Location } from '../../../schemas/index.js';
import {
  type AssignmentStatus,
  type FulfillmentOrderFacts,
  makeFulfillmentOrder,
} from './fulfillment-order-records.js';
import { rngFor, weighted } from './random.js';
import { generateSeededOrder, type OrderWorld } from './seed-orders.js';
import { DAY_MS } from './time.js';

type Combo = readonly [status: string, assignment: AssignmentStatus];

/** Every status paired with the assignment statuses it occurs with; the last FOs cover each pair once. */
const COVERAGE: readonly Combo[] = [
  ['open', 'fulfillment_unrequested'],
  ['open', 'fulfillment_requested'],
  ['scheduled', 'fulfillment_unrequested'],
  ['on_hold', 'fulfillment_requested'],
  ['in_progress', 'fulfillment_accepted'],
  ['in_progress', 'cancellation_requested'],
  ['processing', 'fulfillment_accepted'],
  ['processing', 'cancellation_requested'],
  ['closed', 'fulfillment_accepted'],
  ['incomplete', 'fulfillment_accepted'],
  ['cancelled', 'cancellation_requested'],
];
const drawRecent = weighted<Combo>([
  [['open', 'fulfillment_unrequested'], 25],
  [['open', 'fulfillment_requested'], 20],
  [['scheduled', 'fulfillment_unrequested'], 5],
  [['on_hold', 'fulfillment_requested'], 5],
  [['in_progress', 'fulfillment_accepted'], 20],
  [['in_progress', 'cancellation_requested'], 4],
  [['processing', 'fulfillment_accepted'], 15],
  [['processing', 'cancellation_requested'], 2],
  [['closed', 'fulfillment_accepted'], 4],
]);
const drawOld = weighted<Combo>([
  [['closed', 'fulfillment_accepted'], 86],
  [['incomplete', 'fulfillment_accepted'], 7],
  [['cancelled', 'cancellation_requested'], 5],
  [['processing', 'fulfillment_accepted'], 2],
]);

/**
 * Seeded fulfillment orders, ids 1..count in creation order, one per one-off order spread over the whole
 * history: old ones are mostly closed, recent ones are open or in progress.
 */
export function seedFulfillmentOrders(world: OrderWorld, count: number, locations: readonly Location[]) {
  const rng = rngFor(world.seed, 'fulfillment-orders');
  const firstOneOff = world.book.renewalOrders;
  const out: { record: FulfillmentOrder; facts: FulfillmentOrderFacts }[] = [];
  let nextLineItemId = 1;
  for (let j = 0; j < count; j++) {
    let index =
      firstOneOff +
      Math.min(world.oneOffOrders - 1, Math.floor(((j + rng.next()) / count) * world.oneOffOrders));
    let order = generateSeededOrder(world, index, true)!;
    // Gift-card-only orders ship nothing; take the next order that does.
    for (let tries = 0; tries < 8 && !order.lines.some((l) => l.source.requiresShipping); tries++) {
      index = Math.min(index + 1, firstOneOff + world.oneOffOrders - 1);
      order = generateSeededOrder(world, index, true)!;
    }
    const lines = order.lines.filter((l) => l.source.requiresShipping);
    const shipped = lines.length > 0 ? lines : order.lines;
    const createdMs = order.placedMs + 600_000;
    const [status, assignment] =
      j >= count - COVERAGE.length
        ? COVERAGE[j - (count - COVERAGE.length)]!
        : world.anchorMs - createdMs > 14 * DAY_MS
          ? drawOld(rng)
          : drawRecent(rng);
    world.fulfillmentOrderStatus.set(index, status);
    const stocked = shipped[0]!.source.variant.stockrecords?.[0]?.location_id;
    const location = locations[(stocked ?? rng.int(1, locations.length)) - 1] ?? locations[0]!;
    out.push(
      makeFulfillmentOrder({
        id: j + 1,
        order,
        lines: shipped.map((line) => ({ line, quantity: line.quantity })),
        location,
        createdMs,
        status,
        assignment,
        nextLineItemId: () => nextLineItemId++,
      }),
    );
  }
  return { seeded: out, nextLineItemId };
}
