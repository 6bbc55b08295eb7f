import fc from 'fast-check';
import type { EntityKind } from '../../../src/contracts.js';
import { type PlanNode, plans, tableDef } from '../../../src/model/index.js';
import { type Case, caseArbitrary } from './cases.js';
import { applyChanges } from './hostile.js';

/**
 * Batches of ingestible documents for the ingest fuzz: order documents of both shapes, fulfillments,
 * fulfillment events, carts, fulfillment orders and tickets, bare or in an `{api_version, data}`
 * envelope, with hostile changes and now and then a line that is not a document at all.
 */

const INGESTIBLE = new Set([
  'order',
  'fulfillment',
  'fulfillment_event',
  'cart',
  'fulfillment_order',
  'ticket',
]);

/** Fields that make ingest recognise a document of each kind (docs/ingest.md), added before the changes. */
const IDENTIFY: Record<string, Record<string, unknown>> = {
  order: { number: 'N', total_incl_tax: '1.00' },
  fulfillment: { tracking_code: 'T' },
  fulfillment_event: { fulfillment: 1, happened_at: '2024-05-01T10:00:00Z' },
  cart: { checkout_url: 'https://shop.example/checkout' },
  fulfillment_order: { supported_actions: [] },
  ticket: { subject: 'help' },
};

/** Lines ingest must refuse: not JSON, or JSON that is not a document. */
export const JUNK_LINES = [
  'not json {',
  '{"unterminated": ',
  '42',
  '"text"',
  'null',
  '{}',
  '[1, 2]',
  '{"id": 7}',
];

export type Line = { kind: 'junk'; text: string } | { kind: 'document'; case: Case; envelope: boolean };

const documentCase: fc.Arbitrary<Case> = caseArbitrary(0.5)
  .filter((c) => INGESTIBLE.has(c.kind.entity))
  .map((c) => ({ ...c, doc: applyChanges({ ...IDENTIFY[c.kind.entity], ...c.clean }, c.changes) }));

export const lineArb: fc.Arbitrary<Line> = fc.oneof(
  { arbitrary: fc.constantFrom(...JUNK_LINES).map((text) => ({ kind: 'junk' as const, text })), weight: 1 },
  {
    arbitrary: fc.record({
      kind: fc.constant('document' as const),
      case: documentCase,
      envelope: fc.boolean(),
    }),
    weight: 12,
  },
);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Gives every unit in the document (the document itself, nested fulfillments, the user) a key no other
 * document of the batch has, when the key is of the right type: two documents sharing a key would merge by
 * newest-wins, which is its own test, not this one's.
 */
export function uniqueKeys(doc: Record<string, unknown>, entity: EntityKind, next: () => number): void {
  const visit = (node: PlanNode, item: Record<string, unknown>) => {
    if (node.unit) {
      // Unit keys are read from a field of the same name (orders: number; the rest: id).
      const key = tableDef(node.table).unit!.key;
      if (typeof item[key] === 'string') item[key] = `N${next()}`;
      if (Number.isSafeInteger(item[key])) item[key] = next();
    }
    for (const child of node.children ?? []) {
      const value = item[child.field!];
      if (child.single && isObject(value)) visit(child, value);
      if (!child.single && Array.isArray(value)) for (const v of value) if (isObject(v)) visit(child, v);
    }
  };
  visit(plans[entity], doc);
}

/** The text of one NDJSON line. */
export function lineText(line: Line): string {
  if (line.kind === 'junk') return line.text;
  const { kind, doc } = line.case;
  const body = line.envelope && kind.shape ? { api_version: kind.shape, data: doc } : doc;
  return JSON.stringify(body);
}
