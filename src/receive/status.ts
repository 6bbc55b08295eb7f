import type { SyncConfig } from '../config.js';
import { closedFiles, countLines, openedAt, openFiles } from './spool-files.js';

/** What `store-sync status` says of a store's spool: what waits for a drain, and for how long. */
export interface SpoolStatus {
  store: string;
  spoolDir: string;
  /** Closed files, which the next drain loads. */
  files: number;
  /** Events in them. */
  events: number;
  bytes: number;
  /** Events in the file the receiver is appending to (drainable once it is closed, by size or age). */
  openEvents: number;
  /** When the oldest waiting event arrived (its file's opening), or null when nothing waits. */
  oldestEventAt: string | null;
  oldestEventAgeSeconds: number | null;
}

export async function spoolStatus(store: string, spoolDir: string, now = Date.now()): Promise<SpoolStatus> {
  const status: SpoolStatus = {
    store,
    spoolDir,
    files: 0,
    events: 0,
    bytes: 0,
    openEvents: 0,
    oldestEventAt: null,
    oldestEventAgeSeconds: null,
  };
  let oldest: number | null = null;
  const note = (file: string) => {
    const at = openedAt(file);
    if (at !== null && (oldest === null || at < oldest)) oldest = at;
  };
  for (const file of await closedFiles(spoolDir)) {
    // Drained (deleted) between the listing and the count: no longer waiting.
    const counted = await countLines(file);
    if (!counted || counted.lines === 0) continue;
    status.files++;
    status.events += counted.lines;
    status.bytes += counted.bytes;
    note(file);
  }
  for (const file of await openFiles(spoolDir)) {
    const counted = await countLines(file);
    if (!counted || counted.lines === 0) continue;
    status.openEvents += counted.lines;
    note(file);
  }
  if (oldest !== null) {
    status.oldestEventAt = new Date(oldest).toISOString();
    status.oldestEventAgeSeconds = Math.max(0, Math.round((now - oldest) / 1000));
  }
  return status;
}

/** The spool of every store of the config that has a receiver (or of the one named). */
export async function receiverSpools(
  config: Pick<SyncConfig, 'stores'>,
  store?: string,
  now = Date.now(),
): Promise<SpoolStatus[]> {
  const out: SpoolStatus[] = [];
  for (const s of config.stores) {
    if (!s.receiver || (store !== undefined && s.name !== store)) continue;
    out.push(await spoolStatus(s.name, s.receiver.spoolDir, now));
  }
  return out;
}

/** The spools as `store-sync status` prints them, below the streams: columns and rows for renderTable. */
export function spoolRows(spools: SpoolStatus[]): { columns: string[]; rows: (string | number)[][] } {
  const age = (seconds: number | null) =>
    seconds === null
      ? ''
      : seconds < 120
        ? `${seconds} s`
        : seconds < 7200
          ? `${Math.round(seconds / 60)} min`
          : `${(seconds / 3600).toFixed(1)} h`;
  return {
    columns: [
      'store',
      'receiver spool',
      'files waiting',
      'events waiting',
      'in the open file',
      'oldest event age',
    ],
    rows: spools.map((s) => [
      s.store,
      s.spoolDir,
      s.files,
      s.events,
      s.openEvents,
      age(s.oldestEventAgeSeconds),
    ]),
  };
}
