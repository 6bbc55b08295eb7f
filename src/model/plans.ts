import type { EntityKind } from '../contracts.js';
import type { StreamEntityKind } from '../streams.js';
import type { Source } from './types.js';

/**
 * Which tables an entity's record fills, as a tree that follows the record's arrays. A node marked `unit`
 * is merged on its own key (newest wins) with the tables it owns; the others are owned rows replaced with
 * their unit. Column sources come from the table registry; a node only overrides what differs in context.
 */

export interface PlanNode {
  table: string;
  /** Array field (or, with `single`, object field) of the parent item holding this node's items. */
  field?: string;
  single?: boolean;
  unit?: boolean;
  /** A unit whose key is missing is skipped instead of rejecting the document (users without an id). */
  optionalKey?: boolean;
  sources?: Record<string, Source>;
  children?: PlanNode[];
}

const taxLines = (table: string): PlanNode => ({ table, field: 'tax_lines' });

const fulfillmentChildren: PlanNode[] = [
  {
    table: 'fulfillment_line_items',
    field: 'line_items',
    children: [taxLines('fulfillment_line_item_tax_lines')],
  },
];

const customer = (seenAt: string, seenIn: string): PlanNode => ({
  table: 'customers',
  field: 'user',
  single: true,
  unit: true,
  optionalKey: true,
  // The column of the other container kind is left NULL (`{}`: no source in any shape); its registry default,
  // the column's own name, would read a field of the user object that no user has.
  sources:
    seenIn === 'order'
      ? { seen_at: seenAt, seen_in: '=order', seen_in_order: '$$.number', seen_in_id: {} }
      : { seen_at: seenAt, seen_in: `=${seenIn}`, seen_in_id: '$$.id', seen_in_order: {} },
});

const order: PlanNode = {
  table: 'orders',
  unit: true,
  children: [
    { table: 'order_lines', field: 'lines', children: [taxLines('order_line_tax_lines')] },
    { table: 'order_tax_lines', field: 'tax_lines' },
    { table: 'order_shipping_tax_lines', field: 'shipping_tax_lines' },
    { table: 'order_discounts', field: 'voucher_discounts' },
    { table: 'order_discounts', field: 'offer_discounts', sources: { kind: '=offer' } },
    { table: 'order_transactions', field: 'transactions' },
    {
      table: 'order_refunds',
      field: 'refunds',
      children: [
        { table: 'order_refund_lines', field: 'refund_line_items' },
        { table: 'order_refund_adjustments', field: 'adjustments' },
        { table: 'order_refund_transactions', field: 'transactions' },
      ],
    },
    { table: 'order_subscriptions', field: 'subscriptions' },
    { table: 'fulfillments', field: 'fulfillments', unit: true, children: fulfillmentChildren },
    customer('$$.updated_at|$$.date_placed|$$.created_at', 'order'),
  ],
};

const fulfillmentOrder: PlanNode = {
  table: 'fulfillment_orders',
  unit: true,
  children: [
    {
      table: 'fulfillment_order_line_items',
      field: 'line_items',
      children: [taxLines('fulfillment_order_line_item_tax_lines')],
    },
    { table: 'fulfillment_order_holds', field: 'fulfillment_holds' },
    { table: 'fulfillment_order_merchant_requests', field: 'merchant_requests' },
  ],
};

const variantsIn = (field: string): PlanNode => ({
  table: 'variants',
  field,
  children: [
    { table: 'variant_prices', field: 'prices' },
    { table: 'variant_stockrecords', field: 'stockrecords' },
    { table: 'variant_attribute_values', field: 'variant_attribute_values' },
  ],
});

const product: PlanNode = {
  table: 'products',
  unit: true,
  children: [
    { table: 'product_categories', field: 'categories' },
    { table: 'product_images', field: 'images' },
    { table: 'product_variant_attributes', field: 'variant_attributes' },
    variantsIn('variants'),
    // A 2023-02-10 product lists the same variants under `children`.
    variantsIn('children'),
  ],
};

/**
 * One plan per entity kind: the root node is the record itself. Every kind a built-in stream reads must
 * have one (`tsc` names a STREAMS entity without a plan); the kinds of ingested documents are the others.
 */
const builtinPlans = {
  order,
  fulfillment: { table: 'fulfillments', unit: true, children: fulfillmentChildren },
  fulfillment_event: { table: 'fulfillment_events', unit: true },
  cart: {
    table: 'carts',
    unit: true,
    children: [
      { table: 'cart_lines', field: 'lines' },
      { table: 'cart_discounts', field: 'voucher_discounts' },
      customer('$$.created_at|$$.date_created', 'cart'),
    ],
  },
  fulfillment_order: fulfillmentOrder,
  ticket: {
    table: 'tickets',
    unit: true,
    children: [
      {
        table: 'ticket_comments',
        field: 'comments',
        children: [{ table: 'ticket_attachments', field: 'attachments' }],
      },
    ],
  },
  product,
  subscription: {
    table: 'subscriptions',
    unit: true,
    children: [
      { table: 'subscription_lines', field: 'lines' },
      { table: 'subscription_orders', field: 'orders' },
      customer('$$.date_created', 'subscription'),
    ],
  },
  location: { table: 'locations', unit: true },
  metadata_definition: {
    table: 'metadata_definitions',
    unit: true,
    children: [{ table: 'metadata_definition_validations', field: 'validations' }],
  },
} satisfies { [Kind in StreamEntityKind]: PlanNode } & Record<string, PlanNode>;

/** The kinds src/ knows: a plan here is all it takes to make one. */
export type BuiltinEntityKind = keyof typeof builtinPlans;

/** The built-in plans, and those added by streams declared outside src/ (addPlan). */
export const plans: Record<EntityKind, PlanNode> = builtinPlans;

/**
 * Adds the plan of an entity brought by a stream declared outside src/ (docs/architecture.md, "Adding a
 * stream"); its tables are added to the registry first (addTables).
 */
export function addPlan(entity: string, plan: PlanNode): void {
  if (entity in plans) throw new Error(`the entity ${entity} already has a plan`);
  plans[entity] = plan;
}

/** Tables an entity's records can write, in plan order without duplicates. */
export function planTables(entity: EntityKind): string[] {
  const out: string[] = [];
  const walk = (node: PlanNode) => {
    if (!out.includes(node.table)) out.push(node.table);
    for (const child of node.children ?? []) walk(child);
  };
  walk(plans[entity]);
  return out;
}
