import assert from 'node:assert/strict';
import { mkdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { type LoadedPage, openInChromium } from '../report/chromium.js';
import {
  assertCleanError,
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  runCli,
  type StoreEntry,
  tempDir,
  testSandbox,
  writeConfig,
} from './helpers.js';

/**
 * Issue 30 point 4: `store-sync report` on a warehouse made by a real sync against the sandbox and an ingest
 * of store-controlled values meant to break out of HTML. The file opens in a real headless chromium with no
 * error and no request; its numbers (per stream rows, last success, rejections, freshness, new fields) are
 * `status --json`'s on the same warehouse; the hostile values show as text and run nothing.
 */

const FIXTURE = path.join(import.meta.dirname, '..', 'fixtures', 'documents', 'order-2024.json');
const SCRIPT_LINE = '<script>window.__pwned = 1</script>';
const IMG_VALUE = '<img src=x onerror="window.__pwned = 2">';
const WRONG_TOKEN_ENV = 'STORE_SYNC_REPORT_WRONG_TOKEN';
const env = { [WRONG_TOKEN_ENV]: 'not-the-token-4711' };

interface StatusJson {
  freshnessHours: number;
  streams: {
    store: string;
    stream: string;
    lastSuccessAt: string | null;
    rows: number | null;
    rejectionsSinceLastSuccess: number;
    stale: boolean;
    failing: boolean;
    lastRun: { outcome: string } | null;
    lastError: { error: string | null } | null;
  }[];
  newFields: { store: string; table: string; fields: string[] }[];
  receivers: {
    store: string;
    spoolDir: string;
    files: number;
    events: number;
    openEvents: number;
    oldestEventAt: string;
  }[];
}

interface ShownStream {
  store: string;
  stream: string;
  lastSuccessAt: string;
  rows: string;
  rejections: string;
  fresh: string;
  lastRun: string;
  lastError: string;
}

/** The page's freshness table, cell by cell as shown (numbers with their grouping spaces removed). */
const FRESHNESS = `[...document.querySelectorAll('#freshness tbody tr')].map((tr) => {
  const cell = (f) => tr.querySelector('[data-field="' + f + '"]').textContent.replace(/\\u202f/g, '');
  return { store: cell('store'), stream: cell('stream'), lastSuccessAt: cell('lastSuccessAt'), rows: cell('rows'),
    rejections: cell('rejectionsSinceLastSuccess'), fresh: cell('fresh'), lastRun: cell('lastRun'),
    lastError: cell('lastError') };
})`;

describe('store-sync report: one HTML file, opened in chromium, agreeing with status --json', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let sandbox: Sandbox;
  let config: string;
  let warehouse: string;
  let page: LoadedPage | undefined;
  let status: StatusJson;
  const out = () => path.join(dir, 'out', 'report.html');

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    sandbox = await testSandbox();
    warehouse = path.join(dir, 'data', 'warehouse.duckdb');
    // With a receiver, whose spool (beside the warehouse) the report shows as status does.
    const store: StoreEntry = {
      name: 'shop',
      baseUrl: sandbox.baseUrl,
      receiver: { secretEnv: 'STORE_SYNC_REPORT_TEST_SECRET' },
    };
    // And a store whose token the API refuses: its streams fail, which status and the report both say.
    const broken: StoreEntry = { name: 'broken', baseUrl: sandbox.baseUrl, tokenEnv: WRONG_TOKEN_ENV };
    config = await writeConfig(dir, { warehouse, stores: [store, broken] });
  });

  after(async () => {
    killChildren();
    await page?.close();
    await sandbox?.close();
    await cleanup?.();
  });

  it('builds a warehouse: a sync of two stores (one refused), then an ingest with a field no column maps and a line that is not JSON', async () => {
    const sync = await runCli(['sync', '--config', config], { cwd: dir, env, timeoutMs: 120_000 });
    // Exit 1: the store whose token is refused failed; the other synced.
    assertExit(sync, 1);
    const order = JSON.parse(await readFile(FIXTURE, 'utf8')) as Record<string, unknown>;
    const file = path.join(dir, 'hostile.ndjson');
    await writeFile(file, `${JSON.stringify({ ...order, zz_note: IMG_VALUE })}\n${SCRIPT_LINE}\n`);
    const ingest = await runCli(['ingest', file, '--config', config, '--store', 'shop'], { cwd: dir });
    // Exit 3: the line that is not JSON is rejected, the order loaded.
    assertExit(ingest, 3);
    // Events the receiver spooled after the sync: a closed file (the next drain's) and the open one.
    const spool = path.join(dir, 'data', 'spool', 'shop');
    await mkdir(spool, { recursive: true });
    const event = `${JSON.stringify({ ...order, number: 'spooled-1' })}\n`;
    await writeFile(path.join(spool, 'events-20260101T000000000Z-000001-abcdef.ndjson'), event.repeat(3));
    await writeFile(
      path.join(spool, 'events-20260101T000100000Z-000002-abcdef.ndjson.open'),
      event.repeat(2),
    );
    const shown = await runCli(['status', '--json', '--config', config], { cwd: dir, env });
    // Exit 3: the refused store's streams are failing.
    assertExit(shown, 3);
    status = JSON.parse(shown.stdout) as StatusJson;
    assert.ok(status.streams.some((s) => s.stream === 'documents' && s.rejectionsSinceLastSuccess === 1));
    assert.ok(status.newFields.some((e) => e.table === 'orders' && e.fields.includes('zz_note')));
    assert.ok(status.streams.some((s) => s.store === 'broken' && s.failing && s.lastError?.error));
  });

  it('writes the report where --out says and prints its path', async () => {
    const result = await runCli(['report', '--config', config, '--out', out()], { cwd: dir, env });
    assertExit(result, 0);
    assert.equal(result.stdout, `${out()}\n`);
    const html = await readFile(out(), 'utf8');
    // Self-contained: nothing is fetched from anywhere (the SVG namespace is a name, not a request).
    assert.doesNotMatch(
      html.replaceAll('xmlns="http://www.w3.org/2000/svg"', ''),
      /(src|href)=["']?(https?:)?\/\//i,
    );
    assert.doesNotMatch(html, /@import|url\(/);
  });

  it('renders in chromium without errors and without a single request', async () => {
    page = await openInChromium(out());
    assert.deepEqual(page.errors, []);
    assert.deepEqual(page.requests, []);
    // The page's script ran (the Content-Security-Policy allows it by its hash, and nothing else).
    assert.match(
      await page.evaluate<string>("document.getElementById('opened').textContent"),
      /^\d{4}-\d\d-\d\dT/,
    );
    assert.equal(await page.evaluate<number>('document.scripts.length'), 1);
  });

  it('shows per stream what status --json says: last success, rows, rejections, freshness, last run and error', async () => {
    const shown = await page!.evaluate<ShownStream[]>(FRESHNESS);
    const expected = status.streams.map((s) => ({
      store: s.store,
      stream: s.stream,
      lastSuccessAt: s.lastSuccessAt ?? '',
      rows: s.rows === null ? '' : String(s.rows),
      rejections: String(s.rejectionsSinceLastSuccess),
      fresh: s.stream === 'documents' ? '-' : s.stale ? 'STALE' : 'ok',
      lastRun: s.lastRun ? (s.failing ? s.lastRun.outcome.toUpperCase() : 'ok') : '',
    }));
    assert.ok(expected.length >= 11, 'the five default streams of both stores, and the documents');
    assert.deepEqual(
      shown.map(({ lastError: _lastError, ...rest }) => rest),
      expected,
    );
    // A failing stream's error, as stored (and masked) in _sync_runs, is in its row.
    for (const [i, s] of status.streams.entries()) {
      if (s.failing) assert.ok(shown[i]!.lastError.endsWith(`: ${s.lastError!.error}`), shown[i]!.lastError);
      else if (!s.lastError) assert.equal(shown[i]!.lastError, '');
    }
    assert.ok(shown.some((s) => s.store === 'broken' && s.lastRun === 'FAILED'));
    const newFields = status.newFields.reduce((n, e) => n + e.fields.length, 0);
    assert.equal(
      await page!.evaluate<string>("document.getElementById('new-fields-count').textContent"),
      String(newFields),
    );
    const cards = await page!.evaluate<string[]>(
      "['card-streams', 'card-stale', 'card-failing', 'card-rejections', 'card-new-fields'].map((id) => document.querySelector('#' + id + ' b').textContent)",
    );
    assert.deepEqual(cards, [
      String(status.streams.length),
      String(status.streams.filter((s) => s.stale).length),
      String(status.streams.filter((s) => s.failing).length),
      String(status.streams.reduce((n, s) => n + s.rejectionsSinceLastSuccess, 0)),
      String(newFields),
    ]);
  });

  it("shows the receiver's spool as status --json does", async () => {
    const spools = await page!.evaluate<Record<string, string>[]>(
      `[...document.querySelectorAll('#spools tbody tr')].map((tr) => Object.fromEntries(
        [...tr.querySelectorAll('[data-field]')].map((td) => [td.dataset.field, td.textContent.replace(/\\u202f/g, '')])))`,
    );
    assert.equal(status.receivers.length, 1);
    assert.deepEqual(
      spools.map((s) => [s.store, s.spoolDir, s.files, s.events, s.openEvents, s.oldestEventAt]),
      status.receivers.map((r) => [
        r.store,
        r.spoolDir,
        String(r.files),
        String(r.events),
        String(r.openEvents),
        r.oldestEventAt,
      ]),
    );
    assert.deepEqual(
      spools.map((s) => [s.files, s.events, s.openEvents, s.oldestEventAt]),
      [['1', '3', '2', '2026-01-01T00:00:00.000Z']],
    );
  });

  it('lists the runs with their numbers, charts them, and sizes every table', async () => {
    const runs = await page!.evaluate<
      { store: string; command: string; requests: string; outcome: string }[]
    >(
      `[...document.querySelectorAll('#runs tbody tr')].map((tr) => ({
        store: tr.querySelector('[data-field="store"]').textContent,
        command: tr.querySelector('[data-field="command"]').textContent,
        requests: tr.querySelector('[data-field="requests"]').textContent.replace(/\\u202f/g, ''),
        outcome: tr.querySelector('[data-field="outcome"]').textContent }))`,
    );
    assert.deepEqual(
      runs.map((r) => [r.store, r.command, r.outcome]),
      [
        ['shop', 'ingest', 'completed with rejections'],
        ['broken', 'sync', 'failed'],
        ['shop', 'sync', 'succeeded'],
      ],
    );
    // The store that synced sent the requests the sandbox answered with 200; the refused one those it
    // answered with 401 (at least: one sent as the others were refused may be aborted before it arrives).
    const { byStatus } = sandbox.stats();
    assert.equal(runs[2]!.requests, String(byStatus['200']));
    assert.ok(
      Number(runs[1]!.requests) >= (byStatus['401'] ?? 0) && byStatus['401']! > 0,
      JSON.stringify(byStatus),
    );
    // One bar per run in each of the five charts.
    const bars = await page!.evaluate<number[]>(
      "['duration', 'requests', 'records', 'rejections', '429'].map((c) => document.querySelectorAll('#chart-' + c + ' rect.bar').length)",
    );
    assert.deepEqual(bars, [3, 3, 3, 3, 3]);
    const subscriptions = await page!.evaluate<string>(
      'document.querySelector(\'#tables tr[data-table="subscriptions"] [data-field="rows"]\').textContent.replace(/\\u202f/g, \'\')',
    );
    const fromStatus = status.streams.find((s) => s.store === 'shop' && s.stream === 'subscriptions')!.rows;
    assert.equal(subscriptions, String(fromStatus));
  });

  it('shows store-controlled values as text: a <script> in a rejected line and an <img> in a new field run nothing', async () => {
    const payloads = await page!.evaluate<string[]>(
      "[...document.querySelectorAll('#rejection-examples pre.payload')].map((p) => p.textContent)",
    );
    assert.ok(
      payloads.some((p) => p.includes(SCRIPT_LINE)),
      `the rejected line is shown as it was: ${JSON.stringify(payloads)}`,
    );
    const examples = await page!.evaluate<string[]>(
      '[...document.querySelectorAll(\'#schema-changes [data-field="example"]\')].map((td) => td.textContent)',
    );
    // _schema_changes keeps the first value seen as JSON.
    assert.ok(examples.includes(JSON.stringify(IMG_VALUE)), JSON.stringify(examples));
    assert.equal(await page!.evaluate<unknown>('window.__pwned ?? null'), null);
    assert.equal(await page!.evaluate<number>("document.querySelectorAll('img').length"), 0);
  });

  it('draws the tables and keys of the model', async () => {
    const diagram = await page!.evaluate<{ tables: number; edges: string[] }>(
      `({ tables: document.querySelectorAll('#diagram g.table').length,
          edges: [...document.querySelectorAll('#diagram path.edge')].map((e) => e.dataset.from + '>' + e.dataset.to) })`,
    );
    const { tableDefinitions } = await import('../../src/model/index.js');
    assert.equal(diagram.tables, tableDefinitions.length);
    assert.ok(diagram.edges.includes('orders>order_lines'));
    assert.ok(diagram.edges.includes('order_lines>order_line_tax_lines'));
    assert.equal(diagram.edges.length, tableDefinitions.filter((t) => t.parent).length);
  });

  it('writes beside the warehouse by default', async () => {
    const result = await runCli(['report', '--config', config], { cwd: dir, env });
    assertExit(result, 0);
    const file = path.join(dir, 'data', 'report.html');
    assert.equal(result.stdout, `${file}\n`);
    assert.ok((await stat(file)).size > 10_000);
  });

  it('refuses a folder as --out, saying so', async () => {
    const result = await runCli(['report', '--config', config, '--out', dir], { cwd: dir, env });
    assertCleanError(
      result,
      2,
      /cannot write the report to \S+: it is a folder; pass --out with a writable file path/,
    );
  });

  it('printed no token and no escapes', () => {
    assertNoSecretsOrEscapes();
  });
});
