import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { analyticsModels } from './analytics/index.js';
import { WAREHOUSE_GUIDE } from './docs-guide.js';
import {
  type ColumnDef,
  HISTORIES_OF,
  historyName,
  type Source,
  type TableDef,
  tableDefinitions,
} from './index.js';

const HISTORIES: ReadonlySet<string> = new Set(HISTORIES_OF.map(historyName));

/**
 * docs/warehouse.md, generated from the table registry (`npm run docs:warehouse`); a test fails when the
 * file is not what this renders, so the data dictionary cannot drift from the tables.
 */

export const FAMILIES: [string, (t: TableDef) => boolean][] = [
  ['Orders', (t) => t.entity === 'order'],
  ['Fulfillments', (t) => t.entity === 'fulfillment' || t.entity === 'fulfillment_event'],
  ['Fulfillment orders and locations', (t) => t.entity === 'fulfillment_order' || t.entity === 'location'],
  ['Customers', (t) => t.entity === 'customer'],
  ['Catalogue', (t) => t.entity === 'product'],
  ['Subscriptions', (t) => t.entity === 'subscription'],
  ['Metadata', (t) => t.entity === 'metadata_definition'],
  ['Carts', (t) => t.entity === 'cart'],
  ['Support', (t) => t.entity === 'ticket'],
  ['History', (t) => HISTORIES.has(t.name)],
  ['Bookkeeping', (t) => t.entity === 'bookkeeping' && !HISTORIES.has(t.name)],
];

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');

function describeSource(source: Source | undefined): string {
  if (source === undefined) return '(loader)';
  if (typeof source === 'string')
    return source
      .split('|')
      .map((s) => `\`${s}\``)
      .join(' or ');
  const parts = Object.entries(source).map(([shape, s]) =>
    shape === 'default' ? `otherwise \`${s}\`` : `${shape}: \`${s}\``,
  );
  return parts.length ? parts.join('; ') : '(the containing document: see the table notes)';
}

function renderColumn(c: ColumnDef): string {
  return `| \`${c.name}\` | ${c.type} | ${cell(describeSource(c.source))} | ${cell(c.comment)} |`;
}

function renderTable(def: TableDef): string {
  const lines = [
    `### \`${def.name}\``,
    '',
    def.comment,
    '',
    `- Key: ${def.key.map((k) => `\`${k}\``).join(', ')}`,
  ];
  if (def.owner)
    lines.push(`- Replaced together with its \`${def.owner.table}\` row (via \`${def.owner.column}\`).`);
  if (def.parent && def.parent !== def.owner?.table) lines.push(`- Parent: \`${def.parent}\`.`);
  if (def.unit?.version && def.unit.ties)
    lines.push(
      `- Newest wins by \`${def.unit.version}\`, then by ${def.unit.ties.map((c) => `\`${c}\``).join(', ')}.`,
    );
  else if (def.unit?.version) lines.push(`- Newest wins by \`${def.unit.version}\`.`);
  else if (def.unit) lines.push('- Carries no version: the record received last wins.');
  if (def.fullScan) lines.push('- Fed by full scans: rows they no longer return get `_deleted_at`.');
  lines.push(
    '',
    '| Column | Type | Source field | Description |',
    '|---|---|---|---|',
    ...def.columns.map(renderColumn),
    '',
  );
  return lines.join('\n');
}

/** A table with a parent: which of its key columns hold the parent's key, column for column. */
export interface TableRelation {
  child: string;
  parent: string;
  /** [child column, parent column] pairs: the child's key begins with its parent's key. */
  columns: [string, string][];
}

/**
 * Every parent link of the model. A child's key starts with its parent's whole key under the child's own
 * names (`order_lines` `_store, order_number` → `orders` `_store, number`), which the model's validation
 * relies on when a replaced parent takes its children with it; a link where that does not hold is an error.
 */
export function tableRelations(tables: readonly TableDef[] = tableDefinitions): TableRelation[] {
  const byName = new Map(tables.map((t) => [t.name, t]));
  const relations: TableRelation[] = [];
  for (const child of tables) {
    if (!child.parent) continue;
    const parent = byName.get(child.parent);
    if (!parent || parent.key.length >= child.key.length)
      throw new Error(
        `table ${child.name}: parent ${child.parent} ${parent ? `has a key as long as its child's (${parent.key.join(', ')})` : 'is not a table of the model'}; expected a parent whose key the child's key extends`,
      );
    relations.push({
      child: child.name,
      parent: parent.name,
      columns: parent.key.map((column, i) => [child.key[i]!, column]),
    });
  }
  return relations;
}

/** The tables of each family (FAMILIES, then any entity kind they do not name), in registry order. */
export function tableFamilies(tables: readonly TableDef[] = tableDefinitions): [string, TableDef[]][] {
  const out: [string, TableDef[]][] = [];
  for (const [family, belongs] of FAMILIES) {
    const members = tables.filter(belongs);
    if (members.length) out.push([family, members]);
  }
  const unlisted = tables.filter((t) => !FAMILIES.some(([, belongs]) => belongs(t)));
  for (const entity of new Set(unlisted.map((t) => t.entity))) {
    const heading = entity.replaceAll('_', ' ');
    out.push([
      `${heading[0]!.toUpperCase()}${heading.slice(1)}`,
      unlisted.filter((t) => t.entity === entity),
    ]);
  }
  return out;
}

// Mermaid's attribute types are single words: DECIMAL(18,3) or VARCHAR[] would break the diagram.
const mermaidType = (type: string) => type.replace(/[^A-Za-z0-9_]+/g, '_').replace(/_+$/, '');

/**
 * A Mermaid `erDiagram` of `tables` (GitHub renders it): each table with its key columns (PK, and FK where
 * they hold the parent's key), and one edge from each parent to its children labelled with the joining
 * columns.
 */
export function mermaidErDiagram(tables: readonly TableDef[]): string {
  const names = new Set(tables.map((t) => t.name));
  const relations = tableRelations().filter((r) => names.has(r.child) && names.has(r.parent));
  const lines = ['```mermaid', 'erDiagram'];
  for (const r of relations) {
    const on = r.columns
      .filter(([c, p]) => c !== '_store' || p !== '_store')
      .map(([c, p]) => (c === p ? c : `${c} → ${p}`))
      .join(', ');
    lines.push(`  ${r.parent} ||--o{ ${r.child} : "${on}"`);
  }
  for (const def of tables) {
    const foreign = new Set(
      relations.filter((r) => r.child === def.name).flatMap((r) => r.columns.map(([c]) => c)),
    );
    lines.push(`  ${def.name} {`);
    for (const key of def.key) {
      const type = def.columns.find((c) => c.name === key)?.type ?? 'VARCHAR';
      lines.push(`    ${mermaidType(type)} ${key} ${foreign.has(key) ? 'PK, FK' : 'PK'}`);
    }
    lines.push('  }');
  }
  lines.push('```');
  return lines.join('\n');
}

function renderDiagrams(): string[] {
  const out = [
    '## Tables and keys',
    '',
    'Generated from the table model (`src/model/`), as is the same diagram in the HTML report (`store-sync report`):',
    'each table with its key columns; an edge goes from a parent to its children, labelled with the columns',
    "that hold the parent's key (every key also starts with `_store`). A replaced parent takes its children",
    'with it ([Newest wins](#newest-wins)).',
    '',
  ];
  for (const [family, tables] of tableFamilies())
    out.push(`### ${family}: keys`, '', mermaidErDiagram(tables), '');
  return out;
}

/** The analyst views (src/model/analytics/), after the tables they read. */
function renderModels(): string[] {
  const out = [
    '## Analyst models',
    '',
    'Views over the tables above, always current (nothing to refresh), exact, over both order shapes; what they',
    'answer and how to query them: [analytics.md](analytics.md).',
    '',
  ];
  for (const model of analyticsModels)
    out.push(
      `### \`${model.name}\``,
      '',
      model.comment,
      '',
      '| Column | Description |',
      '|---|---|',
      ...model.columns.map((c) => `| \`${c.name}\` | ${cell(c.comment)} |`),
      '',
    );
  return out;
}

export function renderWarehouseDoc(): string {
  const out = [WAREHOUSE_GUIDE.trim(), '', ...renderDiagrams(), '## Tables', ''];
  // A table of an entity kind no family names (a new stream's) is still documented, under its kind, so that
  // adding a stream needs no edit here.
  for (const [family, tables] of tableFamilies()) out.push(`## ${family}`, '', ...tables.map(renderTable));
  out.push(...renderModels());
  return `${out.join('\n').trim()}\n`;
}

export const WAREHOUSE_DOC = fileURLToPath(new URL('../../docs/warehouse.md', import.meta.url));

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await writeFile(WAREHOUSE_DOC, renderWarehouseDoc());
  process.stdout.write(`wrote ${WAREHOUSE_DOC}\n`);
}
