import type { DuckDBConnection } from '@duckdb/node-api';
import {
  API_2023,
  API_2024,
  ident,
  literal,
  type PlanNode,
  plans,
  type TableDef,
  tableDef,
} from '../model/index.js';
import { type RowsSnapshot, stagingColumns, TableRows } from '../normalize/index.js';
import { type CarryGroup, carryGroups, columnCarriers, trackedFields } from '../normalize/known.js';
import { ChunkAppender, type Feed } from './chunks.js';
import { type PartialUnits, versionColumns } from './merge.js';

/**
 * The fold of a unit whose documents carry different fields (docs/ingest.md, "A document updates only what
 * it carries"): an order list item (no lines, transactions or addresses) and the full order, in either
 * order. merge.ts decides which keys need it (`takesFromOthers`); here they are folded in SQL:
 *
 * - the candidates are the stored row (arrival 0: it ranks lowest among equal versions) and the batch's
 *   documents of the key, ranked exactly as merge.ts `compareVersions` ranks them (version, then the ties
 *   when there is a version, then arrival);
 * - each column takes the value of the highest-ranked candidate that carries a field feeding it
 *   (`arg_max_null`: a field present as null is carried, and sets NULL); a column read from elsewhere than
 *   the item (the document, a constant, the envelope) and the version and its ties come from the
 *   highest-ranked candidate, so the folded row ranks as the document that won it;
 * - `_absent_fields` lists the fields no candidate carried, `_extra` merges the candidates' in rank order;
 * - the rows of each child array (a carry group, known.ts `carryGroups`) come whole from the highest-ranked
 *   candidate that carried the array: when that is the stored row they stay, otherwise they are replaced.
 *
 * The batch's rows of those units are first copied by value into temp tables (`partial_<table>`, made like
 * the warehouse table, through the Appender). A stored row made by a fold ranks as its winning document: a
 * document older than that winner but newer than the one that gave a field does not take that field over.
 */

/** How a unit table folds: where each column comes from, the fields tracked, the child arrays. */
interface FoldPlan {
  def: TableDef;
  /** Columns taken from the highest-ranked candidate carrying one of `names`, or (null) from the winner. */
  columns: { name: string; names: readonly string[] | null }[];
  /** Every tracked name of the table, in the order normalize writes them. */
  absentNames: string[];
  groups: CarryGroup[];
}

const foldPlans = new Map<string, FoldPlan>();

/** Every plan node that makes rows of `table` as a unit, with its plan's root. */
function unitNodes(table: string): { root: PlanNode; node: PlanNode }[] {
  const out: { root: PlanNode; node: PlanNode }[] = [];
  const visit = (root: PlanNode, node: PlanNode) => {
    if (node.unit && node.table === table) out.push({ root, node });
    for (const child of node.children ?? []) visit(root, child);
  };
  for (const root of Object.values(plans)) visit(root, root);
  return out;
}

/** `names` merged into `into`, each new one placed after the name that precedes it in `names`. */
function mergeOrder(into: string[], names: readonly string[]): void {
  names.forEach((name, i) => {
    if (into.includes(name)) return;
    const after = i === 0 ? -1 : into.indexOf(names[i - 1]!);
    into.splice(after + 1, 0, name);
  });
}

function foldPlan(table: string): FoldPlan {
  const cached = foldPlans.get(table);
  if (cached) return cached;
  const def = tableDef(table);
  const nodes = unitNodes(table);
  if (nodes.length === 0) throw new Error(`${table}: no plan makes its rows as units, so none can be folded`);
  const carriers = new Map<string, string[] | null>();
  const absentNames: string[] = [];
  const groups = new Map<string, CarryGroup>();
  for (const { root, node } of nodes) {
    for (const [column, names] of columnCarriers(root, node)) {
      const previous = carriers.get(column);
      carriers.set(
        column,
        names === null || previous === null ? null : [...new Set([...(previous ?? []), ...names])],
      );
    }
    for (const shape of [null, API_2023, API_2024])
      mergeOrder(
        absentNames,
        trackedFields(root, node, shape).map((t) => t.name),
      );
    for (const group of carryGroups(root, node)) {
      const id = JSON.stringify([group.tables, group.only]);
      const previous = groups.get(id);
      groups.set(id, {
        ...group,
        names: [...new Set([...(previous?.names ?? []), ...group.names])],
      });
    }
  }
  // The version and its ties decide the folded row's rank: they come from the winner, with the rest of it.
  const fromWinner = new Set([...versionColumns(def), ...(def.unit!.ties ?? [])]);
  const columns = stagingColumns(def)
    .slice(1)
    .filter((c) => c.name !== def.unit!.key && c.name !== '_absent_fields' && c.name !== '_extra')
    .map((c) => {
      const names = fromWinner.has(c.name) ? null : (carriers.get(c.name) ?? null);
      // A column no tracked field stands for (derived after the row, say) goes with the winner too.
      return { name: c.name, names: names?.length ? names : null };
    });
  const plan: FoldPlan = { def, columns, absentNames, groups: [...groups.values()] };
  foldPlans.set(table, plan);
  return plan;
}

/**
 * The rows of `rows` (sealed) that belong to `units`: its buffers copied (a copy of a batch's buffers is a
 * few memcpy) and filtered, leaving `rows` as it was for the winners' append.
 */
function copyUnits(rows: TableRows | undefined, def: TableDef, units: ReadonlySet<number>): TableRows {
  if (!rows || rows.length === 0) return new TableRows(def.name, stagingColumns(def));
  const length = rows.length;
  const snapshot: RowsSnapshot = {
    name: rows.name,
    length,
    i64: rows.i64.map((a) => a?.slice(0, length * 2) ?? null),
    f64: rows.f64.map((a) => a?.slice(0, length) ?? null),
    u8: rows.u8.map((a) => a?.slice(0, length) ?? null),
    text: rows.text.map((t) =>
      t ? { bytes: t.bytes.slice(0, t.ends[length - 1]), ends: t.ends.slice(0, length) } : null,
    ),
    list: rows.list.map((l) => l?.slice(0, length) ?? null),
    valid: rows.valid.map((v) => v.slice(0, length)),
  };
  const copy = TableRows.fromSnapshot(snapshot, rows.columns);
  copy.keepUnits(units);
  return copy;
}

const stagedName = (table: string) => `temp.main.${ident(`partial_${table}`)}`;

/** Puts the given units' rows of `def` alone in its temp table, made like the warehouse table. */
async function stage(
  connection: DuckDBConnection,
  def: TableDef,
  rows: TableRows | undefined,
  units: ReadonlySet<number>,
): Promise<void> {
  const columns = stagingColumns(def);
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE ${ident(`partial_${def.name}`)} AS ` +
      `SELECT NULL::BIGINT AS _unit, ${columns
        .slice(1)
        .map((c) => ident(c.name))
        .join(', ')} FROM ${ident(def.name)} LIMIT 0`,
  );
  const copy = copyUnits(rows, def, units);
  if (copy.length === 0) return;
  // An appender of its own, closed at once: the temp table is made anew for every fold.
  const appender = await ChunkAppender.open(connection, `partial_${def.name}`, 'temp');
  try {
    appender.append(
      copy,
      columns.map((_, column): Feed => ({ from: 'rows', column })),
    );
  } finally {
    appender.close();
  }
}

/** The standard columns of rows a fold writes. */
export interface FoldMeta {
  store: string;
  syncedAtMs: number;
  runId: string;
}

/**
 * Folds the partial keys of a unit table (merge.ts `mergeUnits`) with their stored rows, from the batch's
 * rows of the unit's family (`family`, by table, sealed and not yet filtered), inside the batch's
 * transaction. Returns the rows inserted.
 */
export async function foldPartialUnits(
  connection: DuckDBConnection,
  table: string,
  family: ReadonlyMap<string, TableRows>,
  partial: PartialUnits,
  meta: FoldMeta,
): Promise<number> {
  const plan = foldPlan(table);
  const { def } = plan;
  const key = ident(def.unit!.key);
  const groupTables = [...new Set(plan.groups.flatMap((g) => g.tables))];
  for (const name of [table, ...groupTables])
    await stage(connection, tableDef(name), family.get(name), partial.units);

  const version = def.unit!.version;
  const rank = [
    ...(version
      ? [
          `epoch_us(${version}) ASC NULLS FIRST`,
          ...(def.unit!.ties ?? []).map(
            (tie) => `CASE WHEN (${version}) IS NULL THEN NULL ELSE ${ident(tie)} END ASC NULLS FIRST`,
          ),
        ]
      : []),
    '_unit ASC',
  ].join(', ');
  const staged = stagedName(table);
  const store = literal(meta.store);
  const columnNames = stagingColumns(def)
    .slice(1)
    .map((c) => ident(c.name))
    .join(', ');
  // One flag per tracked name, `_a<i>`: whether the candidate lacked it, looked up once per candidate rather
  // than once per aggregate.
  const flags = new Map(plan.absentNames.map((name, i) => [name, `_a${i}`]));
  const flag = (name: string) => {
    const found = flags.get(name);
    if (!found) throw new Error(`${table}: the field ${name} is not among its tracked fields`);
    return found;
  };
  // The rank of a candidate that carries one of `names` (not all of them are absent), else NULL, which
  // arg_max skips: a FILTER per aggregate costs DuckDB a pass over the groups each, three times as much.
  const rankIf = (names: readonly string[]) =>
    `CASE WHEN NOT (${names.map(flag).join(' AND ')}) THEN _rank END`;
  const candidates =
    `SELECT *, row_number() OVER (PARTITION BY ${key} ORDER BY ${rank}) AS _rank${[...flags]
      .map(([name, alias]) => `, list_contains(_absent, ${literal(name)}) AS ${alias}`)
      .join('')} FROM (SELECT *, coalesce(string_split(_absent_fields, ','), []) AS _absent FROM (` +
    `SELECT 0::BIGINT AS _unit, ${columnNames} FROM ${ident(table)} ` +
    `WHERE _store = ${store} AND ${key} IN (SELECT ${key} FROM ${staged}) ` +
    `UNION ALL BY NAME SELECT * FROM ${staged}))`;
  const hasExtra = stagingColumns(def).some((c) => c.name === '_extra');
  const from = plan.groups.map((_, i) => ident(`_from_${i}`));
  const selections = [
    key,
    ...plan.columns.map(
      ({ name, names }) =>
        `arg_max_null(${ident(name)}, ${names ? rankIf(names) : '_rank'}) AS ${ident(name)}`,
    ),
    `nullif(concat_ws(',', ${
      [...flags]
        .map(([name, alias]) => `CASE WHEN bool_and(${alias}) THEN ${literal(name)} END`)
        .join(', ') || 'NULL'
    }), '') AS _absent_fields`,
    ...(hasExtra
      ? [
          // Per field, the newest document that sent it: its value whole, a null included. A JSON merge
          // patch would delete on null and mix two versions of a nested object into one never sent.
          'CASE WHEN count(_extra) = 0 THEN NULL ELSE to_json(list_reduce(list(from_json(_extra, ' +
            `'"MAP(VARCHAR, JSON)"') ORDER BY _rank) FILTER (WHERE _extra IS NOT NULL), ` +
            'lambda a, b: map_concat(a, b))) END AS _extra',
        ]
      : []),
    ...plan.groups.map(
      (group, i) => `arg_max(_unit, ${group.names.length ? rankIf(group.names) : '_rank'}) AS ${from[i]}`,
    ),
  ];
  await connection.run(
    `CREATE OR REPLACE TEMP TABLE partial_merged AS SELECT ${selections.join(', ')} ` +
      `FROM (${candidates}) GROUP BY ${key}`,
  );
  const merged = 'temp.main.partial_merged';
  const standard = `${store} AS _store, TIMESTAMPTZ ${literal(new Date(meta.syncedAtMs).toISOString())} AS _synced_at, ${literal(meta.runId)} AS _run_id`;
  let inserted = 0;
  await connection.run(
    `DELETE FROM ${ident(table)} WHERE _store = ${store} AND ${key} IN (SELECT ${key} FROM ${merged})`,
  );
  for (const [i, group] of plan.groups.entries()) {
    // 0: the stored row carried the array last, its rows stay; NULL: no candidate carried it.
    const replaced = `SELECT ${key} FROM ${merged} WHERE ${from[i]} > 0`;
    const only = group.only ? ` AND ${ident(group.only.column)} = ${literal(group.only.value)}` : '';
    for (const name of group.tables) {
      const owner = ident(tableDef(name).owner!.column);
      await connection.run(
        `DELETE FROM ${ident(name)} WHERE _store = ${store}${only} AND ${owner} IN (${replaced})`,
      );
      const result = await connection.run(
        `INSERT INTO ${ident(name)} BY NAME SELECT * EXCLUDE (_unit), ${standard} FROM ${stagedName(name)} ` +
          `WHERE _unit IN (SELECT ${from[i]} FROM ${merged} WHERE ${from[i]} > 0)${only}`,
      );
      inserted += Number(result.rowsChanged);
    }
  }
  const result = await connection.run(
    `INSERT INTO ${ident(table)} BY NAME SELECT * ${from.length ? `EXCLUDE (${from.join(', ')}) ` : ''}` +
      `, ${standard} FROM ${merged}`,
  );
  // The copies are not needed past the fold: dropped, they hold no memory until the next one.
  await connection.run(
    [merged, ...[table, ...groupTables].map(stagedName)].map((t) => `DROP TABLE ${t}`).join('; '),
  );
  return inserted + Number(result.rowsChanged);
}
