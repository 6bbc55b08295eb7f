import { count, esc } from './escape.js';

/**
 * Inline SVG drawn here, so the report needs no chart library and no network: a bar chart of one number per
 * run, and the diagram of the warehouse's tables and keys.
 */

export interface Bar {
  /** null: the run did not record this number (drawn as a gap, said in the tooltip). */
  value: number | null;
  /** Tooltip text (escaped here). */
  label: string;
  /** A CSS class giving the bar its colour (the run's outcome). */
  kind: string;
}

const CHART = { width: 600, height: 150, left: 56, right: 8, top: 12, bottom: 22 };

/** A round upper bound for the axis: 1, 2 or 5 times a power of ten, at least the largest value. */
export function niceMax(max: number): number {
  if (!(max > 0)) return 1;
  const power = 10 ** Math.floor(Math.log10(max));
  for (const step of [1, 2, 5, 10]) if (step * power >= max) return step * power;
  return 10 * power;
}

export function barChart(
  id: string,
  title: string,
  unit: string,
  bars: Bar[],
  axis: [string, string],
): string {
  const { width, height, left, right, top, bottom } = CHART;
  const plotW = width - left - right;
  const plotH = height - top - bottom;
  const max = niceMax(Math.max(0, ...bars.map((b) => b.value ?? 0)));
  const slot = bars.length ? plotW / bars.length : plotW;
  const barW = Math.max(1, Math.min(24, slot * 0.8));
  const parts = [
    `<figure class="chart" id="${esc(id)}"><figcaption>${esc(title)}</figcaption>`,
    `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="${esc(title)}">`,
    `<line class="axis" x1="${left}" y1="${top + plotH}" x2="${width - right}" y2="${top + plotH}"/>`,
    `<line class="grid" x1="${left}" y1="${top}" x2="${width - right}" y2="${top}"/>`,
    `<text class="tick" x="${left - 6}" y="${top + 4}" text-anchor="end">${esc(count(max))}${esc(unit)}</text>`,
    `<text class="tick" x="${left - 6}" y="${top + plotH}" text-anchor="end">0</text>`,
  ];
  for (const [i, bar] of bars.entries()) {
    const x = left + i * slot + (slot - barW) / 2;
    const tip = `${bar.label}: ${bar.value === null ? 'not recorded' : `${count(bar.value)}${unit}`}`;
    if (bar.value === null) {
      parts.push(
        `<rect class="bar missing" x="${x.toFixed(1)}" y="${top + plotH - 2}" width="${barW.toFixed(1)}" height="2" data-value=""><title>${esc(tip)}</title></rect>`,
      );
      continue;
    }
    // A run with a small non-zero value still shows a sliver, so it is not mistaken for zero.
    const h = bar.value > 0 ? Math.max(1.5, (bar.value / max) * plotH) : 0;
    parts.push(
      `<rect class="bar ${esc(bar.kind)}" x="${x.toFixed(1)}" y="${(top + plotH - h).toFixed(1)}" width="${barW.toFixed(1)}" height="${h.toFixed(1)}" data-value="${bar.value}"><title>${esc(tip)}</title></rect>`,
    );
  }
  parts.push(
    `<text class="tick" x="${left}" y="${height - 6}">${esc(axis[0])}</text>`,
    `<text class="tick" x="${width - right}" y="${height - 6}" text-anchor="end">${esc(axis[1])}</text>`,
    '</svg></figure>',
  );
  return parts.join('');
}

export interface DiagramTable {
  name: string;
  key: string[];
  /** Key columns that hold the parent's key. */
  foreign: string[];
  parent: string | null;
}

const CHAR_W = 7.3;
const LINE_H = 15;
const INDENT = 26;
const GAP = 10;

interface Box {
  table: DiagramTable;
  x: number;
  y: number;
  w: number;
  h: number;
}

/** One family's tables as a tree: each child below its parent, indented, joined by an elbow line. */
function layoutFamily(tables: DiagramTable[]): { boxes: Box[]; width: number; height: number } {
  const names = new Set(tables.map((t) => t.name));
  const children = new Map<string | null, DiagramTable[]>();
  for (const t of tables) {
    const parent = t.parent !== null && names.has(t.parent) ? t.parent : null;
    children.set(parent, [...(children.get(parent) ?? []), t]);
  }
  const boxes: Box[] = [];
  let y = 0;
  const place = (t: DiagramTable, depth: number) => {
    const longest = Math.max(t.name.length, ...t.key.map((k) => k.length + 4));
    const box = {
      table: t,
      x: depth * INDENT,
      y,
      w: Math.ceil(longest * CHAR_W + 16),
      h: 22 + t.key.length * LINE_H,
    };
    boxes.push(box);
    y += box.h + GAP;
    for (const child of children.get(t.name) ?? []) place(child, depth + 1);
  };
  for (const root of children.get(null) ?? []) place(root, 0);
  return {
    boxes,
    width: Math.max(0, ...boxes.map((b) => b.x + b.w)),
    height: Math.max(0, y - GAP),
  };
}

/**
 * The tables and keys of the model, family by family, in columns: each table a box with its key columns
 * (PK; FK where they hold the parent's key), children under their parent.
 */
export function tableDiagram(families: [string, DiagramTable[]][], columns = 3): string {
  const laid = families.map(([family, tables]) => ({ family, ...layoutFamily(tables) }));
  const colW = Math.max(0, ...laid.map((f) => f.width)) + 40;
  const heights = new Array<number>(columns).fill(0);
  const parts: string[] = [];
  for (const family of laid) {
    // Each family goes into the shortest column so far.
    const col = heights.indexOf(Math.min(...heights));
    const ox = 10 + col * colW;
    const oy = heights[col]! + 24;
    parts.push(
      `<g class="family" data-family="${esc(family.family)}"><text class="family-name" x="${ox}" y="${oy - 8}">${esc(family.family)}</text>`,
    );
    const at = new Map(family.boxes.map((b) => [b.table.name, b]));
    for (const b of family.boxes) {
      const parent = b.table.parent === null ? undefined : at.get(b.table.parent);
      if (parent) {
        const px = ox + parent.x + 10;
        const cy = oy + b.y + 11;
        parts.push(
          `<path class="edge" d="M${px} ${oy + parent.y + parent.h} V${cy} H${ox + b.x}" data-from="${esc(parent.table.name)}" data-to="${esc(b.table.name)}"/>`,
        );
      }
    }
    for (const b of family.boxes) {
      const x = ox + b.x;
      const y = oy + b.y;
      parts.push(
        `<g class="table" data-table="${esc(b.table.name)}"><rect x="${x}" y="${y}" width="${b.w}" height="${b.h}" rx="3"/>`,
        `<text class="table-name" x="${x + 8}" y="${y + 15}">${esc(b.table.name)}</text>`,
      );
      for (const [i, key] of b.table.key.entries()) {
        const mark = b.table.foreign.includes(key) ? 'FK' : 'PK';
        parts.push(
          `<text class="key ${mark.toLowerCase()}" x="${x + 8}" y="${y + 32 + i * LINE_H}">${mark} ${esc(key)}</text>`,
        );
      }
      parts.push('</g>');
    }
    parts.push('</g>');
    heights[col] = oy + family.height + 16;
  }
  const width = 10 + columns * colW;
  const height = Math.max(...heights) + 10;
  return `<svg xmlns="http://www.w3.org/2000/svg" class="diagram" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="Tables and keys">${parts.join('')}</svg>`;
}
