import cliProgress from 'cli-progress';
import type { StreamProgress } from '../extract/index.js';

/**
 * Progress bars per stream on a terminal (stderr), nothing anywhere else: a cron log or a pipe gets the
 * log lines only. The bar's total is the stream's slices, the only total known in advance.
 */
export interface ProgressDisplay {
  update(progress: StreamProgress): void;
  /** Writes a log line to stderr; while bars are drawn, above them, so neither overwrites the other. */
  log(line: string): void;
  stop(): void;
}

const writeLine = (line: string) => {
  process.stderr.write(`${line}\n`);
};

export function createProgressDisplay(enabled: boolean): ProgressDisplay {
  if (!enabled) return { update: () => {}, log: writeLine, stop: () => {} };
  const started = Date.now();
  // Slices are the only total known in advance: the ETA extrapolates from those done (cli-progress's own
  // estimate prints "NFs" until its buffer fills, which a stream with one slice never does).
  const estimate = (elapsed: number, done: number, total: number) => {
    if (done >= total) return 'done';
    if (done === 0) return '…';
    const left = Math.round((elapsed * (total - done)) / done);
    return left >= 60 ? `${Math.floor(left / 60)}m${String(left % 60).padStart(2, '0')}s` : `${left}s`;
  };
  const multi = new cliProgress.MultiBar(
    {
      stream: process.stderr,
      hideCursor: true,
      clearOnComplete: false,
      // A log line printed above the bars shifts them down a line; only a full redraw puts each one back.
      forceRedraw: true,
      format:
        '{stream} [{bar}] {value}/{total} slices | {pages} pages | {records} records | {rps} req/s | retries {retries} | ETA {remaining}',
      barsize: 20,
    },
    cliProgress.Presets.shades_classic,
  );
  const bars = new Map<string, cliProgress.SingleBar>();
  return {
    update(progress) {
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      const payload = {
        stream: progress.stream.padEnd(20),
        pages: progress.pages,
        records: progress.records,
        rps: (progress.requests / seconds).toFixed(1),
        retries: progress.retries,
        remaining: estimate(seconds, progress.slicesDone, progress.slicesTotal),
      };
      let bar = bars.get(progress.stream);
      if (!bar) {
        bar = multi.create(Math.max(1, progress.slicesTotal), 0, payload);
        bars.set(progress.stream, bar);
      }
      bar.setTotal(Math.max(1, progress.slicesTotal));
      bar.update(progress.slicesDone, payload);
    },
    log(line) {
      // Before the first bar nothing is drawn; after it, MultiBar prints buffered lines at its next redraw.
      if (bars.size === 0) writeLine(line);
      else multi.log(`${line}\n`);
    },
    stop() {
      // A final redraw flushes the lines logged since the last one (stop() alone would drop them).
      if (bars.size > 0) multi.update();
      multi.stop();
    },
  };
}
