import type { z } from 'zod';
import {
  Fulfillment,
  Fulfillment2023,
  FulfillmentEvent,
  Order2023,
  Order2024,
} from '../../schemas/orders.js';
import {
  Cart,
  FulfillmentOrder,
  MetadataDefinition,
  Product,
  Subscription,
  Ticket,
} from '../../schemas/resources.js';
import { Location } from '../../schemas/shared.js';
import type { BuiltinEntityKind, EntityKind } from '../contracts.js';
import { API_2023, API_2024 } from './types.js';

/**
 * The resource schema each plan reads: the record at a plan's root, per order shape where the two shapes
 * differ (a 2023-02-10 order embeds its fulfillments as summaries, a standalone fulfillment says its own
 * shape). `shape: null` is one schema for every shape. validate.ts checks every plan path against these.
 */

export interface ResourceShape {
  /** The schema's name in schemas/, for problems. */
  name: string;
  shape: string | null;
  schema: z.ZodType;
}

const any = (name: string, schema: z.ZodType): ResourceShape[] => [{ name, shape: null, schema }];

export const planResources: Record<EntityKind, readonly ResourceShape[]> = {
  order: [
    { name: 'Order2023', shape: API_2023, schema: Order2023 },
    { name: 'Order2024', shape: API_2024, schema: Order2024 },
  ],
  fulfillment: [
    { name: 'Fulfillment2023', shape: API_2023, schema: Fulfillment2023 },
    { name: 'Fulfillment', shape: API_2024, schema: Fulfillment },
  ],
  fulfillment_event: any('FulfillmentEvent', FulfillmentEvent),
  cart: any('Cart', Cart),
  fulfillment_order: any('FulfillmentOrder', FulfillmentOrder),
  ticket: any('Ticket', Ticket),
  product: any('Product', Product),
  subscription: any('Subscription', Subscription),
  location: any('Location', Location),
  metadata_definition: any('MetadataDefinition', MetadataDefinition),
} satisfies Record<BuiltinEntityKind, readonly ResourceShape[]>;
