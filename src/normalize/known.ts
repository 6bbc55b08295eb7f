import { API_2023, API_2024, type PlanNode, sourceFor, tableDef } from '../model/index.js';
import { AFTER_ROW_TOKENS } from './compile.js';

/**
 * What the model maps of the items of each plan node: the fields some column reads (from the node's own
 * columns, and from its descendants' `^.`, `$.` and `$$.` sources) and the fields its child nodes take.
 * Everything else an item carries is unknown to the model and goes to the row's `_extra` (normalizer.ts),
 * and the fast path (fast.ts) gives a document with any of it up. Pure functions of the plan and the shape,
 * computed once per (plan, shape).
 */

/**
 * A level of an item: each known field is `leaf` (a column reads it whole, whatever it holds), `child` (a
 * child node's table takes it) or, when columns read fields inside it (`billing_address.line1`), the tree of
 * that object.
 */
export type KnownTree = Map<string, KnownEntry>;
export type KnownEntry = 'leaf' | 'child' | KnownTree;

interface PlanKnowledge {
  trees: Map<PlanNode, KnownTree>;
  tracked: Map<PlanNode, readonly TrackedField[]>;
}

const cache = new WeakMap<PlanNode, Map<string | null, PlanKnowledge>>();

/** The known tree of `node`'s items, in the plan whose root is `root`, for a shape. */
export function knownTree(root: PlanNode, node: PlanNode, shape: string | null): KnownTree {
  return knowledge(root, shape).trees.get(node) ?? new Map();
}

/**
 * A field of a unit item whose absence `_absent_fields` records, by its name: with the other fields that stand
 * for it (the alternatives of one column, `created_at|date_created`; sibling child fields that fill the same
 * table alike, a product's `variants|children`), so it is absent only when all of them are.
 */
export interface TrackedField {
  name: string;
  fields: readonly string[];
}

/**
 * The fields of a unit node's items whose absence is recorded in `_absent_fields`, in registry order: the
 * first fields of its columns' item-relative alternatives, then its child nodes' fields. Empty for a node
 * that is not a unit.
 */
export function trackedFields(root: PlanNode, node: PlanNode, shape: string | null): readonly TrackedField[] {
  return knowledge(root, shape).tracked.get(node) ?? [];
}

/** The source alternatives of a column that read a field, with the node they read it from. */
function readsOf(
  text: string,
  own: PlanNode,
  parent: PlanNode | null,
  unit: PlanNode,
  root: PlanNode,
): { node: PlanNode; path: string[] }[] {
  const out: { node: PlanNode; path: string[] }[] = [];
  for (const alternative of text.split('|')) {
    const first = alternative[0];
    if (first === '#' || first === '=' || first === '@') continue;
    if (alternative.startsWith('$$.')) out.push({ node: root, path: alternative.slice(3).split('.') });
    else if (alternative.startsWith('$.')) out.push({ node: unit, path: alternative.slice(2).split('.') });
    else if (alternative.startsWith('^.')) {
      if (parent) out.push({ node: parent, path: alternative.slice(2).split('.') });
    } else out.push({ node: own, path: alternative.split('.') });
  }
  return out;
}

/** Marks a path known: a leaf wins over a child, and both over a tree of inner fields. */
function mark(tree: KnownTree, path: readonly string[], entry: 'leaf' | 'child'): void {
  let level = tree;
  for (let i = 0; i < path.length; i++) {
    const name = path[i]!;
    const existing = level.get(name);
    if (i === path.length - 1) {
      if (existing !== 'leaf') level.set(name, entry);
      return;
    }
    if (existing === 'leaf' || existing === 'child') return;
    let next = existing;
    if (next === undefined) {
      next = new Map();
      level.set(name, next);
    }
    level = next;
  }
}

function knowledge(root: PlanNode, shape: string | null): PlanKnowledge {
  let byShape = cache.get(root);
  if (!byShape) {
    byShape = new Map();
    cache.set(root, byShape);
  }
  let known = byShape.get(shape);
  if (known) return known;
  known = { trees: new Map(), tracked: new Map() };
  const treeOf = (node: PlanNode): KnownTree => {
    let tree = known!.trees.get(node);
    if (!tree) {
      tree = new Map();
      known!.trees.set(node, tree);
    }
    return tree;
  };
  const visit = (node: PlanNode, parent: PlanNode | null, unit: PlanNode): void => {
    if (node.unit) unit = node;
    const tracked: TrackedField[] = [];
    const track = (fields: string[]) => {
      if (fields.length === 0 || tracked.some((t) => t.name === fields[0])) return;
      tracked.push({ name: fields[0]!, fields });
    };
    const def = tableDef(node.table);
    for (const column of def.columns) {
      const source = node.sources?.[column.name] ?? column.source;
      const text = source === undefined ? null : sourceFor(source, shape);
      if (text === null || AFTER_ROW_TOKENS.has(text)) continue;
      const own: string[] = [];
      for (const read of readsOf(text, node, parent, unit, root)) {
        mark(treeOf(read.node), read.path, 'leaf');
        if (read.node === node && !own.includes(read.path[0]!)) own.push(read.path[0]!);
      }
      track(own);
      // A key column read from the parent or the unit (a variant's `product_id` ← `^.id`): an item field of
      // the column's name repeats that key (the spec gives variants, refunds and fulfillment order line
      // items one), so it is mapped, not kept in `_extra`.
      if (def.key.includes(column.name) && own.length === 0 && /(^|\|)(\^|\$)\./.test(text))
        mark(treeOf(node), [column.name], 'leaf');
    }
    treeOf(node);
    const children = node.children ?? [];
    for (const child of children) {
      mark(treeOf(node), [child.field!], 'child');
      // Siblings filling one table with the same sources (no constant telling them apart) are one field.
      const alike = children.filter(
        (other) =>
          other.table === child.table && JSON.stringify(other.sources) === JSON.stringify(child.sources),
      );
      track(alike.map((other) => other.field!));
      visit(child, node, unit);
    }
    if (node.unit) known!.tracked.set(node, tracked);
  };
  visit(root, null, root);
  byShape.set(shape, known);
  return known;
}

/**
 * `_absent_fields` of a unit item: the names of its tracked fields it has none of (a field present as null
 * is carried), comma-joined in tracked order; null when it has them all. fast.ts writes the same text.
 */
export function absentFields(item: Record<string, unknown>, tracked: readonly TrackedField[]): string | null {
  let text: string | null = null;
  for (const { name, fields } of tracked)
    if (fields.every((field) => item[field] === undefined)) text = text === null ? name : `${text},${name}`;
  return text;
}

const SHAPES: readonly (string | null)[] = [null, API_2023, API_2024];

/** The tracked names among `tracked` that stand for one of `fields`. */
const namesOf = (tracked: readonly TrackedField[], fields: readonly string[]): string[] =>
  tracked.filter((t) => t.fields.some((f) => fields.includes(f))).map((t) => t.name);

/**
 * For the columns of a unit node's table, the tracked names (`_absent_fields` entries) whose absence means
 * a document did not carry the column, over every shape: a document carries the column unless all of them
 * are absent. Null for a column that reads anything but the item's own fields (the unit's or document's
 * `$.`/`$$.`, the parent's `^.`, a constant, a position, an `@` token): such a column goes with the
 * document as a whole. Columns filled after the row (`@extra`, `@absent`, `@derived`) are left out.
 */
export function columnCarriers(root: PlanNode, node: PlanNode): Map<string, readonly string[] | null> {
  const out = new Map<string, string[] | null>();
  for (const shape of SHAPES) {
    const tracked = trackedFields(root, node, shape);
    for (const column of tableDef(node.table).columns) {
      const source = node.sources?.[column.name] ?? column.source;
      const text = source === undefined ? null : sourceFor(source, shape);
      if (text === null || AFTER_ROW_TOKENS.has(text)) continue;
      const alternatives = text.split('|');
      const own = alternatives.every((a) => /^[A-Za-z_]/.test(a));
      const previous = out.get(column.name);
      if (!own || previous === null) {
        out.set(column.name, null);
        continue;
      }
      const names = namesOf(
        tracked,
        alternatives.map((a) => a.split('.')[0]!),
      );
      out.set(column.name, [...new Set([...(previous ?? []), ...names])]);
    }
  }
  return out;
}

/**
 * Rows of a unit's child tables that one array (or object) field of the unit item holds, replaced together
 * by the newest document that carries the field (load/partial.ts): `names` are the tracked names standing
 * for the field (the group is carried unless all are absent), `tables` the child node's table and those
 * below it, and `only`, for sibling fields filling one table told apart by a constant column
 * (order_discounts' `kind`: `voucher` or `offer`), that column and this field's value of it.
 */
export interface CarryGroup {
  names: readonly string[];
  tables: readonly string[];
  only: { column: string; value: string } | null;
}

/** The carry groups of a unit node: its child fields that are not units of their own. */
export function carryGroups(root: PlanNode, node: PlanNode): CarryGroup[] {
  const tracked = trackedFields(root, node, null);
  const children = (node.children ?? []).filter((child) => !child.unit);
  const subtree = (child: PlanNode): string[] => [
    child.table,
    ...(child.children ?? []).flatMap((c) => (c.unit ? [] : subtree(c))),
  ];
  const groups: CarryGroup[] = [];
  const done = new Set<PlanNode>();
  for (const child of children) {
    if (done.has(child)) continue;
    const siblings = children.filter((other) => other.table === child.table);
    for (const s of siblings) done.add(s);
    const only = siblings.length > 1 ? discriminator(siblings) : null;
    if (only === null) {
      groups.push({
        names: namesOf(
          tracked,
          siblings.map((s) => s.field!),
        ),
        tables: [...new Set(siblings.flatMap(subtree))],
        only: null,
      });
      continue;
    }
    for (const s of siblings) {
      if (s.children?.length)
        throw new Error(
          `${node.table}.${s.field}: sibling fields filling ${s.table} told apart by ${only} must have no child tables: their rows could not be told apart`,
        );
      const value = constantOf(s, only)!;
      groups.push({ names: namesOf(tracked, [s.field!]), tables: [s.table], only: { column: only, value } });
    }
  }
  return groups;
}

/** A constant (`=text`) source of `column` at a node, in every shape; null when it is not one. */
function constantOf(node: PlanNode, column: string): string | null {
  const def = tableDef(node.table).columns.find((c) => c.name === column);
  const source = node.sources?.[column] ?? def?.source;
  if (source === undefined) return null;
  const texts = SHAPES.map((shape) => sourceFor(source, shape));
  const first = texts[0];
  if (!first?.startsWith('=') || texts.some((t) => t !== first)) return null;
  return first.slice(1);
}

/** A column whose constant source differs between each of `siblings` (one table), or null. */
function discriminator(siblings: readonly PlanNode[]): string | null {
  for (const column of tableDef(siblings[0]!.table).columns) {
    const values = siblings.map((s) => constantOf(s, column.name));
    if (values.every((v) => v !== null) && new Set(values).size === values.length) return column.name;
  }
  return null;
}
