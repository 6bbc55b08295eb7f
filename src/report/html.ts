import { createHash } from 'node:crypto';
import {
  ageText,
  completedSinceText,
  errorRunText,
  freshText,
  lastRunText,
  RECENT_ERROR_DAYS,
  shownLastError,
} from '../load/status.js';
import { tableFamilies, tableRelations } from '../model/docs.js';
import { type Bar, barChart, type DiagramTable, tableDiagram } from './charts.js';
import type { ReportData, ReportRun, ReportStream } from './data.js';
import { bytes, count, esc } from './escape.js';

/**
 * The report as one HTML file that needs nothing else: CSS, script and SVG inline, no fonts, no network. Its
 * Content-Security-Policy allows no fetch at all and runs only the script below (by its hash), so even a
 * value that escaped escaping could not load or run anything.
 */

const STYLE = `
:root { color-scheme: light dark; --fg: #1d2330; --muted: #5b6475; --line: #d5d9e0; --bg: #fff; --panel: #f5f7fa;
  --ok: #2f8f4e; --warn: #c98a00; --bad: #c0392b; --idle: #8a93a3; --run: #2c6fbb; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6e9ef; --muted: #a3abba; --line: #3a4150; --bg: #161a21;
  --panel: #1f2430; } }
body { font: 14px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg); margin: 0 auto;
  padding: 16px 24px 48px; max-width: 1280px; }
h1 { font-size: 22px; margin: 8px 0 4px; } h2 { font-size: 18px; margin: 32px 0 8px; border-bottom: 1px solid var(--line); }
h3 { font-size: 15px; margin: 18px 0 6px; }
.meta, .note { color: var(--muted); } .note { margin: 4px 0 10px; }
nav a { margin-right: 14px; }
.cards { display: flex; flex-wrap: wrap; gap: 12px; margin: 14px 0; }
.card { background: var(--panel); border: 1px solid var(--line); border-radius: 6px; padding: 8px 14px; min-width: 130px; }
.card b { display: block; font-size: 20px; }
table { border-collapse: collapse; margin: 6px 0 12px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 3px 10px 3px 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; white-space: nowrap; }
td[data-field="lastError"], td[data-field="error"] { max-width: 420px; overflow-wrap: anywhere; }
td.code, td.n, td[data-field="age"], td[data-field="fresh"], td[data-field="lastRun"] { white-space: nowrap; }
table.sortable th { cursor: pointer; } td.n, th.n { text-align: right; }
td.code, code, pre { font-family: ui-monospace, monospace; font-size: 12.5px; }
pre { background: var(--panel); border: 1px solid var(--line); padding: 6px 8px; white-space: pre-wrap;
  word-break: break-all; max-height: 260px; overflow: auto; margin: 4px 0; }
.stale, .failed, .interrupted { color: var(--bad); font-weight: 600; } .fresh, .succeeded { color: var(--ok); }
.completed_with_rejections, .partial { color: var(--warn); }
.charts { display: flex; flex-wrap: wrap; gap: 8px 24px; } figure.chart { margin: 0; }
figcaption { font-weight: 600; margin: 6px 0 2px; }
svg text { fill: var(--fg); font: 11px system-ui, sans-serif; } svg .tick { fill: var(--muted); }
svg .axis, svg .grid { stroke: var(--line); } svg .grid { stroke-dasharray: 3 3; }
rect.bar { fill: var(--run); } rect.bar.succeeded { fill: var(--ok); } rect.bar.completed_with_rejections,
rect.bar.partial { fill: var(--warn); } rect.bar.failed { fill: var(--bad); } rect.bar.interrupted,
rect.bar.missing { fill: var(--idle); }
.legend span { margin-right: 12px; } .legend i { display: inline-block; width: 10px; height: 10px; margin-right: 4px; }
.scroll { overflow-x: auto; }
svg.diagram rect { fill: var(--panel); stroke: var(--muted); } svg.diagram .edge { fill: none; stroke: var(--muted); }
svg.diagram text { font: 12px ui-monospace, monospace; } svg.diagram .table-name { font-weight: 700; }
svg.diagram .family-name { font: 600 13px system-ui, sans-serif; } svg.diagram .fk { fill: var(--run); }
details { margin: 6px 0; border-bottom: 1px solid var(--line); padding-bottom: 6px; }
summary { cursor: pointer; }
`;

/**
 * Ages read from when the file is opened rather than when it was written, and tables sorted by a click on a
 * header. Everything is there without it; it only adds.
 */
const SCRIPT = `
(function () {
  'use strict';
  var now = Date.now();
  function age(ms) {
    var m = Math.round(ms / 60000);
    if (m < 60) return m + ' min';
    if (m < 48 * 60) return (m / 60).toFixed(1) + ' h';
    return (m / 1440).toFixed(1) + ' d';
  }
  var stamped = document.querySelectorAll('[data-age-from]');
  for (var i = 0; i < stamped.length; i++) {
    var at = Date.parse(stamped[i].getAttribute('data-age-from'));
    if (!isNaN(at)) stamped[i].setAttribute('title', age(now - at) + ' before this page was opened');
  }
  var opened = document.getElementById('opened');
  if (opened) opened.textContent = new Date(now).toISOString();
  function cellValue(row, index) {
    var cell = row.cells[index];
    if (!cell) return '';
    var raw = cell.getAttribute('data-sort');
    return raw !== null ? raw : cell.textContent;
  }
  var tables = document.querySelectorAll('table.sortable');
  for (var t = 0; t < tables.length; t++) {
    (function (table) {
      var heads = table.tHead ? table.tHead.rows[0].cells : [];
      for (var h = 0; h < heads.length; h++) {
        (function (index, head) {
          head.addEventListener('click', function () {
            var body = table.tBodies[0];
            var rows = Array.prototype.slice.call(body.rows);
            var descending = head.getAttribute('aria-sort') === 'ascending';
            rows.sort(function (a, b) {
              var x = cellValue(a, index), y = cellValue(b, index);
              var nx = Number(x), ny = Number(y);
              var order = x !== '' && y !== '' && !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
              return descending ? -order : order;
            });
            for (var r = 0; r < rows.length; r++) body.appendChild(rows[r]);
            for (var o = 0; o < heads.length; o++) heads[o].removeAttribute('aria-sort');
            head.setAttribute('aria-sort', descending ? 'descending' : 'ascending');
          });
        })(h, heads[h]);
      }
    })(tables[t]);
  }
})();
`;

const scriptHash = `sha256-${createHash('sha256').update(SCRIPT).digest('base64')}`;

/** A cell: text escaped; `field` names what it holds for readers of the page (and its test). */
function td(value: unknown, options: { field?: string; cls?: string; sort?: string | number } = {}): string {
  const attrs = [
    options.field ? ` data-field="${esc(options.field)}"` : '',
    options.cls ? ` class="${esc(options.cls)}"` : '',
    options.sort !== undefined ? ` data-sort="${esc(options.sort)}"` : '',
  ].join('');
  return `<td${attrs}>${esc(value)}</td>`;
}

const num = (value: number | null, field?: string) =>
  td(count(value), { cls: 'n', sort: value ?? '', ...(field ? { field } : {}) });

function table(id: string, heads: (string | [string, 'n'])[], rows: string[], sortable = true): string {
  const th = heads
    .map((h) => (Array.isArray(h) ? `<th class="n">${esc(h[0])}</th>` : `<th>${esc(h)}</th>`))
    .join('');
  return `<table id="${esc(id)}"${sortable ? ' class="sortable"' : ''}><thead><tr>${th}</tr></thead><tbody>${rows.join('')}</tbody></table>`;
}

function freshness(data: ReportData, now: number): string {
  if (data.streams.length === 0)
    return '<p class="note" id="freshness-empty">Nothing synced yet: run store-sync sync (or ingest).</p>';
  const rows = data.streams.map((s) => {
    const fresh = freshText(s);
    const cursor = s.cursorInProgress ? new URL(s.cursorInProgress).search || s.cursorInProgress : '';
    return (
      `<tr data-store="${esc(s.store)}" data-stream="${esc(s.stream)}">` +
      td(s.store, { field: 'store' }) +
      td(s.stream, { field: 'stream' }) +
      td(s.lastSuccessAt ?? '', { field: 'lastSuccessAt', cls: 'code' }) +
      `<td data-field="age"${s.lastSuccessAt ? ` data-age-from="${esc(s.lastSuccessAt)}"` : ''} data-sort="${s.lastSuccessAt ? now - Date.parse(s.lastSuccessAt) : ''}">${esc(ageText(s.lastSuccessAt, now))}</td>` +
      num(s.rows, 'rows') +
      td(s.watermark ?? '', { field: 'watermark', cls: 'code' }) +
      td(s.lastFullScanAt ?? '', { field: 'lastFullScanAt', cls: 'code' }) +
      td(cursor, { field: 'cursorInProgress', cls: 'code' }) +
      num(s.rejectionsSinceLastSuccess, 'rejectionsSinceLastSuccess') +
      td(fresh, { field: 'fresh', cls: s.stale ? 'stale' : fresh === 'ok' ? 'fresh' : '' }) +
      lastRun(s, now) +
      lastError(s, now) +
      '</tr>'
    );
  });
  return scroll(
    table(
      'freshness',
      [
        'store',
        'stream',
        'last success',
        'age',
        ['rows', 'n'],
        'watermark',
        'last full scan',
        'cursor in progress',
        ['rejections', 'n'],
        'fresh',
        'last run',
        'last error',
      ],
      rows,
    ),
  );
}

const scroll = (html: string) => `<div class="scroll">${html}</div>`;

/** As `status` words it: ok, or what the last run did to the stream (FAILED, INTERRUPTED, SKIPPED). */
function lastRun(s: ReportStream, now: number): string {
  if (!s.lastRun) return td('', { field: 'lastRun' });
  const run = s.lastRun;
  return `<td data-field="lastRun" class="${s.failing ? 'failed' : 'fresh'}" data-sort="${esc(run.at)}" title="${esc(`${run.command} run ${run.runId} at ${run.at}, ${ageText(run.at, now)} ago`)}">${esc(lastRunText(s))}</td>`;
}

/**
 * The error that makes the stream fail now, or one of the last RECENT_ERROR_DAYS that a later run got past:
 * the errors `status` prints under its table.
 */
function lastError(s: ReportStream, now: number): string {
  const e = shownLastError(s, now);
  if (!e) return td('', { field: 'lastError' });
  return td(`${e.outcome} at ${e.at} (${errorRunText(e)})${completedSinceText(s)}: ${e.error ?? ''}`, {
    field: 'lastError',
    cls: s.failing ? 'failed' : '',
  });
}

const OUTCOMES = ['succeeded', 'completed_with_rejections', 'partial', 'failed', 'interrupted', 'running'];

function runLabel(run: ReportRun): string {
  return `${run.startedAt} ${run.command}${run.store ? ` ${run.store}` : ''} (${run.outcome ?? 'running'})`;
}

function runHistory(data: ReportData): string {
  if (data.runs.length === 0) return '<p class="note">No runs recorded yet.</p>';
  const runs = data.runs;
  const axis: [string, string] = [runs[0]!.startedAt.slice(0, 16), runs.at(-1)!.startedAt.slice(0, 16)];
  const bars = (pick: (r: ReportRun) => number | null): Bar[] =>
    runs.map((r) => ({ value: pick(r), label: runLabel(r), kind: r.outcome ?? 'running' }));
  const charts = [
    barChart(
      'chart-duration',
      'Duration',
      ' s',
      bars((r) => r.seconds),
      axis,
    ),
    barChart(
      'chart-requests',
      'API requests',
      '',
      bars((r) => r.requests),
      axis,
    ),
    barChart(
      'chart-records',
      'Records stored',
      '',
      bars((r) => r.records),
      axis,
    ),
    barChart(
      'chart-rejections',
      'Rejections',
      '',
      bars((r) => r.rejections),
      axis,
    ),
    barChart(
      'chart-429',
      '429 Too Many Requests',
      '',
      bars((r) => r.rateLimited),
      axis,
    ),
  ];
  const legend = OUTCOMES.map(
    (o) =>
      `<span><i class="${o}" style="background: var(--${o === 'succeeded' ? 'ok' : o === 'failed' ? 'bad' : o === 'interrupted' ? 'idle' : o === 'running' ? 'run' : 'warn'})"></i>${esc(o.replace(/_/g, ' '))}</span>`,
  ).join('');
  const rows = [...runs]
    .reverse()
    .map(
      (r) =>
        `<tr data-run="${esc(r.runId)}">` +
        td(r.startedAt, { cls: 'code', field: 'startedAt' }) +
        td(r.store ?? '(all)', { field: 'store' }) +
        td(r.command, { field: 'command' }) +
        td(r.mode ?? '', { field: 'mode' }) +
        td((r.outcome ?? 'running').replace(/_/g, ' '), { field: 'outcome', cls: r.outcome ?? '' }) +
        num(r.seconds === null ? null : Math.round(r.seconds * 10) / 10, 'seconds') +
        num(r.requests, 'requests') +
        num(r.retries, 'retries') +
        num(r.rateLimited, 'rateLimited') +
        num(r.records, 'records') +
        num(r.rejections, 'rejections') +
        td(r.error ?? '', { field: 'error' }) +
        td(r.runId, { cls: 'code', field: 'runId' }) +
        '</tr>',
    );
  return [
    `<p class="note">The latest ${runs.length} runs, oldest on the left; hover a bar for its run. A grey stub: the run did not record that number (an ingest sends no requests; a run recorded by an older store-sync has no count of 429s).</p>`,
    `<p class="legend">${legend}</p>`,
    `<div class="charts">${charts.join('')}</div>`,
    '<h3>Runs, newest first</h3>',
    '<div class="scroll">',
    table(
      'runs',
      [
        'started',
        'store',
        'command',
        'mode',
        'outcome',
        ['seconds', 'n'],
        ['requests', 'n'],
        ['retries', 'n'],
        ['429s', 'n'],
        ['records', 'n'],
        ['rejections', 'n'],
        'error',
        'run',
      ],
      rows,
    ),
    '</div>',
  ].join('');
}

function tableSizes(data: ReportData): string {
  const rows = data.tables.map(
    (t) =>
      `<tr data-table="${esc(t.table)}">` +
      td(t.family, { field: 'family' }) +
      td(t.table, { cls: 'code', field: 'table' }) +
      num(t.rows, 'rows') +
      num(t.deleted, 'deleted') +
      '</tr>',
  );
  return [
    `<p class="note">Rows of every store, soft-deleted ones included (the second number: rows a full scan no longer returned). The warehouse file: <b id="warehouse-bytes">${esc(bytes(data.warehouseBytes))}</b> (DuckDB gives no cheap size per table).</p>`,
    table('tables', ['family', 'table', ['rows', 'n'], ['soft-deleted', 'n']], rows),
  ].join('');
}

function newFields(data: ReportData): string {
  const recent = data.newFields.reduce((n, e) => n + e.fields.length, 0);
  const intro = `<p class="note"><b id="new-fields-count">${recent}</b> field ${recent === 1 ? 'path' : 'paths'} no column maps first seen in the last ${data.newFieldsDays} days (what <code>status</code> lists); their values are in each row's <code>_extra</code>. Every such field of <code>_schema_changes</code> below, the new ones first${data.schemaChanges.length >= 300 ? ' (the first 300)' : ''}.</p>`;
  if (data.schemaChanges.length === 0) return `${intro}<p class="note">None.</p>`;
  const rows = data.schemaChanges.map(
    (c) =>
      `<tr${c.recent ? ' class="recent"' : ''}>` +
      td(c.store, { field: 'store' }) +
      td(c.table, { cls: 'code', field: 'table' }) +
      td(c.fieldPath, { cls: 'code', field: 'fieldPath' }) +
      td(c.recent ? 'new' : '', { field: 'recent' }) +
      td(c.firstSeenAt, { cls: 'code', field: 'firstSeenAt' }) +
      td(c.lastSeenAt ?? '', { cls: 'code', field: 'lastSeenAt' }) +
      num(c.count, 'count') +
      td(c.example ?? '', { cls: 'code', field: 'example' }) +
      '</tr>',
  );
  return (
    intro +
    '<div class="scroll">' +
    table(
      'schema-changes',
      ['store', 'table', 'field path', 'new', 'first seen', 'last seen', ['rows', 'n'], 'example'],
      rows,
    ) +
    '</div>'
  );
}

function rejections(data: ReportData): string {
  const total = data.rejectionGroups.reduce((n, g) => n + g.count, 0);
  const intro = `<p class="note"><b id="rejections-total">${total}</b> rows of <code>_rejected_records</code>: <i>record</i> (not loaded) or <i>field</i> (loaded with that field NULL, its value in <code>_extra</code>). Values are shown as received, as text.</p>`;
  if (total === 0) return `${intro}<p class="note">None.</p>`;
  const groups = data.rejectionGroups.map(
    (g) =>
      '<tr>' +
      td(g.store, { field: 'store' }) +
      td(g.stream, { field: 'stream' }) +
      td(g.stage ?? '', { field: 'stage' }) +
      td(g.level, { field: 'level' }) +
      num(g.count, 'count') +
      td(g.lastAt, { cls: 'code', field: 'lastAt' }) +
      '</tr>',
  );
  const examples = data.rejections.map(
    (r) =>
      `<details class="rejection"><summary><code>${esc(r.at)}</code> ${esc(r.store)} / ${esc(r.stream)} · ${esc(r.stage ?? '')} · ${esc(r.level)}${r.key ? ` · key <code>${esc(r.key)}</code>` : ''}: ${esc(r.reason.length > 160 ? `${r.reason.slice(0, 160)}…` : r.reason)}</summary>` +
      `<div>reason: <span class="reason">${esc(r.reason)}</span></div>` +
      (r.source ? `<div>source: <code>${esc(r.source)}</code></div>` : '') +
      (r.runId ? `<div>run: <code>${esc(r.runId)}</code></div>` : '') +
      (r.payload !== null
        ? `<pre class="payload">${esc(r.payload)}${r.payloadCut ? '\n… (cut here: the whole payload is in _rejected_records.payload and the raw landing)' : ''}</pre>`
        : '') +
      '</details>',
  );
  return [
    intro,
    table('rejection-groups', ['store', 'stream', 'stage', 'level', ['rows', 'n'], 'last'], groups),
    `<h3>The latest ${data.rejections.length}</h3>`,
    `<div id="rejection-examples">${examples.join('')}</div>`,
  ].join('');
}

function spools(data: ReportData): string {
  if (data.spools.length === 0) return '';
  const rows = data.spools.map(
    (s) =>
      `<tr data-store="${esc(s.store)}">` +
      td(s.store, { field: 'store' }) +
      td(s.spoolDir, { cls: 'code', field: 'spoolDir' }) +
      num(s.files, 'files') +
      num(s.events, 'events') +
      td(bytes(s.bytes), { cls: 'n', sort: s.bytes, field: 'bytes' }) +
      num(s.openEvents, 'openEvents') +
      td(s.oldestEventAt ?? '', { cls: 'code', field: 'oldestEventAt' }) +
      '</tr>',
  );
  return [
    '<h2 id="receiver">Receiver spools</h2>',
    '<p class="note">Webhook events received and not yet drained into the warehouse (a sync drains them; see docs/receiver.md).</p>',
    table(
      'spools',
      [
        'store',
        'spool',
        ['files waiting', 'n'],
        ['events waiting', 'n'],
        ['bytes', 'n'],
        ['in the open file', 'n'],
        'oldest event',
      ],
      rows,
    ),
  ].join('');
}

/** The model's tables by family, with the key columns that hold each parent's key. */
export function diagramTables(): [string, DiagramTable[]][] {
  const relations = tableRelations();
  return tableFamilies().map(([family, defs]) => [
    family,
    defs.map((t) => ({
      name: t.name,
      key: t.key,
      foreign: relations.filter((r) => r.child === t.name).flatMap((r) => r.columns.map(([c]) => c)),
      parent: t.parent ?? null,
    })),
  ]);
}

export function renderReport(data: ReportData): string {
  const now = Date.parse(data.generatedAt);
  const stale = data.streams.filter((s) => s.stale).length;
  const failing = data.streams.filter((s) => s.failing).length;
  const rejected = data.streams.reduce((n, s) => n + s.rejectionsSinceLastSuccess, 0);
  const recent = data.newFields.reduce((n, e) => n + e.fields.length, 0);
  const waiting = data.spools.reduce((n, s) => n + s.events + s.openEvents, 0);
  const card = (id: string, value: string | number, label: string) =>
    `<div class="card" id="${id}"><b>${esc(value)}</b>${esc(label)}</div>`;
  const csp = `default-src 'none'; style-src 'unsafe-inline'; script-src '${scriptHash}'; img-src data:`;
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${csp}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>store-sync report: ${esc(data.warehouse)}</title>
<style>${STYLE}</style></head>
<body>
<h1>store-sync report</h1>
<p class="meta">Warehouse <code id="warehouse">${esc(data.warehouse)}</code>${data.store ? `, store <b>${esc(data.store)}</b>` : ''}; written <code id="generated">${esc(data.generatedAt)}</code>, opened <code id="opened"></code>. Freshness bound: ${esc(data.freshnessHours)} h.</p>
<nav><a href="#freshness-h">Freshness</a><a href="#runs-h">Runs</a><a href="#tables-h">Tables</a><a href="#fields-h">New fields</a><a href="#rejections-h">Rejections</a>${data.spools.length ? '<a href="#receiver">Receiver</a>' : ''}<a href="#diagram-h">Tables and keys</a></nav>
<div class="cards">${card('card-streams', data.streams.length, 'streams')}${card('card-stale', stale, 'stale')}${card('card-failing', failing, 'failing (last run)')}${card('card-rejections', rejected, 'rejections since last success')}${card('card-new-fields', recent, `new fields (${data.newFieldsDays} days)`)}${card('card-runs', data.runs.length, 'runs shown')}${data.spools.length ? card('card-spool', waiting, 'events waiting in spools') : ''}</div>
<h2 id="freshness-h">Freshness per store and stream</h2>
<p class="note">As <code>store-sync status</code> says it when this file was written: the last success of each stream and its age, rows in its main table (ingested documents: documents read), rejections since the last success, what its last run did, and its last error (while it fails, or from the last ${RECENT_ERROR_DAYS} days). Hover an age for the time since, as of opening this page.</p>
${freshness(data, now)}
<h2 id="runs-h">Run history</h2>
${runHistory(data)}
<h2 id="tables-h">Table sizes</h2>
${tableSizes(data)}
<h2 id="fields-h">New fields</h2>
${newFields(data)}
<h2 id="rejections-h">Rejections</h2>
${rejections(data)}
${spools(data)}
<h2 id="diagram-h">Tables and keys</h2>
<p class="note">Generated from the table model (as the Mermaid diagrams in docs/warehouse.md): each table with its key columns (PK; FK: a key column that holds the parent's key), and a line from each parent down to its children. Every key starts with <code>_store</code>.</p>
<div class="scroll" id="diagram">${tableDiagram(diagramTables())}</div>
<script>${SCRIPT}</script>
</body></html>
`;
}
