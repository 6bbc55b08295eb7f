import cliProgress from 'cli-progress';
import type { ExportProgress } from '../../pipelines/export.js';
import type { IngestProgress } from '../../pipelines/ingest.js';
import type { RebuildProgress } from '../../pipelines/rebuild.js';
import type { StreamProgress } from '../extract/index.js';
import { bytes } from '../report/escape.js';

/**
 * Progress bars on a terminal (stderr), nothing anywhere else: a cron log or a pipe gets the log lines only.
 * Each bar says what its total means: a sync's date-window slices, a full scan's pages estimated from the
 * previous complete scan (labelled so), an ingest's bytes, a rebuild's landing blocks, an export's tables.
 * Every bar is composed to fit the terminal's width (fields dropped, most useful kept), and log lines printed
 * above the bars are written whole: the terminal wraps them, nothing cuts them.
 */

/** One bar, as a command describes it; the display composes its line. */
export interface BarState {
  /** Tells the bars apart (a stream's name, `ingest`). */
  key: string;
  label: string;
  value: number;
  /** null: no total known (stdin): the bar shows the count alone. */
  total: number | null;
  /** What value and total count: `slices`, `pages`, `blocks`, `tables`, or `bytes` (printed as sizes). */
  unit: string;
  /** The total is an estimate (a full scan's pages from the previous scan): printed `~N … (estimate)`. */
  estimate?: boolean;
  /** Further fields, most useful first (`1200 records`, `3.1 req/s`): the last are dropped to fit. */
  fields?: string[];
  /** Seconds left, when the command can tell; null: unknown. */
  secondsLeft?: number | null;
  /** Finished, whatever the counts say (a full scan shorter or longer than its estimate). */
  done?: boolean;
}

export interface ProgressDisplay {
  /** A sync stream's progress (bars keyed by stream). */
  update(progress: StreamProgress): void;
  /** Any other bar (ingest, rebuild, export). */
  show(bar: BarState): void;
  /** Writes a log line to stderr; while bars are drawn, above them, so neither overwrites the other. */
  log(line: string): void;
  stop(): void;
}

const writeLine = (line: string) => {
  process.stderr.write(`${line}\n`);
};

function formatSeconds(seconds: number): string {
  const left = Math.max(0, Math.round(seconds));
  return left >= 60 ? `${Math.floor(left / 60)}m${String(left % 60).padStart(2, '0')}s` : `${left}s`;
}

function countText(bar: BarState): string {
  const amount = (n: number) => (bar.unit === 'bytes' ? bytes(n) : String(n));
  if (bar.total === null)
    return bar.unit === 'bytes' ? `${amount(bar.value)} read` : `${bar.value} ${bar.unit}`;
  const unit = bar.unit === 'bytes' ? '' : ` ${bar.unit}`;
  return bar.estimate
    ? `${amount(bar.value)}/~${amount(bar.total)}${unit} (estimate)`
    : `${amount(bar.value)}/${amount(bar.total)}${unit}`;
}

function barText(bar: BarState, size: number): string {
  const share = bar.done ? 1 : bar.total === null || bar.total <= 0 ? 0 : Math.min(1, bar.value / bar.total);
  const full = Math.round(share * size);
  return `[${'█'.repeat(full)}${'░'.repeat(size - full)}]`;
}

/**
 * The bar's line in at most `width` characters: label, bar, count, ETA and the fields, the last fields
 * dropped first, then the bar drawn shorter and then not at all, and only then the label shortened. Never
 * longer than `width`, so the terminal never wraps a bar (a wrapped bar breaks every redraw after it).
 */
export function composeBar(bar: BarState, width: number, labelWidth: number = bar.label.length): string {
  const label = bar.label.padEnd(labelWidth);
  const count = countText(bar);
  const eta =
    bar.total === null
      ? null
      : bar.done || (bar.value >= bar.total && !bar.estimate)
        ? 'done'
        : bar.secondsLeft == null
          ? 'ETA …'
          : `ETA ${formatSeconds(bar.secondsLeft)}`;
  const fields = bar.fields ?? [];
  const line = (barSize: number, kept: number, name: string) =>
    [
      [name, barSize > 0 && bar.total !== null ? barText(bar, barSize) : null, count]
        .filter((p): p is string => p !== null)
        .join(' '),
      ...fields.slice(0, kept),
      ...(eta ? [eta] : []),
    ].join(' | ');
  for (let kept = fields.length; kept >= 0; kept--)
    for (const size of [20, 10]) {
      const text = line(size, kept, label);
      if (text.length <= width) return text;
    }
  const bare = line(0, 0, label.trimEnd());
  if (bare.length <= width) return bare;
  const noEta = [label.trimEnd(), count].join(' ');
  if (noEta.length <= width) return noEta;
  return width > 1 ? `${noEta.slice(0, width - 1)}…` : noEta.slice(0, Math.max(0, width));
}

/** A sync stream's bar: pages against the previous full scan's for a full scan, else slices. */
export function streamBar(progress: StreamProgress, elapsedSeconds: number): BarState {
  const rate = elapsedSeconds > 0 ? progress.requests / elapsedSeconds : 0;
  const fields = [
    `${progress.records} records`,
    `${rate.toFixed(1)} req/s`,
    `retries ${progress.retries}`,
    `429s ${progress.rateLimited}`,
  ];
  const estimate = progress.passKind === 'full' ? progress.pagesEstimate : null;
  if (estimate !== null && estimate > 0) {
    const done = progress.passPages ?? progress.pages;
    // This run's pace over what is left of the previous scan's pages; unknown before a page, and past the estimate.
    const pace = progress.pages > 0 ? elapsedSeconds / progress.pages : null;
    return {
      key: progress.stream,
      label: progress.stream,
      value: done,
      total: estimate,
      unit: 'pages',
      estimate: true,
      done: progress.slicesDone >= progress.slicesTotal,
      fields,
      secondsLeft: pace === null || done >= estimate ? null : pace * (estimate - done),
    };
  }
  const { slicesDone: done, slicesTotal: total } = progress;
  // Slices are the only total known in advance: the ETA extrapolates from those done.
  return {
    key: progress.stream,
    label: progress.stream,
    value: done,
    total: Math.max(1, total),
    unit: 'slices',
    fields: [`${progress.pages} pages`, ...fields],
    secondsLeft: done === 0 || done >= total ? null : (elapsedSeconds * (total - done)) / done,
  };
}

/**
 * The progress display of a command: bars only on a terminal, and never with JSON logs (a log shipper wants
 * lines, not redraws).
 */
export function progressFor(args: { 'log-format'?: 'human' | 'json' | undefined }): ProgressDisplay {
  return createProgressDisplay(Boolean(process.stderr.isTTY) && args['log-format'] !== 'json');
}

export function createProgressDisplay(enabled: boolean): ProgressDisplay {
  if (!enabled) return { update: () => {}, show: () => {}, log: writeLine, stop: () => {} };
  const started = Date.now();
  const states = new Map<string, BarState>();
  const labelWidth = () => Math.min(20, Math.max(0, ...[...states.values()].map((s) => s.label.length)));
  const multi = new cliProgress.MultiBar(
    {
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      // A log line printed above the bars shifts them down a line; only a full redraw puts each one back.
      forceRedraw: true,
      // Left on, the terminal's own wrapping: cli-progress would otherwise switch it off while bars are drawn,
      // and the terminal would then cut every log line longer than its width. Bars never reach the width.
      linewrap: true,
      // The last column is left free: a line that fills it puts some terminals in a pending wrap.
      format: (_options, params, payload: { key: string }) => {
        const state = states.get(payload.key);
        return state ? composeBar(state, Math.max(1, params.maxWidth - 1), labelWidth()) : '';
      },
    },
    cliProgress.Presets.shades_classic,
  );
  const bars = new Map<string, cliProgress.SingleBar>();
  let stopped = false;
  const show = (state: BarState) => {
    if (stopped) return;
    states.set(state.key, state);
    const total = Math.max(1, state.total ?? 1);
    const value = Math.min(state.value, total);
    const bar = bars.get(state.key);
    if (!bar) bars.set(state.key, multi.create(total, value, { key: state.key }));
    else {
      bar.setTotal(total);
      bar.update(value, { key: state.key });
    }
  };
  return {
    update(progress) {
      show(streamBar(progress, Math.max(0.001, (Date.now() - started) / 1000)));
    },
    show,
    log(line) {
      // Before the first bar nothing is drawn; after it, MultiBar prints buffered lines at its next redraw.
      // Each line first clears the rest of the screen: it lands where bars were drawn, and a line shorter
      // than the bar it replaces (or one the terminal wraps over a second bar) would leave bar text beside it.
      if (bars.size === 0 || stopped) writeLine(line);
      else multi.log(`\x1b[J${line}\n`);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      // A final redraw flushes the lines logged since the last one (stop() alone would drop them).
      if (bars.size > 0) multi.update();
      multi.stop();
    },
  };
}

/** An ingest's bar: bytes read of all its inputs (no total with stdin or a pipe among them). */
export function ingestBar(progress: IngestProgress, elapsedSeconds: number): BarState {
  const { bytesRead, bytesTotal } = progress;
  const pace = bytesRead > 0 ? elapsedSeconds / bytesRead : null;
  const rate = elapsedSeconds > 0 ? progress.documents / elapsedSeconds : 0;
  return {
    key: 'ingest',
    label: 'ingest',
    value: bytesRead,
    total: bytesTotal,
    unit: 'bytes',
    fields: [
      `${progress.documents} documents`,
      `${progress.filesDone}/${progress.filesTotal} files`,
      `${Math.round(rate)} docs/s`,
      `${progress.rejections} rejected`,
    ],
    secondsLeft: bytesTotal === null || pace === null ? null : pace * Math.max(0, bytesTotal - bytesRead),
  };
}

/** A rebuild's bar: the landing's blocks replayed into the tables (all tables at once), with rows so far. */
export function rebuildBar(progress: RebuildProgress, elapsedSeconds: number): BarState {
  const { blocks, blocksTotal } = progress;
  return {
    key: 'rebuild',
    label: progress.phase === 'committing' ? 'rebuild (committing)' : 'rebuild',
    value: blocks,
    total: Math.max(1, blocksTotal),
    unit: 'blocks',
    fields: [`${progress.rows} rows`, `${progress.records} records`, `${progress.tables} tables`],
    secondsLeft:
      blocks === 0 || blocks >= blocksTotal ? null : (elapsedSeconds * (blocksTotal - blocks)) / blocks,
    done: false,
  };
}

/** An export's bar: tables copied of those chosen, rows so far, the table being copied. */
export function exportBar(progress: ExportProgress, elapsedSeconds: number): BarState {
  const { tablesDone, tablesTotal } = progress;
  return {
    key: 'export',
    label: 'export',
    value: tablesDone,
    total: Math.max(1, tablesTotal),
    unit: 'tables',
    fields: [`${progress.rows} rows`, ...(progress.table ? [`copying ${progress.table}`] : [])],
    secondsLeft:
      tablesDone === 0 || tablesDone >= tablesTotal
        ? null
        : (elapsedSeconds * (tablesTotal - tablesDone)) / tablesDone,
    done: progress.table === null,
  };
}
