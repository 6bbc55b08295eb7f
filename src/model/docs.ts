import { writeFile } from 'node:fs/promises';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { WAREHOUSE_GUIDE } from './docs-guide.js';
import { type ColumnDef, type Source, type TableDef, tableDefinitions } from './index.js';

/**
 * docs/warehouse.md, generated from the table registry (`npm run docs:warehouse`); a test fails when the
 * file is not what this renders, so the data dictionary cannot drift from the tables.
 */

const FAMILIES: [string, (t: TableDef) => boolean][] = [
  ['Orders', (t) => t.entity === 'order'],
  ['Fulfillments', (t) => t.entity === 'fulfillment' || t.entity === 'fulfillment_event'],
  ['Fulfillment orders and locations', (t) => t.entity === 'fulfillment_order' || t.entity === 'location'],
  ['Customers', (t) => t.entity === 'customer'],
  ['Catalogue', (t) => t.entity === 'product'],
  ['Subscriptions', (t) => t.entity === 'subscription'],
  ['Metadata', (t) => t.entity === 'metadata_definition'],
  ['Carts', (t) => t.entity === 'cart'],
  ['Support', (t) => t.entity === 'ticket'],
  ['Bookkeeping', (t) => t.entity === 'bookkeeping'],
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

export function renderWarehouseDoc(): string {
  const out = [WAREHOUSE_GUIDE.trim(), '', '## Tables', ''];
  for (const [family, belongs] of FAMILIES) {
    const tables = tableDefinitions.filter(belongs);
    if (!tables.length) continue;
    out.push(`## ${family}`, '', ...tables.map(renderTable));
  }
  // A table of an entity kind no family names (a new stream's) is still documented, under its kind, so that
  // adding a stream needs no edit here.
  const unlisted = tableDefinitions.filter((t) => !FAMILIES.some(([, belongs]) => belongs(t)));
  for (const entity of new Set(unlisted.map((t) => t.entity))) {
    const heading = entity.replaceAll('_', ' ');
    out.push(`## ${heading[0]!.toUpperCase()}${heading.slice(1)}`, '');
    out.push(...unlisted.filter((t) => t.entity === entity).map(renderTable));
  }
  return `${out.join('\n').trim()}\n`;
}

export const WAREHOUSE_DOC = fileURLToPath(new URL('../../docs/warehouse.md', import.meta.url));

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  await writeFile(WAREHOUSE_DOC, renderWarehouseDoc());
  process.stdout.write(`wrote ${WAREHOUSE_DOC}\n`);
}
