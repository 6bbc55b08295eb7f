import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { describe, it } from 'node:test';
import { registerSecret } from '../../src/log.js';
import { mermaidErDiagram, tableFamilies, tableRelations } from '../../src/model/docs.js';
import { tableDefinitions } from '../../src/model/index.js';
import { niceMax } from '../../src/report/charts.js';
import { type ReportData, recordsOfCounts } from '../../src/report/data.js';
import { renderReport } from '../../src/report/html.js';

/**
 * The report's HTML from hand-made data: every store-controlled text is escaped wherever it appears, a
 * registered secret is masked, the page's only script is the one its Content-Security-Policy names by hash;
 * and the pieces the page is drawn from (the model's parent links, the records of a run's counts).
 */

const HOSTILE = '<script>alert(1)</script>';
const ATTRIBUTE = '" onmouseover="alert(2)';
const SECRET = 'report-test-secret-9Zq4';

function hostileData(): ReportData {
  const at = '2026-01-02T03:04:05.000Z';
  return {
    generatedAt: '2026-01-02T04:00:00.000Z',
    warehouse: `/tmp/${HOSTILE}.duckdb`,
    warehouseBytes: 12_345,
    freshnessHours: 36,
    store: null,
    streams: [
      {
        store: `shop${ATTRIBUTE}`,
        stream: 'orders',
        lastSuccessAt: at,
        rows: 1234,
        watermark: HOSTILE,
        lastFullScanAt: null,
        cursorInProgress: `https://shop.example/api/orders/?cursor=${encodeURIComponent(HOSTILE)}`,
        rejectionsSinceLastSuccess: 2,
        lastRun: null,
        lastError: null,
        stale: false,
        failing: false,
      },
    ],
    newFieldsDays: 7,
    newFields: [{ store: 'shop', table: 'orders', fields: [HOSTILE], firstSeenAt: at }],
    runs: [
      {
        runId: `r1${ATTRIBUTE}`,
        store: 'shop',
        command: 'sync',
        mode: 'incremental',
        startedAt: at,
        finishedAt: at,
        seconds: 3.5,
        outcome: 'failed',
        requests: 10,
        retries: 1,
        rateLimited: null,
        records: 100,
        rejections: 2,
        error: `boom ${HOSTILE} token ${SECRET}`,
      },
    ],
    tables: [{ table: 'orders', family: 'Orders', rows: 1234, deleted: null }],
    schemaChanges: [
      {
        store: 'shop',
        table: 'orders',
        fieldPath: HOSTILE,
        firstSeenAt: at,
        lastSeenAt: at,
        count: 3,
        example: JSON.stringify(`${HOSTILE}${ATTRIBUTE}`),
        recent: true,
      },
    ],
    rejectionGroups: [
      { store: 'shop', stream: 'orders', stage: 'parse', level: 'record', count: 2, lastAt: at },
    ],
    rejections: [
      {
        store: 'shop',
        stream: 'orders',
        stage: 'parse',
        level: 'record',
        key: HOSTILE,
        reason: `not JSON: ${HOSTILE}`,
        source: `file.ndjson:1 ${HOSTILE}`,
        payload: `${HOSTILE} ${SECRET} ]]> <!--`,
        payloadCut: false,
        at,
        runId: 'r1',
      },
    ],
    spools: [
      {
        store: 'shop',
        spoolDir: `/tmp/${HOSTILE}`,
        files: 1,
        events: 2,
        bytes: 300,
        openEvents: 0,
        oldestEventAt: at,
        oldestEventAgeSeconds: 60,
      },
    ],
  };
}

describe('the report page', () => {
  registerSecret(SECRET);
  const html = renderReport(hostileData());

  it('escapes every store-controlled text: no tag or attribute of theirs reaches the markup', () => {
    assert.equal(html.match(/<script/g)?.length, 1, 'only the page script');
    assert.doesNotMatch(html, /alert\(1\)<\/script>/);
    assert.doesNotMatch(html, /" onmouseover="/);
    assert.match(html, /&lt;script&gt;alert\(1\)&lt;\/script&gt;/);
    assert.match(html, /&quot; onmouseover=&quot;alert\(2\)/);
    // The field path, the example, the reason, the key, the payload, the spool folder, the error, the store.
    assert.ok((html.match(/&lt;script&gt;alert\(1\)&lt;\/script&gt;/g)?.length ?? 0) >= 9);
  });

  it('masks a registered secret wherever a value holds it', () => {
    assert.ok(!html.includes(SECRET));
    assert.match(html, /boom &lt;script&gt;alert\(1\)&lt;\/script&gt; token \*\*\*/);
  });

  it('runs only its own script, named by hash in its Content-Security-Policy, and fetches nothing', () => {
    const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1];
    assert.ok(csp);
    assert.match(csp, /default-src 'none'/);
    const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;
    const hash = createHash('sha256').update(script).digest('base64');
    assert.ok(csp.includes(`script-src 'sha256-${hash}'`), csp);
    assert.doesNotMatch(
      html.replaceAll('xmlns="http://www.w3.org/2000/svg"', ''),
      /(src|href)=["']?(https?:)?\/\//i,
    );
  });

  it('marks a number a run did not record as such in its chart, not as zero', () => {
    const chart = /<figure class="chart" id="chart-429">([\s\S]*?)<\/figure>/.exec(html)![1]!;
    assert.match(chart, /class="bar missing"/);
    assert.match(chart, /: not recorded<\/title>/);
  });
});

describe('what the page is drawn from', () => {
  it("each parent link: the child's key begins with its parent's key, column for column", () => {
    const byName = new Map(tableDefinitions.map((t) => [t.name, t]));
    const relations = tableRelations();
    assert.equal(relations.length, tableDefinitions.filter((t) => t.parent).length);
    for (const r of relations) {
      const child = byName.get(r.child)!;
      const parent = byName.get(r.parent)!;
      assert.deepEqual(
        r.columns.map(([, p]) => p),
        parent.key,
      );
      assert.deepEqual(
        r.columns.map(([c]) => c),
        child.key.slice(0, parent.key.length),
      );
    }
    assert.deepEqual(relations.find((r) => r.child === 'order_line_tax_lines')?.columns, [
      ['_store', '_store'],
      ['order_number', 'order_number'],
      ['line_id', 'id'],
    ]);
  });

  it('a parent link the key does not carry is refused, naming the table', () => {
    const [orders, lines] = [
      tableDefinitions.find((t) => t.name === 'orders')!,
      tableDefinitions.find((t) => t.name === 'order_lines')!,
    ];
    assert.throws(
      () => tableRelations([orders, { ...lines, key: ['_store'] }]),
      /table order_lines: parent orders has a key as long as its child's/,
    );
  });

  it('the Mermaid diagrams name every table once, with one edge per parent link', () => {
    const text = tableFamilies()
      .map(([, tables]) => mermaidErDiagram(tables))
      .join('\n');
    for (const t of tableDefinitions) assert.equal(text.split(`\n  ${t.name} {\n`).length, 2, t.name);
    assert.equal(text.match(/\|\|--o\{/g)?.length, tableRelations().length);
    assert.match(text, /order_lines \|\|--o\{ order_line_tax_lines : "order_number, line_id → id"/);
    // Mermaid attribute types are single words.
    assert.doesNotMatch(text, /^ {4}\S*[()[\],]\S* /m);
  });

  it("a run's records, from the counts each command writes", () => {
    // sync: per stream
    assert.equal(
      recordsOfCounts({ orders: { records: 5, rejections: 1 }, products: { records: 7, rejections: 0 } }),
      12,
    );
    // ingest and drain: the summary under `documents`, whose files are not counted again
    assert.equal(recordsOfCounts({ documents: { documents: 3, records: 9, files: [{ records: 9 }] } }), 9);
    // the demo's ingest, and a rebuild
    assert.equal(recordsOfCounts({ documents: 4, rows: 10, rejections: 0 }), 4);
    assert.equal(recordsOfCounts({ tables: 40, records: 250, rows: 900, rejections: 0 }), 250);
    // a run that failed before counting
    assert.equal(recordsOfCounts({}), null);
    assert.equal(recordsOfCounts(null), null);
  });

  it('chart axes end on a round number at or above the largest value', () => {
    assert.deepEqual([0, 1, 7, 10, 11, 99, 120, 2001].map(niceMax), [1, 1, 10, 10, 20, 100, 200, 5000]);
  });
});
