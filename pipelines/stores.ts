import { readToken, type StoreConfig } from '../src/config.js';
import { asStoreSyncError, type StoreSyncError } from '../src/errors.js';
import { type SyncResult, streamsToSync } from './sync.js';

/**
 * A command over several stores (sync, backfill, schedule) syncs them one after the other: every store runs
 * whatever became of the one before (an expired token, an API that is down, a failed export), so one store's
 * failure does not stop the nightly run of the others, and a stop lets the running store end at its next
 * page boundary and starts no further one. The command says what each outcome means (a summary and an exit
 * code, or log lines).
 */

/**
 * What one store came to: its run's result, the error that ended it, or both, when the sync ran and the
 * export after it failed.
 */
export type StoreOutcome =
  | { store: string; result: SyncResult; error?: StoreSyncError }
  | { store: string; result?: undefined; error: StoreSyncError };

export type StoreFailure = StoreOutcome & { error: StoreSyncError };

/**
 * Every store's token and streams, checked before the first store runs: a missing variable, or a store with
 * every stream disabled, must not leave the warehouse half-updated by the stores before it (bad input changes
 * nothing).
 */
export function checkStores(stores: readonly StoreConfig[], streams: readonly string[] | null): void {
  for (const store of stores) {
    readToken(store);
    streamsToSync(store, streams);
  }
}

export interface StoreLoop {
  /** True once the command was told to stop: no further store starts. */
  stopped(): boolean;
  /**
   * True when an error a store's run threw came with the stop: it is then left untold, as the stop is the
   * story (the command tells it). Without it every error is a failure.
   */
  causedByStop?(): boolean;
  /** One store's sync. */
  sync(store: StoreConfig): Promise<SyncResult>;
  /** A store whose sync (and export) went through, whatever its outcome. */
  ran(outcome: StoreOutcome & { result: SyncResult }): void;
  /** A store whose run failed, or whose export did after its sync. Throwing from it ends the loop. */
  failed(outcome: StoreFailure): void;
}

export async function syncStores(stores: readonly StoreConfig[], loop: StoreLoop): Promise<void> {
  for (const store of stores) {
    if (loop.stopped()) break;
    let result: SyncResult;
    try {
      result = await loop.sync(store);
    } catch (error) {
      if (!loop.causedByStop?.()) loop.failed({ store: store.name, error: asStoreSyncError(error) });
      continue;
    }
    // Outside the try: `failed` may throw to end the loop, and that must not be taken for the sync's failure
    // (which would report the store a second time).
    // The export after the sync failed: the outcome keeps what the sync did beside the export's error.
    if (result.exportFailure) loop.failed({ store: store.name, result, error: result.exportFailure });
    else loop.ran({ store: store.name, result });
  }
}
