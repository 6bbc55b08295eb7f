import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { type BarState, composeBar, streamBar } from '../../src/cli/progress.js';
import type { Sandbox } from '../../src/sandbox/index.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  BIN,
  killChildren,
  REPO_ROOT,
  runCli,
  TOKEN,
  TOKEN_ENV,
  tempDir,
  testSandbox,
} from './helpers.js';

/**
 * Progress bars on a real terminal (issue 30, point 1): the CLI runs inside tmux at 80 and 200 columns against
 * the embedded sandbox, and the pane is read back. A bar never wraps (each fits the width), every log line is
 * there whole (wrapped by the terminal, never cut: at 80 columns `requests=10` was once printed where the
 * summary said 109), a second full scan's bar says its total is an estimate, ingest counts bytes, rebuild
 * blocks and export tables; and with stderr on a pipe there are no bars at all.
 */

const SOCKET = `store-sync-progress-${process.pid}`;
const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents');
/** Documents that all load (the folder's others include some made to be rejected). */
const DOCUMENTS = ['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) => path.join(FIXTURES, f));
const BAR = /[\u2588\u2591]/;

const tmux = (...args: string[]) => execFileSync('tmux', ['-L', SOCKET, ...args], { encoding: 'utf8' });
const quote = (value: string) => `'${value.replaceAll("'", `'\\''`)}'`;

interface Screen {
  /** The pane's rows as the terminal shows them, history included. */
  rows: string[];
  /** The same with the rows the terminal wrapped joined back into the lines written. */
  lines: string[];
  stdout: string;
}

let sessions = 0;

/** Runs the CLI with stderr on a tmux pane `width` columns wide and stdout in a file; returns the pane. */
async function onTerminal(args: string[], width: number, dir: string, stdin?: string): Promise<Screen> {
  const name = `run${++sessions}`;
  const out = path.join(dir, `${name}.stdout`);
  const command = [
    `cd ${quote(REPO_ROOT)}`,
    `${stdin ? `cat ${quote(stdin)} | ` : ''}env ${TOKEN_ENV}=${TOKEN} ${quote(process.execPath)} ${quote(BIN)} ${args.map(quote).join(' ')} > ${quote(out)}`,
    'echo "__exit=$?"',
    'sleep 600',
  ].join('; ');
  tmux('new-session', '-d', '-s', name, '-x', String(width), '-y', '40', command);
  try {
    const deadline = Date.now() + 120_000;
    let joined = '';
    for (;;) {
      joined = tmux('capture-pane', '-p', '-J', '-S', '-', '-t', name);
      if (/__exit=\d+/.test(joined)) break;
      if (Date.now() > deadline) assert.fail(`store-sync ${args.join(' ')} did not finish:\n${joined}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const rows = tmux('capture-pane', '-p', '-S', '-', '-t', name).split('\n');
    const lines = joined.split('\n');
    const code = Number(/__exit=(\d+)/.exec(joined)![1]);
    assert.equal(code, 0, `store-sync ${args.join(' ')} exited ${code}:\n${joined}`);
    return { rows, lines, stdout: await readFile(out, 'utf8') };
  } finally {
    tmux('kill-session', '-t', name);
  }
}

/** Every bar fits the width (none was wrapped onto a second row), and there is at least one. */
function assertBarsFit(screen: Screen, width: number): string[] {
  const bars = screen.lines.filter((line) => BAR.test(line));
  assert.ok(bars.length > 0, `no bar on the terminal:\n${screen.rows.join('\n')}`);
  for (const bar of bars)
    assert.ok(bar.trimEnd().length < width, `a bar of ${bar.trimEnd().length} columns at ${width}: ${bar}`);
  return bars;
}

/** The summary table's rows (stdout) and the log lines (the pane) say the same counts, in full. */
function assertLogLinesWhole(screen: Screen): void {
  const total = /succeeded in [\d.]+ s, (\d+) requests/.exec(screen.stdout);
  assert.ok(total, `a summary on stdout:\n${screen.stdout}`);
  const done = screen.lines.find((line) => line.startsWith('sync.done '));
  assert.ok(done, `the sync.done line:\n${screen.lines.join('\n')}`);
  assert.match(done, new RegExp(`outcome=succeeded requests=${total[1]} retries=0$`));
  const streams = screen.stdout
    .split('\n')
    .map((line) => line.split(/\s{2,}/))
    .filter((cells) => cells[2] === 'ok');
  assert.ok(streams.length >= 5, `every stream in the summary:\n${screen.stdout}`);
  for (const [, stream, , pages, records, rejections, requests] of streams) {
    const line = screen.lines.find((l) => l.startsWith('stream.done ') && l.includes(` stream=${stream} `));
    assert.ok(line, `the stream.done line of ${stream}`);
    assert.ok(
      line.endsWith(
        ` stream=${stream} pages=${pages} records=${records} rejections=${rejections} requests=${requests}`,
      ),
      `the whole stream.done line of ${stream}: ${line}`,
    );
  }
}

describe('a bar composed for a width', () => {
  const estimated = streamBar(
    {
      stream: 'fulfillment_orders',
      pages: 18,
      records: 450,
      rejections: 0,
      requests: 19,
      retries: 2,
      rateLimited: 1,
      slicesDone: 0,
      slicesTotal: 1,
      passKind: 'full',
      passPages: 30,
      pagesEstimate: 1200,
    },
    6,
  );
  const bytes: BarState = {
    key: 'ingest',
    label: 'ingest',
    value: 12 * 1024 * 1024,
    total: 48 * 1024 * 1024,
    unit: 'bytes',
    fields: ['20000 documents', '3/12 files', '5000 docs/s', '0 rejected'],
    secondsLeft: 9,
  };

  it('never exceeds the width, and keeps the count and the ETA before any other field', () => {
    for (const bar of [estimated, bytes])
      for (let width = 10; width <= 220; width++) {
        const line = composeBar(bar, width, 20);
        assert.ok(line.length <= width, `${line.length} > ${width}: ${line}`);
      }
    // 80 columns: the fields go first (the count and the ETA stay), then the bar gets shorter.
    assert.equal(
      composeBar(estimated, 79, 20),
      'fulfillment_orders   [░░░░░░░░░░] 30/~1200 pages (estimate) | ETA 6m30s',
    );
    assert.equal(
      composeBar(estimated, 199, 20),
      'fulfillment_orders   [█░░░░░░░░░░░░░░░░░░░] 30/~1200 pages (estimate) | 450 records | 3.2 req/s | retries 2 | 429s 1 | ETA 6m30s',
    );
    assert.equal(
      composeBar(bytes, 79),
      'ingest [███░░░░░░░] 12.0 MB/48.0 MB | 20000 documents | 3/12 files | ETA 9s',
    );
    // Narrower than the count and its label: the label is cut, with a mark that it was.
    assert.equal(composeBar(estimated, 30, 20), 'fulfillment_orders 30/~1200 p…');
  });
});

describe('progress bars on a terminal', () => {
  let sandbox: Sandbox;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    sandbox = await testSandbox({ pageSize: 25 });
    ({ dir, cleanup } = await tempDir());
    // One tmux server for the whole file, kept alive by a session of its own: a server whose last session was
    // killed exits, and a `new-session` racing with that exit failed with "server exited unexpectedly".
    tmux('new-session', '-d', '-s', 'keeper', 'sleep 3600');
  });

  after(async () => {
    spawnSync('tmux', ['-L', SOCKET, 'kill-server']);
    killChildren();
    await sandbox?.close();
    await cleanup?.();
  });

  const sync = (warehouse: string, ...extra: string[]) => [
    'sync',
    '--base-url',
    sandbox.baseUrl,
    '--token-env',
    TOKEN_ENV,
    '--warehouse',
    warehouse,
    '--rate-limit',
    '0',
    ...extra,
  ];

  for (const width of [80, 200]) {
    it(`sync at ${width} columns: bars fit, log lines whole, and a second full scan estimates its pages`, async () => {
      const warehouse = path.join(dir, `sync-${width}.duckdb`);
      const first = await onTerminal(sync(warehouse), width, dir);
      const firstBars = assertBarsFit(first, width);
      assertLogLinesWhole(first);
      // No full scan was counted before the first: no estimate yet.
      assert.ok(!firstBars.some((bar) => bar.includes('estimate')), firstBars.join('\n'));

      const second = await onTerminal(sync(warehouse, '--full-refresh'), width, dir);
      const bars = assertBarsFit(second, width);
      assertLogLinesWhole(second);
      // Every stream was fully scanned once: each bar counts pages against the last scan's, labelled so.
      const pages = new Map(
        first.stdout
          .split('\n')
          .map((line) => line.split(/\s{2,}/))
          .filter((cells) => cells[2] === 'ok')
          .map((cells) => [cells[1]!, Number(cells[3])]),
      );
      for (const [stream, count] of pages) {
        const bar = bars.findLast((b) => b.startsWith(`${stream} `));
        assert.ok(bar, `a bar for ${stream}:\n${bars.join('\n')}`);
        assert.ok(bar.includes(`${count}/~${count} pages (estimate)`), `${stream}: ${bar}`);
        assert.match(bar, /\| done\s*$/);
      }
    });
  }

  it('ingest at 80 columns: a bar by bytes of all the inputs; from stdin, bytes so far and no total', async () => {
    const warehouse = path.join(dir, 'ingest.duckdb');
    const files = await onTerminal(['ingest', ...DOCUMENTS, '--warehouse', warehouse], 80, dir);
    const bars = assertBarsFit(files, 80);
    const last = bars.at(-1)!;
    // All the inputs' bytes read, of all of them.
    const [read, total] = /\] ([\d.]+ [KM]?B)\/([\d.]+ [KM]?B)/.exec(last)?.slice(1) ?? [];
    assert.ok(read && read === total, `the last frame has read every byte: ${last}`);
    assert.match(last, /^ingest /);

    const piped = await onTerminal(
      ['ingest', '-', '--warehouse', path.join(dir, 'stdin.duckdb')],
      80,
      dir,
      path.join(FIXTURES, 'others.ndjson'),
    );
    // No total to draw a bar against: the count alone, on one row.
    const counts = piped.lines.filter((line) => /^ingest [\d.]+ [KM]?B read \| \d+ documents/.test(line));
    assert.ok(counts.length > 0, `a count of bytes read:\n${piped.rows.join('\n')}`);
    for (const line of counts) assert.ok(line.trimEnd().length < 80, line);
    assert.ok(!piped.lines.some((line) => BAR.test(line)), 'no bar without a total');
  });

  it('rebuild and export at 80 columns: by blocks and by tables, with rows', async () => {
    const warehouse = path.join(dir, 'sync-80.duckdb');
    const rebuild = await onTerminal(['rebuild', '--warehouse', warehouse], 80, dir);
    const rebuilt = assertBarsFit(rebuild, 80).at(-1)!;
    const blocks = /(\d+)\/(\d+) blocks/.exec(rebuilt);
    assert.ok(blocks && blocks[1] === blocks[2] && Number(blocks[1]) > 0, rebuilt);
    const rows = Number(/rebuilt \d+ tables from \d+ landed records: (\d+) rows/.exec(rebuild.stdout)?.[1]);
    assert.ok(rows > 0, rebuild.stdout);
    assert.ok(rebuilt.includes(`${rows} rows`), `the bar's rows are the summary's: ${rebuilt}`);

    const exported = await onTerminal(
      ['export', '--warehouse', warehouse, '--out', path.join(dir, 'parquet')],
      80,
      dir,
    );
    const bar = assertBarsFit(exported, 80).at(-1)!;
    const tables = Number(/exported (\d+) tables/.exec(exported.stdout)?.[1]);
    assert.ok(bar.includes(`${tables}/${tables} tables`), `every table exported: ${bar}`);
    assert.match(bar, /\| done\s*$/);
  });

  it('no bars and no escapes when stderr is a pipe (sync, ingest, rebuild, export)', async () => {
    const warehouse = path.join(dir, 'piped.duckdb');
    assertExit(await runCli(sync(warehouse)), 0);
    assertExit(await runCli(['ingest', ...DOCUMENTS, '--warehouse', warehouse]), 0);
    assertExit(await runCli(['rebuild', '--warehouse', warehouse]), 0);
    assertExit(await runCli(['export', '--warehouse', warehouse, '--out', path.join(dir, 'piped')]), 0);
    // Every run of this file through a pipe: no escape code, no bar glyph, no token.
    assertNoSecretsOrEscapes();
  });
});
