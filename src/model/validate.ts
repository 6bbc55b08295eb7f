import type { z } from 'zod';
import type { EntityKind } from '../contracts.js';
import { type PlanNode, plans } from './plans.js';
import { planResources, type ResourceShape } from './resources.js';
import { elementsOf, fieldOf, objectsOf, pathOf } from './schema-paths.js';
import { HISTORY_OF } from './tables/history.js';
import { tableDefinitions } from './tables/index.js';
import { API_2023, API_2024, type Source, sourceFor, type TableDef } from './types.js';

/**
 * Checks the table model as a whole, where a mistake would otherwise pass every compiler check and write
 * nothing: a plan field the normalizer cannot find (a dotted path, a field the resource does not have), a
 * column source naming no field, a table no plan fills, a TableDef whose parent, owner or unit disagrees
 * with the plan tree that feeds it. Returns one sentence per problem, naming the table and the path.
 */

export interface Model {
  tables: readonly TableDef[];
  plans: Record<EntityKind, PlanNode>;
  resources: Record<EntityKind, readonly ResourceShape[]>;
}

export const MODEL: Model = { tables: tableDefinitions, plans, resources: planResources };

type Schema = z.core.$ZodType;

/** Where a plan node's rows read from, in one resource shape. */
interface Scope {
  resource: ResourceShape;
  doc: Schema[];
  unit: Schema[];
  parent: Schema[] | null;
  item: Schema[];
}

/** Shapes whose source text a scope's record may be read with (a shapeless resource: any of them). */
const shapesOf = (r: ResourceShape): (string | null)[] =>
  r.shape === null ? [API_2023, API_2024, null] : [r.shape, null];

const texts = (source: Source): string[] =>
  [API_2023, API_2024, null].flatMap((shape) => sourceFor(source, shape) ?? []);

export function validateModel(model: Model = MODEL): string[] {
  const problems: string[] = [];
  const byName = new Map<string, TableDef>();
  for (const def of model.tables) {
    if (byName.has(def.name)) problems.push(`${def.name}: two tables have this name`);
    byName.set(def.name, def);
  }
  for (const def of model.tables) problems.push(...checkTable(def, byName));

  const filled = new Set<string>();
  const reads = new Map<string, Read>();
  for (const [entity, root] of Object.entries(model.plans) as [EntityKind, PlanNode][]) {
    const scopes = model.resources[entity].map((resource) => {
      const at = [resource.schema];
      return { resource, doc: at, unit: at, parent: null, item: at };
    });
    const walk = (node: PlanNode, parent: PlanNode | null, unit: PlanNode | null, outer: Scope[]) => {
      filled.add(node.table);
      const def = byName.get(node.table);
      if (!def) {
        problems.push(`plan ${entity}: ${node.table} is not a table of the registry`);
        return;
      }
      problems.push(...checkPlace(entity, node, parent, unit, def, byName));
      const here = parent === null ? outer : itemsOf(node, parent, outer, problems);
      if (!here.length) return;
      readSources(node, def, here, reads);
      const owner = node.unit ? node : unit;
      for (const child of node.children ?? []) walk(child, node, owner, here);
    };
    walk(root, null, null, scopes);
  }

  for (const read of reads.values())
    if (!read.ok)
      problems.push(
        `${read.table}.${read.column}: source \`${read.alt}\` names no field of the ${read.where} in ` +
          [...read.resources].join(', '),
      );
  for (const def of model.tables) {
    if (def.entity === 'bookkeeping' && filled.has(def.name))
      problems.push(`${def.name}: a bookkeeping table, but a plan fills it`);
    if (def.entity !== 'bookkeeping' && !filled.has(def.name))
      problems.push(
        `${def.name}: no plan fills it (a table the loader fills is declared entity 'bookkeeping')`,
      );
  }
  // A table fed by two plan nodes (a product's variants under `variants` and under `children`) would
  // otherwise state each problem of its subtree twice, in the same words.
  return [...new Set(problems)];
}

/** The registry's own references: every column it names exists. */
function checkTable(def: TableDef, byName: Map<string, TableDef>): string[] {
  const out: string[] = [];
  const columns = new Set<string>();
  for (const c of def.columns) {
    if (columns.has(c.name)) out.push(`${def.name}.${c.name}: two columns have this name`);
    columns.add(c.name);
  }
  const needColumn = (what: string, name: string | undefined) => {
    if (name !== undefined && !columns.has(name)) out.push(`${def.name}: ${what} ${name} is not a column`);
  };
  for (const k of def.key) needColumn('key column', k);
  needColumn('unit key', def.unit?.key);
  for (const t of def.unit?.ties ?? []) needColumn('unit tie', t);
  needColumn('owner column', def.owner?.column);
  needColumn('created column', def.created);
  if (def.unit && !def.key.includes(def.unit.key))
    out.push(`${def.name}: unit key ${def.unit.key} is not part of the key`);
  if (def.owner && !def.key.includes(def.owner.column))
    out.push(`${def.name}: owner column ${def.owner.column} is not part of the key`);
  if (def.owner && !byName.get(def.owner.table)?.unit)
    out.push(`${def.name}: owner ${def.owner.table} is not a unit table`);
  if (def.parent && !byName.has(def.parent)) out.push(`${def.name}: parent ${def.parent} is not a table`);
  if (def.unit?.sighted) {
    // Held in memory until the commit (src/load/held-units.ts), which neither writes owned rows nor history.
    const owned = [...byName.values()].filter((t) => t.owner?.table === def.name).map((t) => t.name);
    if (owned.length) out.push(`${def.name}: a sighted unit cannot own tables (it owns ${owned.join(', ')})`);
    if (HISTORY_OF.includes(def.name)) out.push(`${def.name}: a sighted unit cannot keep a history`);
    if (def.fullScan) out.push(`${def.name}: a sighted unit cannot be fed by full scans`);
  }
  return out;
}

/** The TableDef agrees with the place the plan gives the table. */
function checkPlace(
  entity: EntityKind,
  node: PlanNode,
  parent: PlanNode | null,
  unit: PlanNode | null,
  def: TableDef,
  byName: Map<string, TableDef>,
): string[] {
  const out: string[] = [];
  const at = `${def.name} (plan ${entity}${parent ? `, under ${parent.table}` : ''})`;
  if (def.entity === 'bookkeeping') return out;
  if (!!node.unit !== !!def.unit)
    out.push(`${at}: the plan ${node.unit ? 'makes it a unit' : 'owns it'} but its TableDef.unit disagrees`);
  if (parent === null && def.entity !== entity)
    out.push(`${at}: the root of plan ${entity}, but its entity is ${def.entity}`);
  if (node.optionalKey && !node.unit) out.push(`${at}: optionalKey on a table that is not a unit`);
  for (const name of Object.keys(node.sources ?? {}))
    if (!def.columns.some((c) => c.name === name)) out.push(`${at}: the plan sets ${name}, not a column`);
  for (const k of def.key) {
    const source = node.sources?.[k] ?? def.columns.find((c) => c.name === k)?.source;
    if (k !== '_store' && (source === undefined || !texts(source).length))
      out.push(`${at}: key column ${k} has no source, so every row would be rejected`);
  }
  out.push(...checkPositions(at, node, parent, def));
  if (node.unit) {
    if (def.parent || def.owner) out.push(`${at}: a unit, but its TableDef has a parent or an owner`);
    return out;
  }
  if (def.parent !== parent?.table) out.push(`${at}: TableDef.parent is ${def.parent}, not ${parent?.table}`);
  const owner = unit === null ? undefined : byName.get(unit.table);
  if (def.owner?.table !== owner?.name)
    out.push(`${at}: TableDef.owner is ${def.owner?.table}, but the unit above it is ${owner?.name}`);
  if (owner && def.entity !== owner.entity)
    out.push(`${at}: entity ${def.entity}, but its owner ${owner.name} is ${owner.entity}`);
  if (def.owner && owner?.unit) {
    const column = def.owner.column;
    const source = node.sources?.[column] ?? def.columns.find((c) => c.name === column)?.source;
    const ownKey = [`$.${owner.unit.key}`, ...(parent === unit ? [`^.${owner.unit.key}`] : [])];
    const wrong = (source === undefined ? [] : texts(source)).filter((text) => !ownKey.includes(text));
    if (source === undefined || wrong.length)
      out.push(`${at}: owner column ${column} must read the unit's key (${ownKey.join(' or ')})`);
  }
  return out;
}

/**
 * Positional ids (`#-`, `^#-`) stand in for an owned item's missing id: a unit's key is never one (a
 * document without it is refused), nor its parent's when the parent is a unit, and a position always
 * fills the column, so it can only be the last alternative.
 */
function checkPositions(at: string, node: PlanNode, parent: PlanNode | null, def: TableDef): string[] {
  const out = new Set<string>();
  for (const column of def.columns) {
    const source = node.sources?.[column.name] ?? column.source;
    for (const text of source === undefined ? [] : texts(source)) {
      const alts = text.split('|');
      alts.forEach((alt, i) => {
        if (alt !== '#-' && alt !== '^#-') return;
        const reads = `${at}: ${column.name} reads \`${alt}\``;
        if (i !== alts.length - 1) out.add(`${reads}, which always fills it, before other alternatives`);
        if (alt === '#-' && node.unit) out.add(`${reads}, but a unit's key is never a position`);
        if (alt === '^#-' && (parent === null || parent.unit))
          out.add(`${reads}, but its parent is ${parent ? 'a unit, whose key is never a position' : 'none'}`);
      });
    }
  }
  return [...out];
}

/** The scopes in which the node's field holds items: a field no scope has would write no rows. */
function itemsOf(node: PlanNode, parent: PlanNode, outer: Scope[], problems: string[]): Scope[] {
  const field = node.field;
  const names = [...new Set(outer.map((s) => s.resource.name))].join(', ');
  if (field === undefined) {
    problems.push(`${node.table}: a plan node under ${parent.table} needs a field`);
    return [];
  }
  if (field.includes('.')) {
    problems.push(
      `${node.table}: plan field \`${field}\` (under ${parent.table}) is a dotted path, but the normalizer ` +
        'reads a plan field as one key of its parent item, so it would write no rows',
    );
    return [];
  }
  const here = outer.flatMap((scope) => {
    const values = fieldOf(scope.item, field);
    const item = node.single ? objectsOf(values) : elementsOf(values);
    if (!item.length) return [];
    return [{ ...scope, parent: scope.item, item, unit: node.unit ? item : scope.unit }];
  });
  if (!here.length)
    problems.push(
      `${node.table}: plan field \`${field}\` is not ${node.single ? 'an object' : 'an array'} field of ` +
        `the ${parent.table} items in ${names}, so it would write no rows`,
    );
  return here;
}

const PLACES: [prefix: string, scope: 'doc' | 'unit' | 'parent', where: string][] = [
  ['$$.', 'doc', 'document'],
  ['$.', 'unit', 'unit'],
  ['^.', 'parent', 'parent item'],
];

/** One source alternative of a column, and whether any scope it is read in has the field it names. */
interface Read {
  table: string;
  column: string;
  alt: string;
  where: string;
  resources: Set<string>;
  ok: boolean;
}

/**
 * Records the field reads of the node's columns. A read is checked over every plan node of its table: a
 * table fed from two arrays (voucher and offer discounts) or from two plans (fulfillments in an order and
 * alone) has columns that only one of them fills.
 */
function readSources(node: PlanNode, def: TableDef, scopes: Scope[], reads: Map<string, Read>): void {
  for (const column of def.columns) {
    const source = node.sources?.[column.name] ?? column.source;
    if (source === undefined) continue;
    for (const scope of scopes)
      for (const shape of shapesOf(scope.resource))
        for (const alt of sourceFor(source, shape)?.split('|') ?? []) {
          if (alt.startsWith('#') || alt === '^#-' || alt.startsWith('=') || alt.startsWith('@')) continue;
          const place = PLACES.find(([prefix]) => alt.startsWith(prefix));
          const base = place ? scope[place[1]] : scope.item;
          const path = place ? alt.slice(place[0].length) : alt;
          const key = `${def.name}\u0000${column.name}\u0000${alt}`;
          let read = reads.get(key);
          if (!read) {
            const where = place?.[2] ?? `${def.name} item`;
            read = { table: def.name, column: column.name, alt, where, resources: new Set(), ok: false };
            reads.set(key, read);
          }
          read.resources.add(scope.resource.name);
          read.ok ||= base !== null && pathOf(base, path).length > 0;
        }
  }
}
