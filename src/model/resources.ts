import type { z } from 'zod';
import * as S from '../../schemas/index.js';
import type { EntityKind } from '../contracts.js';
import { STREAMS, type StreamEntityKind } from '../streams.js';
import type { BuiltinEntityKind } from './plans.js';
import { API_2023, API_2024 } from './types.js';

/**
 * The resource schema each plan reads: the record at a plan's root, per order shape where the two shapes
 * differ. `shape: null` is one schema for every shape. validate.ts checks every plan path against these.
 */

export interface ResourceShape {
  /** The schema's name in schemas/, for problems. */
  name: string;
  shape: string | null;
  schema: z.ZodType;
}

const any = (name: string, schema: z.ZodType): ResourceShape[] => [{ name, shape: null, schema }];

/** The name schemas/ exports a schema under, so a problem names the schema a reader can open. */
function schemaName(schema: z.ZodType, fallback: string): string {
  for (const [name, value] of Object.entries(S)) if (value === schema) return name;
  return fallback;
}

/**
 * A stream's records are its list operation's items, so a stream's kind reads the item schema of the
 * operation it lists (schemas/operations.ts, `response`); two streams of one kind read both schemas.
 */
export function streamResources(
  streams: readonly { entity: EntityKind; operation: S.OperationSpec }[],
): Record<EntityKind, readonly ResourceShape[]> {
  const out: Record<EntityKind, ResourceShape[]> = {};
  for (const { entity, operation } of streams) {
    const shapes = out[entity] ?? [];
    if (!shapes.some((shape) => shape.schema === operation.response))
      shapes.push(...any(schemaName(operation.response, `${operation.id} items`), operation.response));
    out[entity] = shapes;
  }
  return out;
}

/**
 * The kinds no stream lists, which arrive as ingested documents, say their schema here: no list operation
 * returns them, and an order and a standalone fulfillment come in two shapes that differ (a 2023-02-10
 * order embeds its fulfillments as summaries, a standalone fulfillment says its own shape). `tsc` asks for
 * an entry when a plan no stream reads is added, and refuses one for a kind a stream reads or that has no
 * plan.
 */
const documentResources = {
  order: [
    { name: 'Order2023', shape: API_2023, schema: S.Order2023 },
    { name: 'Order2024', shape: API_2024, schema: S.Order2024 },
  ],
  fulfillment: [
    { name: 'Fulfillment2023', shape: API_2023, schema: S.Fulfillment2023 },
    { name: 'Fulfillment', shape: API_2024, schema: S.Fulfillment },
  ],
  fulfillment_event: any('FulfillmentEvent', S.FulfillmentEvent),
  cart: any('Cart', S.Cart),
  ticket: any('Ticket', S.Ticket),
} satisfies Record<Exclude<BuiltinEntityKind, StreamEntityKind>, readonly ResourceShape[]>;

export const planResources: Record<EntityKind, readonly ResourceShape[]> = {
  ...streamResources(
    STREAMS.map(({ entity, operation }) => ({ entity, operation: S.OPERATIONS[operation] })),
  ),
  ...documentResources,
};
