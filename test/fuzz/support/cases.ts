import fc from 'fast-check';
import type { z } from 'zod';
import {
  Cart,
  Fulfillment,
  FulfillmentEvent,
  FulfillmentOrder,
  Location,
  MetadataDefinition,
  Order2023,
  Order2024,
  Product,
  Subscription,
  Ticket,
} from '../../../schemas/index.js';
import type { EntityKind } from '../../../src/contracts.js';
import { API_2023, API_2024 } from '../../../src/model/index.js';
import { applyChanges, type Change, changeArb } from './hostile.js';
import { arbitraryFor } from './schema-arbitrary.js';

/** What the fuzz tests feed the pipeline: a document of some kind, and the hostile changes made to it. */

export interface Kind {
  entity: EntityKind;
  schema: z.ZodType;
  /** The order shape the pipeline reads it with (null: not shown, or not an order). */
  shape: string | null;
}

/** Counterexamples print a kind by name, not as the whole zod schema. */
const kind = (entity: EntityKind, schema: z.ZodType, shape: string | null): Kind =>
  Object.assign(
    { entity, schema, shape },
    { [fc.toStringMethod]: () => `${entity}(${shape ?? 'shape not shown'})` },
  );

export const KINDS: readonly Kind[] = [
  kind('order', Order2024, API_2024),
  kind('order', Order2023, API_2023),
  kind('order', Order2024, null),
  kind('fulfillment', Fulfillment, API_2024),
  kind('fulfillment_event', FulfillmentEvent, API_2024),
  kind('cart', Cart, API_2024),
  kind('fulfillment_order', FulfillmentOrder, API_2024),
  kind('ticket', Ticket, API_2024),
  kind('product', Product, null),
  kind('subscription', Subscription, null),
  kind('location', Location, null),
  kind('metadata_definition', MetadataDefinition, null),
];

export interface Case {
  kind: Kind;
  /** The document as generated from the schema, before the changes. */
  clean: Record<string, unknown>;
  changes: Change[];
  /** The document with the changes made. */
  doc: Record<string, unknown>;
}

/** A document of any kind: with a few hostile changes, or clean in `cleanShare` of the cases. */
export function caseArbitrary(cleanShare: number): fc.Arbitrary<Case> {
  const cleanWeight = Math.round(cleanShare * 100);
  return fc.constantFrom(...KINDS).chain((kind) =>
    fc
      .record({
        clean: arbitraryFor(kind.schema) as fc.Arbitrary<Record<string, unknown>>,
        changes: fc.oneof(
          { arbitrary: fc.constant([] as Change[]), weight: cleanWeight },
          { arbitrary: fc.array(changeArb, { minLength: 1, maxLength: 4 }), weight: 100 - cleanWeight },
        ),
      })
      .map(({ clean, changes }) => ({ kind, clean, changes, doc: applyChanges(clean, changes) })),
  );
}

export const caseArb = caseArbitrary(0.25);

/** How many generated cases a fuzz property runs: a few hundred in `npm test`, 10,000+ in the chaos run. */
export function fuzzRuns(defaultRuns: number): number {
  const fromEnv = Number(process.env.FUZZ_RUNS);
  return Number.isInteger(fromEnv) && fromEnv > 0 ? fromEnv : defaultRuns;
}

/**
 * fast-check settings shared by the fuzz files; FUZZ_SEED replays a reported failure. `msPerRun` bounds
 * the whole property (generation and shrinking, which for a property that writes to DuckDB can otherwise
 * run for many minutes): past `numRuns × msPerRun` (at least two minutes) it stops and counts as failed.
 */
export function fuzzParameters(numRuns: number, msPerRun?: number): fc.Parameters<unknown> {
  const seed = Number(process.env.FUZZ_SEED);
  return {
    numRuns,
    includeErrorInReport: true,
    ...(msPerRun
      ? { interruptAfterTimeLimit: Math.max(120_000, numRuns * msPerRun), markInterruptAsFailure: true }
      : {}),
    ...(Number.isInteger(seed) ? { seed } : {}),
  };
}
