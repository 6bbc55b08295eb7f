import type { Argv } from 'yargs';
import type { IngestProgress } from '../../pipelines/ingest.js';
import type { RebuildProgress } from '../../pipelines/rebuild.js';
import type { SyncConfig } from '../config.js';
import type { StreamActivity } from '../extract/index.js';
import type { LogFields, Logger } from '../log.js';
import { positiveNumberOption } from './context.js';

/**
 * The heartbeat of a long run (sync, ingest, rebuild, schedule): every `intervalMs` one log line per active
 * piece of work (a stream, an ingest) with its counters and its current rate, in human and JSON logs alike,
 * so a cron log shows a slow run moving; and a `stalled` warning when a piece has not moved for `stallMs`,
 * naming what it waits for, so a stalled run is told from a slow one. Progress is seen by comparing readings
 * from one tick to the next on the heartbeat's own clock, so the clock alone decides the times it reports.
 */

/** One reading of a piece of work. */
export interface Pulse {
  /** Logged as they are on each heartbeat line (pages, records, requests, retries, 429s …). */
  fields: LogFields;
  /**
   * Any number that grows while the work moves (pages committed plus answers received, bytes read): the
   * same for `stallMs` means stalled.
   */
  progress: number;
  /** The counter whose rate per second over the last interval the heartbeat line shows. */
  rated?: { name: string; value: number };
  /** What the work waits for now, in words; null when it cannot tell. */
  waitingFor: string | null;
}

/** The clock and timer the heartbeat runs on: the real ones unless a test gives its own. */
export interface HeartbeatClock {
  now(): number;
  /** Calls `tick` every `ms` until the returned function is called; must not keep the process alive. */
  every(ms: number, tick: () => void): () => void;
}

export const realClock: HeartbeatClock = {
  now: () => Date.now(),
  every(ms, tick) {
    const timer = setInterval(tick, ms);
    timer.unref();
    return () => clearInterval(timer);
  },
};

export interface HeartbeatOptions {
  logger: Logger;
  intervalMs: number;
  stallMs: number;
  /** Event names are `${prefix}.heartbeat` and `${prefix}.stalled` (e.g. stream.heartbeat). */
  prefix: string;
  clock?: HeartbeatClock;
}

interface Watched {
  fields: LogFields;
  read: () => Pulse;
  progress: number;
  /** Clock reading when its progress last changed (or when it was first watched). */
  movedAt: number;
  /** Clock reading of the last stall warning of the current stall; null when not warned since it moved. */
  warnedAt: number | null;
  rated: number;
  ratedAt: number;
}

const rounded = (value: number) => Math.round(value * 10) / 10;

export class Heartbeat {
  readonly #options: HeartbeatOptions;
  readonly #clock: HeartbeatClock;
  readonly #watched = new Set<Watched>();
  #lastBeat: number;
  #stopTimer: (() => void) | null = null;

  constructor(options: HeartbeatOptions) {
    this.#options = options;
    this.#clock = options.clock ?? realClock;
    this.#lastBeat = this.#clock.now();
  }

  /** Starts the timer (once); ticks at most every second, and as often as the shorter bound asks. */
  start(): this {
    if (this.#stopTimer) return this;
    const { intervalMs, stallMs } = this.#options;
    this.#lastBeat = this.#clock.now();
    this.#stopTimer = this.#clock.every(Math.max(10, Math.min(1000, intervalMs, stallMs)), () => this.tick());
    return this;
  }

  stop(): void {
    this.#stopTimer?.();
    this.#stopTimer = null;
    this.#watched.clear();
  }

  /** Watches a piece of work from now on; `fields` name it on its lines. Returns the function that ends it. */
  watch(fields: LogFields, read: () => Pulse): () => void {
    const now = this.#clock.now();
    const first = read();
    const watched: Watched = {
      fields,
      read,
      progress: first.progress,
      movedAt: now,
      warnedAt: null,
      rated: first.rated?.value ?? 0,
      ratedAt: now,
    };
    this.#watched.add(watched);
    return () => this.#watched.delete(watched);
  }

  /** One look at every piece of work: called by the timer, and by tests on a clock of their own. */
  tick(): void {
    const { logger, intervalMs, stallMs, prefix } = this.#options;
    const now = this.#clock.now();
    const beat = now - this.#lastBeat >= intervalMs;
    if (beat) this.#lastBeat = now;
    for (const watched of this.#watched) {
      let pulse: Pulse;
      try {
        pulse = watched.read();
      } catch {
        // A reading must never fail the run it watches.
        continue;
      }
      if (pulse.progress !== watched.progress) {
        watched.progress = pulse.progress;
        watched.movedAt = now;
        watched.warnedAt = null;
      }
      if (beat) {
        const seconds = (now - watched.ratedAt) / 1000;
        const value = pulse.rated?.value ?? 0;
        const rate = pulse.rated && seconds > 0 ? rounded((value - watched.rated) / seconds) : undefined;
        watched.rated = value;
        watched.ratedAt = now;
        logger.info(`${prefix}.heartbeat`, {
          ...watched.fields,
          ...pulse.fields,
          ...(pulse.rated && rate !== undefined ? { [`${pulse.rated.name}PerSecond`]: rate } : {}),
        });
      }
      const still = now - watched.movedAt;
      // Warned once per stall threshold while it lasts: a run stuck for an hour says so a few times, not
      // every second.
      if (still >= stallMs && (watched.warnedAt === null || now - watched.warnedAt >= stallMs)) {
        watched.warnedAt = now;
        const seconds = Math.round(still / 1000);
        const what = pulse.waitingFor ?? 'nothing it can name (no request in flight)';
        logger.warn(`${prefix}.stalled`, {
          message: `no progress for ${seconds} s: waiting for ${what}${storeNote(watched.fields)}`,
          ...watched.fields,
          stalledSeconds: seconds,
          waitingFor: pulse.waitingFor,
        });
      }
    }
  }
}

const storeNote = (fields: LogFields) => (typeof fields.store === 'string' ? ` (store ${fields.store})` : '');

export interface HeartbeatArgs {
  'heartbeat-seconds'?: number;
  'stall-seconds'?: number;
}

/** `--heartbeat-seconds` and `--stall-seconds` of sync, backfill, ingest, rebuild and schedule. */
export function withHeartbeatOptions<T>(yargs: Argv<T>): Argv<T & HeartbeatArgs> {
  return yargs
    .option('heartbeat-seconds', {
      type: 'number',
      description:
        "Seconds between heartbeat log lines (one per active stream: pages, records, requests, retries, 429s, rate), instead of the config's heartbeatSeconds (default 30)",
    })
    .option('stall-seconds', {
      type: 'number',
      description:
        "Seconds without progress before a `stalled` warning naming what the run waits for, instead of the config's stallSeconds (default 300)",
    }) as Argv<T & HeartbeatArgs>;
}

const seconds = (name: string, value: number | undefined, fallback: number): number =>
  value === undefined ? fallback : positiveNumberOption(name, value, 'a number of seconds above 0');

/** The heartbeat's bounds: the flags, else the config's settings (their defaults without a config). */
export function heartbeatBounds(
  config: Pick<SyncConfig, 'heartbeatSeconds' | 'stallSeconds'> | null,
  args: HeartbeatArgs,
): { intervalMs: number; stallMs: number } {
  return {
    intervalMs:
      seconds('heartbeat-seconds', args['heartbeat-seconds'], config?.heartbeatSeconds ?? 30) * 1000,
    stallMs: seconds('stall-seconds', args['stall-seconds'], config?.stallSeconds ?? 300) * 1000,
  };
}

/** A sync stream's heartbeat reading: its counters, requests per second, and what it waits for. */
export function streamPulse(activity: StreamActivity): Pulse {
  return {
    fields: {
      pages: activity.pages,
      records: activity.records,
      requests: activity.requests,
      retries: activity.retries,
      rateLimited: activity.rateLimited,
      ...(activity.pagesEstimate !== null && activity.passKind === 'full'
        ? { passPages: activity.passPages, pagesEstimate: activity.pagesEstimate }
        : { slices: `${activity.slicesDone}/${activity.slicesTotal}` }),
    },
    progress: activity.pages + activity.responses,
    rated: { name: 'requests', value: activity.requests },
    waitingFor: activity.waitingFor,
  };
}

/** An ingest's heartbeat reading: bytes, documents and files so far, documents per second. */
export function ingestPulse(progress: IngestProgress | null): Pulse {
  if (progress === null) return { fields: {}, progress: 0, waitingFor: 'the ledger to plan the files' };
  return {
    fields: {
      files: `${progress.filesDone}/${progress.filesTotal}`,
      documents: progress.documents,
      rejections: progress.rejections,
      bytesRead: progress.bytesRead,
      ...(progress.bytesTotal === null ? {} : { bytesTotal: progress.bytesTotal }),
    },
    progress: progress.bytesRead + progress.documents,
    rated: { name: 'documents', value: progress.documents },
    waitingFor:
      progress.reading === null
        ? 'the next batch of documents'
        : progress.reading === '-'
          ? 'the next batch of documents from stdin'
          : `the next batch of documents (reading ${progress.reading})`,
  };
}

/** A rebuild's heartbeat reading: blocks replayed of the landing's, records and rows so far. */
export function rebuildPulse(progress: RebuildProgress | null): Pulse {
  if (progress === null)
    return { fields: {}, progress: 0, waitingFor: 'the warehouse to recreate the tables' };
  return {
    fields: {
      blocks: `${progress.blocks}/${progress.blocksTotal}`,
      records: progress.records,
      rows: progress.rows,
    },
    progress: progress.blocks + (progress.phase === 'committing' ? 1 : 0),
    rated: { name: 'blocks', value: progress.blocks },
    waitingFor:
      progress.phase === 'committing'
        ? 'the warehouse to commit the rebuild'
        : `block ${progress.blocks + 1} of ${progress.blocksTotal} to be replayed`,
  };
}
