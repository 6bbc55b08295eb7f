import type { DuckDBConnection } from '@duckdb/node-api';
import { ident, literal, ownedBy, type TableDef, tableDef, unitVersionColumns } from '../model/index.js';
import { TableRows } from '../normalize/index.js';
import type { AppenderPool } from './chunks.js';
import { isAsciiText, type Key, KeyRanges } from './key-ranges.js';

/**
 * How a batch's rows of a unit table (a table whose rows are replaced as a whole with the tables they own:
 * an order with its lines, taxes, refunds …) meet what is stored. The rule, in docs/warehouse.md:
 *
 *   newest wins by (version, ties, arrival): the batch's or stored row with the greatest version wins, a
 *   missing version ranks below any present one, equal versions go to the greatest tie columns (when the
 *   table names any), and among equals the later arrival wins.
 *
 * So a re-delivered document replaces the stored one with identical content (only `_synced_at`/`_run_id`
 * move), an older one changes nothing, and because the rule is a maximum, the result does not depend on
 * how documents were batched, which is what lets rebuild and a resumed run reproduce the same tables.
 *
 * A document carries only some fields of its record (an order list item: no lines, no addresses), and
 * updates only those (docs/ingest.md, "A document updates only what it carries"). The unit's `_absent_fields`
 * says what each document lacked: when the winner lacks a field another document of its key carries (or
 * the stored row does), the key is folded field by field instead (partial.ts). The rule then holds per field
 * and per child array; the folded row keeps its winner's version.
 *
 * The rule is applied here, in JavaScript, to the batch's own rows and to the versions stored for its keys;
 * the winners are then appended straight into the tables. Picking the winners in SQL instead (every row
 * through a staging table, a window function, two joined deletes, an insert) costs a fifth of a large ingest
 * for customers, whose keys repeat in every batch of orders, and the staging tables grow inside the
 * transaction until DuckDB has to spill them (docs/performance.md, "Settings and the measurements behind
 * them").
 */

/**
 * A version as compared: absent, or the version's microseconds and each tie (absent, a number, or text:
 * the batch's as its UTF-8 bytes, a stored one as DuckDB returned it, encoded only if it is compared).
 */
type Tie = null | bigint | Buffer | string;
interface Version {
  micros: bigint | null;
  ties: Tie[];
}

/** The columns a unit's version is the first present of (src/model/units.ts), checked for the comparison here. */
export function versionColumns(def: TableDef): string[] {
  const columns = unitVersionColumns(def);
  for (const name of columns) {
    const column = def.columns.find((c) => c.name === name);
    // Versions are compared as microseconds: a version of another type needs its own comparison here.
    if (column?.type !== 'TIMESTAMPTZ')
      throw new Error(
        `${def.name}: the version ${def.unit!.version} must be TIMESTAMPTZ columns, or coalesce() of them`,
      );
  }
  return columns;
}

const compareTie = (a: Tie, b: Tie): number => {
  // A missing tie ranks lowest, whatever the other one holds.
  if (a === null || b === null) return (a === null ? 0 : 1) - (b === null ? 0 : 1);
  if (typeof a === 'bigint' && typeof b === 'bigint') return a < b ? -1 : a > b ? 1 : 0;
  // VARCHAR compares by its UTF-8 bytes (JavaScript's string order differs beyond the BMP).
  const bytes = (t: Tie) => (typeof t === 'string' ? Buffer.from(t, 'utf8') : (t as Buffer));
  return Buffer.compare(bytes(a), bytes(b));
};

/** Negative, zero or positive as `a` is older than, as new as, or newer than `b`; a missing version is oldest. */
export function compareVersions(a: Version, b: Version): number {
  if (a.micros === null || b.micros === null)
    return (a.micros === null ? 0 : 1) - (b.micros === null ? 0 : 1);
  if (a.micros !== b.micros) return a.micros < b.micros ? -1 : 1;
  for (let i = 0; i < a.ties.length; i++) {
    const c = compareTie(a.ties[i]!, b.ties[i]!);
    if (c !== 0) return c;
  }
  return 0;
}

/** Keys as they are compared: a BIGINT read back from DuckDB and a number from the batch must meet. */
const keyOf = (value: unknown): Key | null =>
  typeof value === 'bigint' &&
  value >= BigInt(Number.MIN_SAFE_INTEGER) &&
  value <= BigInt(Number.MAX_SAFE_INTEGER)
    ? Number(value)
    : (value as Key | null);

const int64At = (rows: TableRows, column: number, row: number): bigint =>
  (BigInt(rows.i64[column]![row * 2 + 1]!) << 32n) | BigInt(rows.u32[column]![row * 2]!);

/** A row's version, from its columns (sealed or not). */
function rowVersion(rows: TableRows, row: number, versions: number[], ties: number[]): Version {
  let micros: bigint | null = null;
  for (const column of versions)
    if (rows.valid[column]![row]) {
      micros = int64At(rows, column, row);
      break;
    }
  return {
    micros,
    ties: ties.map((column) =>
      rows.kinds[column] === 'str'
        ? rows.textBytes(column, row)
        : rows.valid[column]![row]
          ? int64At(rows, column, row)
          : null,
    ),
  };
}

const keyLiteral = (k: Key): string => (typeof k === 'string' ? literal(k) : String(k));

/**
 * Temp tables that carry a batch's keys to DuckDB, filled through the Appender: a list of 5,000 keys written
 * into the SQL takes DuckDB about 15 ms to parse, three times what the query itself takes.
 */
const KEY_TABLES = { number: 'unit_keys_number', text: 'unit_keys_text' } as const;

/** Creates the key tables (once per connection; temp tables live as long as it). */
export const CREATE_KEY_TABLES_SQL =
  `CREATE OR REPLACE TEMP TABLE ${KEY_TABLES.number} (k BIGINT); ` +
  `CREATE OR REPLACE TEMP TABLE ${KEY_TABLES.text} (k VARCHAR)`;

/** Puts `keys` alone in the key table of their type; returns its name. */
async function loadKeys(
  connection: DuckDBConnection,
  appenders: AppenderPool,
  keys: readonly Key[],
  text: boolean,
): Promise<string> {
  const table = text ? KEY_TABLES.text : KEY_TABLES.number;
  await connection.run(`TRUNCATE temp.main.${table}`);
  const rows = new TableRows(table, [{ name: 'k', type: text ? 'VARCHAR' : 'BIGINT', comment: '' }]);
  for (const key of keys) {
    const row = rows.addRow();
    if (typeof key === 'string') rows.setText(0, row, key);
    else rows.setInt64(0, row, key);
  }
  rows.seal();
  (await appenders.get(table, 'temp')).append(rows, [{ from: 'rows', column: 0 }]);
  return `temp.main.${table}`;
}

const TEXT_KEYS = `temp.main.${KEY_TABLES.text}`;

/**
 * The most keys `keysSql` writes into SQL: DuckDB parses a list that long in about 2 ms (see KEY_TABLES). A sync
 * commits at most GROUP_RECORDS (600) records a group; an ingest batch of more keys takes the way with a key
 * table.
 */
export const KEYS_IN_SQL = 1_000;

/** A condition that `alias.column` is one of `keys` (at most KEYS_IN_SQL of them), with their range for pruning. */
export function keysSql(alias: string, column: string, keys: readonly Key[]): string {
  if (keys.length > KEYS_IN_SQL)
    throw new Error(`keysSql takes at most ${KEYS_IN_SQL} keys, not ${keys.length}`);
  if (keys.length === 0) return 'false';
  return `${alias}.${ident(column)} IN (${keys.map(keyLiteral).join(', ')})${keyRangeSql(alias, column, keys)}`;
}

/**
 * Where keys lie, so that DuckDB can skip whole row groups by their min/max (keys mostly grow); only where
 * JavaScript and DuckDB order the keys alike (numbers, ASCII text).
 */
function keyRangeSql(alias: string, column: string, keys: readonly Key[]): string {
  if (keys.length === 0 || !keys.every((k) => typeof k !== 'string' || isAsciiText(k))) return '';
  let [min, max] = [keys[0]!, keys[0]!];
  for (const k of keys) {
    if (k < min) min = k;
    if (k > max) max = k;
  }
  return ` AND ${alias}.${ident(column)} BETWEEN ${keyLiteral(min)} AND ${keyLiteral(max)}`;
}

/** The units of keys whose documents carry different fields, to be folded field by field (partial.ts). */
export interface PartialUnits {
  keys: Key[];
  /** Every batch unit of those keys (winner or not). */
  units: Set<number>;
}

/** What a batch writes of a unit table: the units to append (null for all) and the keys to fold. */
export interface MergeDecision {
  units: Set<number> | null;
  partial: PartialUnits | null;
  /**
   * The batch's keys when none of them had a stored row, so that every record it stores is new (history.ts,
   * firstVersionsSql); null when some had one.
   */
  fresh: Key[] | null;
}

/** Whether two rows' text in a column is the same (both null, or the same bytes). */
function sameText(rows: TableRows, column: number, a: number, b: number): boolean {
  const valid = rows.valid[column]!;
  if (!valid[a] || !valid[b]) return !valid[a] && !valid[b];
  const text = rows.text[column]!;
  const [a0, b0] = [a === 0 ? 0 : text.ends[a - 1]!, b === 0 ? 0 : text.ends[b - 1]!];
  const length = text.ends[a]! - a0;
  if (text.ends[b]! - b0 !== length) return false;
  for (let i = 0; i < length; i++) if (text.bytes[a0 + i] !== text.bytes[b0 + i]) return false;
  return true;
}

/**
 * Whether a unit whose winning document lacks the fields `winner` lists (`_absent_fields`, null: it lacks
 * none) takes anything from the other documents of its key (`others`, stored row included): one of them
 * carries a field the winner lacks. Then the key is folded field by field (partial.ts); otherwise the winner
 * carries everything the others do and replaces them whole.
 */
export function takesFromOthers(winner: string | null, others: Iterable<string | null>): boolean {
  if (winner === null) return false;
  let lacks: string[] | null = null;
  for (const other of others) {
    if (other === winner) continue;
    if (other === null) return true;
    lacks ??= winner.split(',');
    const carried = new Set(other.split(','));
    if (lacks.some((field) => !carried.has(field))) return true;
  }
  return false;
}

/**
 * A key's winner among a batch's rows: the greatest version, then the later unit. `first` is the key's first
 * row; `mixed`, whether its rows lack different fields. A version is read only when it is compared
 * (undefined until then): most keys occur once in a batch and have no stored row, and reading every row's
 * version made a large share of the main thread's garbage.
 */
interface Winner {
  unit: number;
  version: Version | null | undefined;
  row: number;
  first: number;
  mixed: boolean;
}

/** A unit table's rows (sealed), read as the rule above compares them. */
export class UnitRows {
  readonly def: TableDef;
  readonly keyColumn: number;
  readonly absentColumn: number;
  readonly versionNames: string[];
  readonly versioned: boolean;
  private readonly versions: number[];
  private readonly ties: number[];

  constructor(readonly rows: TableRows) {
    this.def = tableDef(rows.name);
    const unit = this.def.unit!;
    const index = (name: string) => rows.columns.findIndex((c) => c.name === name);
    this.keyColumn = index(unit.key);
    this.absentColumn = index('_absent_fields');
    this.versionNames = versionColumns(this.def);
    this.versions = this.versionNames.map(index);
    this.ties = (unit.ties ?? []).map(index);
    this.versioned = this.versions.length > 0;
  }

  keyAt(row: number): Key {
    return keyOf(this.rows.get(this.keyColumn, row))!;
  }

  absentAt(row: number): string | null {
    return this.absentColumn < 0 ? null : (this.rows.get(this.absentColumn, row) as string | null);
  }

  unitAt(row: number): number {
    return this.rows.get(0, row) as number;
  }

  versionAt(row: number): Version | null {
    return this.versioned ? rowVersion(this.rows, row, this.versions, this.ties) : null;
  }

  versionOf(winner: Winner): Version | null {
    if (winner.version === undefined) winner.version = this.versionAt(winner.row);
    return winner.version;
  }

  /**
   * Each key's winner among the rows; `repeated`, whether some key has several rows; `mixed`, whether some
   * key's rows lack different fields.
   */
  winners(): { winners: Map<Key, Winner>; repeated: boolean; mixed: boolean } {
    const { rows, absentColumn } = this;
    const winners = new Map<Key, Winner>();
    let repeated = false;
    let mixed = false;
    for (let row = 0; row < rows.length; row++) {
      const key = this.keyAt(row);
      const unitNumber = this.unitAt(row);
      const current = winners.get(key);
      if (current) {
        repeated = true;
        if (!current.mixed && absentColumn >= 0 && !sameText(rows, absentColumn, current.first, row))
          current.mixed = mixed = true;
        const version = this.versionAt(row);
        const currentVersion = this.versionOf(current);
        const newer = version && currentVersion ? compareVersions(version, currentVersion) : 0;
        if (newer < 0 || (newer === 0 && unitNumber < current.unit)) continue;
        current.unit = unitNumber;
        current.version = version;
        current.row = row;
        continue;
      }
      winners.set(key, { unit: unitNumber, version: undefined, row, first: row, mixed: false });
    }
    return { winners, repeated, mixed };
  }
}

/**
 * Decides what a batch writes of a unit table (its rows sealed), by the rule above, and deletes the stored
 * units it replaces. Keys outside the range the loader knows to be stored need no query (see
 * key-ranges.ts); the range is widened by the batch's keys. A key whose winning document lacks a field
 * another of its documents (or the stored row) carries is left out of both, and returned as partial: it is
 * folded field by field (partial.ts, docs/ingest.md "A document updates only what it carries"). Documents
 * that carry the same fields (the common case) cost nothing more than a comparison of their
 * `_absent_fields` bytes.
 */
export async function mergeUnits(
  connection: DuckDBConnection,
  appenders: AppenderPool,
  rows: TableRows,
  store: string,
  keyRanges: KeyRanges,
): Promise<MergeDecision> {
  const batch = new UnitRows(rows);
  const { def, versioned, versionNames, absentColumn } = batch;
  const unit = def.unit!;
  const keyAt = (row: number) => batch.keyAt(row);
  const absentAt = (row: number) => batch.absentAt(row);
  const versionOf = (winner: Winner) => batch.versionOf(winner);
  const { winners, repeated, mixed } = batch.winners();
  // The absences of every row of the keys whose rows differ in them (rare: read only then).
  const absences = new Map<Key, (string | null)[]>();
  if (mixed)
    for (let row = 0; row < rows.length; row++) {
      const key = keyAt(row);
      if (!winners.get(key)!.mixed) continue;
      const list = absences.get(key) ?? [];
      list.push(absentAt(row));
      absences.set(key, list);
    }
  const partialKeys = new Set<Key>();
  const winningUnits = () => new Set([...winners.values()].map((w) => w.unit));
  const decision = (subset: boolean, fresh: Key[] | null): MergeDecision => {
    if (partialKeys.size === 0) return { units: subset ? winningUnits() : null, partial: null, fresh };
    const units = new Set<number>();
    for (let row = 0; row < rows.length; row++)
      if (partialKeys.has(keyAt(row))) units.add(rows.get(0, row) as number);
    for (const key of partialKeys) winners.delete(key);
    return { units: winningUnits(), partial: { keys: [...partialKeys], units }, fresh };
  };
  for (const [key, others] of absences)
    if (takesFromOthers(absentAt(winners.get(key)!.row), others)) partialKeys.add(key);
  const keys = [...winners.keys()];
  const span = KeyRanges.span(keys);
  const unseen = span !== null && (await keyRanges.outside(connection, def.name, unit.key, store, span));
  keyRanges.widen(def.name, store, span);
  if (unseen) return decision(repeated, keys);

  // The stored versions (and absences) of the batch's keys.
  const keyTable = await loadKeys(connection, appenders, keys, rows.kinds[batch.keyColumn] === 'str');
  const column = (c: string) => `t.${ident(c)}`;
  const version = versionNames.length > 1 ? `coalesce(${versionNames.map(column).join(', ')})` : null;
  const versionSql = !versioned ? 'NULL' : `epoch_us(${version ?? column(versionNames[0]!)})`;
  const absentSql = absentColumn < 0 ? 'NULL' : column('_absent_fields');
  const tieSql = (unit.ties ?? []).map((c) => `, ${column(c)}`).join('');
  const reader = await connection.runAndReadAll(
    `SELECT ${column(unit.key)}, ${absentSql}, ${versionSql}${tieSql} FROM ${ident(def.name)} t ` +
      `SEMI JOIN ${keyTable} keys ON t.${ident(unit.key)} = keys.k ` +
      `WHERE t._store = ${literal(store)}${keyRangeSql('t', unit.key, keys)}`,
  );
  const stored = new Map<Key, { version: Version; absent: string | null }>();
  for (const [key, absent, micros, ...tieValues] of reader.getRows()) {
    const found: Version = {
      micros: micros === null ? null : BigInt(micros as bigint),
      ties: tieValues.map((v) => (v === null || typeof v === 'string' ? v : BigInt(v as bigint))),
    };
    const k = keyOf(key)!;
    const previous = stored.get(k);
    if (!previous || compareVersions(found, previous.version) > 0)
      stored.set(k, { version: found, absent: absent as string | null });
  }
  // A stored unit stays when its version is newer than the batch's; an equal one is replaced (arrival).
  const displaced: Key[] = [];
  let kept = false;
  for (const [key, found] of stored) {
    const winner = winners.get(key)!;
    if (
      versioned &&
      found.version.micros !== null &&
      compareVersions(versionOf(winner)!, found.version) < 0
    ) {
      // The stored row wins: what the batch's rows carry among themselves no longer matters.
      partialKeys.delete(key);
      if (takesFromOthers(found.absent, absences.get(key) ?? [absentAt(winner.first)])) partialKeys.add(key);
      else {
        winners.delete(key);
        kept = true;
      }
    } else if (partialKeys.has(key) || takesFromOthers(absentAt(winner.row), [found.absent])) {
      partialKeys.add(key);
    } else displaced.push(key);
  }
  const subset = kept || partialKeys.size > 0;
  if (displaced.length) {
    const replaced = subset
      ? await loadKeys(connection, appenders, displaced, keyTable === TEXT_KEYS)
      : keyTable;
    await connection.run(deleteUnitsSql(def, store, replaced, displaced));
  }
  return decision(repeated || subset, stored.size === 0 ? keys : null);
}

/**
 * The `_absent_fields` of the stored rows of `keys` in a unit table (null: the row carries every tracked
 * field), by key; keys without a stored row are missing. Keys outside the range the loader knows to be stored
 * need no query (see key-ranges.ts).
 */
export async function storedAbsences(
  connection: DuckDBConnection,
  appenders: AppenderPool,
  def: TableDef,
  store: string,
  keys: readonly Key[],
  keyRanges: KeyRanges,
): Promise<Map<Key, string | null>> {
  const found = new Map<Key, string | null>();
  const span = KeyRanges.span(keys);
  if (keys.length === 0) return found;
  if (span !== null && (await keyRanges.outside(connection, def.name, def.unit!.key, store, span)))
    return found;
  const text = keys.some((k) => typeof k === 'string');
  const keyTable = await loadKeys(connection, appenders, keys, text);
  const key = ident(def.unit!.key);
  const reader = await connection.runAndReadAll(
    `SELECT t.${key}, t._absent_fields FROM ${ident(def.name)} t SEMI JOIN ${keyTable} keys ON t.${key} = keys.k ` +
      `WHERE t._store = ${literal(store)}${keyRangeSql('t', def.unit!.key, keys)}`,
  );
  for (const [k, absent] of reader.getRows()) {
    const stored = keyOf(k)!;
    // Several stored rows of a key (none should be) count as lacking fields if any does.
    if (found.get(stored) === undefined || absent !== null) found.set(stored, absent as string | null);
  }
  return found;
}

/**
 * Deletes the stored units of a unit table whose keys are in `keyTable`, with the rows they own; `keys`
 * (a superset) bound the key column so that DuckDB skips the row groups outside them.
 */
function deleteUnitsSql(def: TableDef, store: string, keyTable: string, keys: readonly Key[]): string {
  const statements = [def, ...ownedBy(def.name)].map((table) => {
    const column = table === def ? def.unit!.key : table.owner!.column;
    const name = ident(table.name);
    return (
      `DELETE FROM ${name} USING ${keyTable} keys ` +
      `WHERE ${name}._store = ${literal(store)} AND ${name}.${ident(column)} = keys.k${keyRangeSql(name, column, keys)}`
    );
  });
  return statements.join(';\n');
}
