import { type ColumnDef, type TableDef, tableDef } from '../model/index.js';
import { stagingColumns, TableRows } from '../normalize/index.js';
import type { BatchMeta } from './batch-builder.js';
import type { Key } from './key-ranges.js';
import { compareVersions, storedAbsences, UnitRows } from './merge.js';
import type { FoldMeta } from './partial.js';
import { type FamilyTarget, writeUnitFamily } from './unit-family.js';

/**
 * The rows of sighted unit tables (TableDef `unit.sighted`: customers, seen in each of their orders), held
 * in memory across the batches of one transaction and merged into the warehouse when it commits.
 *
 * Why: 200,000 orders name some 50,000 customers, and every batch of orders names thousands the batches
 * before it stored. Merged batch by batch, each of those is looked up, deleted and appended again: four
 * customer rows written for every one kept, and a tenth of an ingest's CPU (docs/performance.md, "Issue 31:
 * customers held until the commit"). Held, each batch's row of a customer is compared with the customer's winner so far
 * and copied here only when it beats it; the commit merges the winners once.
 *
 * The result is what merging batch by batch stores, row times included. A key is held only while all its
 * rows and its stored row lack the same fields: then no merge of it folds (partial.ts), and newest wins is a
 * maximum (merge.ts), the same whichever of its rows meet in one merge. The rows keep their arrival
 * order (their `_unit`s are renumbered in it, so among equal versions the later still wins) and their own
 * batch's `_synced_at` and `_run_id`. A key whose rows lack different fields is merged batch by batch, as
 * without holding, since its folds depend on the order in which its rows meet the stored one. What
 * a transaction holds is bounded (HELD_LIMITS): past it, the rows are merged at once.
 *
 * Only a transaction that writes many batches holds rows, when asked (Warehouse.begin's `holdUnits`): a
 * rebuild's, and an ingest's with IngestOptions.holdUnits, off by default since an ingest of a million
 * documents peaked 50 to 70 MB higher with it. A read inside the transaction merges what is held first
 * (Transaction.read).
 */

/** How many rows are held of one table. */
export interface HeldLimits {
  /** Beaten rows (a later sighting won) past which the held rows are copied without them. */
  thinRows: number;
  /** Winning rows past which they are merged into the transaction at once. */
  maxRows: number;
}

/**
 * Thinned past 16,384 beaten rows (and half of those held); merged at once past 65,536 winners: some 20 MB of
 * customer rows, more customers than the benchmark's documents name (bench/warehouse-data.ts: 50,000).
 */
export const HELD_LIMITS: HeldLimits = { thinRows: 16_384, maxRows: 65_536 };

/** A key whose rows are merged batch by batch for the rest of the transaction (see HeldUnits.hold). */
const MERGED = 'merged';

/** Keys met that are remembered past a merge of what was held (a rebuild meets every customer). */
const KNOWN_KEYS = 1_000_000;

/** The extra columns a held row carries: its own batch's time and run. */
const HELD_COLUMNS: ColumnDef[] = [
  { name: '_synced_at', type: 'TIMESTAMPTZ', comment: 'Time of the batch the row came in.' },
  { name: '_run_id', type: 'VARCHAR', comment: 'Run of the batch the row came in.' },
];

/** A key met in the transaction, while its rows are held. */
interface HeldKey {
  /** The fields its stored row and its rows so far lack (`_absent_fields`). */
  absent: string | null;
  /** Its winning row so far among the held rows, or -1 when none is held (its stored row stands). */
  row: number;
}

/** The rows held of one table of one store. */
interface HeldTable {
  def: TableDef;
  /** Each held key's winning row so far, and the rows they have since beaten (`dead`). */
  rows: TableRows;
  dead: number;
  /** The `_unit` the next batch's rows are numbered from. */
  nextUnit: number;
  /** The latest batch's store, time and run (held rows carry their own time and run). */
  meta: FoldMeta;
  /** The keys this transaction has met: held, or MERGED once a row lacked other fields (see `hold`). */
  keys: Map<Key, HeldKey | typeof MERGED>;
}

export class HeldUnits {
  private readonly held = new Map<string, HeldTable>();

  constructor(private readonly limits: HeldLimits = HELD_LIMITS) {}

  /** Whether `def`'s rows are held rather than merged batch by batch. */
  static holds(def: TableDef): boolean {
    return def.unit?.sighted === true;
  }

  /**
   * Takes a batch's rows of a held table (sealed): the rows of held keys that beat the key's winner so far
   * are copied here (the batch's buffers can be reused at once), the rows of the other keys merged into
   * `target`'s transaction now, as they would be without holding. Returns the rows stored now (those, and
   * all that was held when it outgrew its limit, HeldLimits.maxRows).
   *
   * A key is held while every one of its rows, and its stored row, lacks the same fields (the same
   * `_absent_fields`): then no merge of its rows folds (partial.ts), and newest wins is a maximum, the same
   * whichever rows meet in one merge. Once a row of a key lacks other fields, folds depend on the order in
   * which its rows meet the stored one (docs/ingest.md), so that key's held row is merged first, and its
   * rows from then on batch by batch.
   */
  async hold(target: FamilyTarget, rows: TableRows, meta: BatchMeta): Promise<number> {
    const def = tableDef(rows.name);
    const id = `${def.name}\u0000${meta.store}`;
    let table = this.held.get(id);
    if (!table) {
      table = { def, rows: heldRows(def), dead: 0, nextUnit: 1, meta, keys: new Map() };
      this.held.set(id, table);
    }
    table.meta = { store: meta.store, syncedAtMs: meta.syncedAtMs, runId: meta.runId };
    if (rows.length === 0) return 0;
    const batch = new UnitRows(rows);
    const keys = new Array<Key>(rows.length);
    const absents = new Array<string | null>(rows.length);
    // Keys met now are held with the fields their stored row lacks, or (none stored) their first row here.
    const unmet = new Map<Key, string | null>();
    for (let row = 0; row < rows.length; row++) {
      const key = batch.keyAt(row);
      keys[row] = key;
      absents[row] = batch.absentAt(row);
      if (!table.keys.has(key) && !unmet.has(key)) unmet.set(key, absents[row]!);
    }
    const { connection, appenders, keyRanges } = target;
    const stored = await storedAbsences(connection, appenders, def, meta.store, [...unmet.keys()], keyRanges);
    for (const [key, absent] of unmet)
      table.keys.set(key, { absent: stored.has(key) ? stored.get(key)! : absent, row: -1 });
    // Keys that lose the hold now: a row lacking other fields than the key's. Their held rows merge first.
    const leaving = new Set<Key>();
    for (let row = 0; row < rows.length; row++) {
      const held = table.keys.get(keys[row]!)!;
      if (held !== MERGED && held.absent !== absents[row]) leaving.add(keys[row]!);
    }
    let storedRows = leaving.size ? await this.mergeKeys(target, table, leaving) : 0;

    const syncedAt = rows.columns.length;
    const runId = syncedAt + 1;
    // Units keep their order (among equal versions the later wins) after the units held.
    let first = Infinity;
    let last = -Infinity;
    for (let row = 0; row < rows.length; row++) {
      const unit = batch.unitAt(row);
      if (unit < first) first = unit;
      if (unit > last) last = unit;
    }
    const syncedMicros = meta.syncedAtMs * 1000;
    const heldRowsNow = table.rows;
    const heldUnits = new UnitRows(heldRowsNow);
    const merged = new Set<number>();
    for (let row = 0; row < rows.length; row++) {
      const held = table.keys.get(keys[row]!)!;
      if (held === MERGED) {
        merged.add(batch.unitAt(row));
        continue;
      }
      const unit = table.nextUnit + batch.unitAt(row) - first;
      if (held.row >= 0) {
        // The rule of merge.ts: the greater version, then the later unit.
        const [version, heldVersion] = [batch.versionAt(row), heldUnits.versionAt(held.row)];
        const newer = version && heldVersion ? compareVersions(version, heldVersion) : 0;
        if (newer < 0 || (newer === 0 && unit < heldUnits.unitAt(held.row))) continue;
        table.dead++;
      }
      const to = heldRowsNow.copyRow(rows, row);
      heldRowsNow.setInt64(0, to, unit);
      heldRowsNow.setInt64(syncedAt, to, syncedMicros);
      heldRowsNow.setText(runId, to, meta.runId);
      held.row = to;
    }
    table.nextUnit += last - first + 1;
    if (merged.size) {
      rows.keepUnits(merged);
      storedRows += (await writeUnitFamily(target, def, [rows], meta)).rows;
    }
    if (table.dead > Math.max(this.limits.thinRows, heldRowsNow.length / 2)) this.thin(table);
    if (table.rows.length - table.dead > this.limits.maxRows) storedRows += await this.merge(target);
    return storedRows;
  }

  /** Merges the held rows of `keys` now, and holds the rest. */
  private async mergeKeys(target: FamilyTarget, table: HeldTable, keys: ReadonlySet<Key>): Promise<number> {
    const leaving = heldRows(table.def);
    for (const key of keys) {
      const held = table.keys.get(key)!;
      if (held === MERGED) continue;
      if (held.row >= 0) {
        leaving.copyRow(table.rows, held.row);
        table.dead++;
      }
      table.keys.set(key, MERGED);
    }
    if (leaving.length === 0) return 0;
    leaving.seal();
    return (await writeUnitFamily(target, table.def, [leaving], table.meta)).rows;
  }

  /** Keeps only each held key's winning row, in their order. */
  private thin(table: HeldTable): void {
    const { rows } = table;
    const winners: { row: number; held: HeldKey }[] = [];
    for (const held of table.keys.values())
      if (held !== MERGED && held.row >= 0) winners.push({ row: held.row, held });
    winners.sort((a, b) => a.row - b.row);
    const kept = heldRows(table.def);
    for (const winner of winners) winner.held.row = kept.copyRow(rows, winner.row);
    table.rows = kept;
    table.dead = 0;
  }

  /**
   * Merges every held row into the transaction of `target` (merge.ts) and forgets them. Returns the rows
   * stored.
   */
  async merge(target: FamilyTarget): Promise<number> {
    let stored = 0;
    for (const table of this.held.values()) {
      if (table.dead > 0) this.thin(table);
      const { rows } = table;
      table.rows = heldRows(table.def);
      // What is known of the keys met stays true (their stored rows are now the held ones), unless they are
      // many; none of them has a held row any more.
      if (table.keys.size > KNOWN_KEYS) table.keys.clear();
      for (const held of table.keys.values()) if (held !== MERGED) held.row = -1;
      if (rows.length === 0) continue;
      rows.seal();
      stored += (await writeUnitFamily(target, table.def, [rows], table.meta)).rows;
    }
    return stored;
  }

  /** Forgets what is held (the transaction rolled back). */
  clear(): void {
    this.held.clear();
  }
}

/** Empty rows of a held table: its staging columns, then the row's own time and run (HELD_COLUMNS). */
const heldRows = (def: TableDef): TableRows =>
  new TableRows(def.name, [...stagingColumns(def), ...HELD_COLUMNS]);
