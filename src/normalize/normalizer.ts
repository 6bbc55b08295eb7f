import type { EntityKind, SchemaContract } from '../contracts.js';
import {
  type ColumnDef,
  type ColumnType,
  dataTables,
  type PlanNode,
  plans,
  planTables,
  sourcedColumns,
  sourceFor,
  type TableDef,
  tableDef,
  unitVersionColumns,
} from '../model/index.js';
import {
  type CarefulWriter,
  ColumnError,
  type ColumnFailure,
  compileRowWriter,
  type RowWriter,
  type WalkContext,
} from './compile.js';
import { applyDerived, type DerivedColumn, derivedColumns } from './derive.js';
import type { EnvelopeMeta } from './detect.js';
import { FastPath, type FastResult } from './fast.js';
import { fastPathOn } from './fast-switch.js';
import { recordProblem } from './guard.js';
import { absentFields, type KnownTree, knownTree, type TrackedField, trackedFields } from './known.js';
import { type RowsSnapshot, TableRows } from './rows.js';
import { INEXACT_NUMBER, inexactNumbers } from './values.js';

/**
 * Record → rows. A record is walked along its entity's plan; every row goes into the columnar buffer of
 * its table, whose first column `_unit` numbers the unit (merge root) it belongs to. A value that cannot
 * be stored exactly leaves its column NULL and is kept in the row's `_extra` (a field rejection), unless
 * it is a key or a version, without which the row could not be merged: then the whole record is rejected
 * and every row it wrote is taken back. Fields the model does not map go to `_extra` too (known.ts).
 */

export const UNIT_COLUMN: ColumnDef = {
  name: '_unit',
  type: 'BIGINT',
  comment: 'Unit (merge root) of the row.',
};

/** Staging columns of a data table: `_unit`, then every sourced column in registry order. */
export const stagingColumns = (def: TableDef): ColumnDef[] => [UNIT_COLUMN, ...sourcedColumns(def)];

export class NormalizeError extends Error {
  constructor(
    readonly reason: string,
    readonly key: string | null,
    /** The field to blame, as a path in the record (`lines[0].id`), when one is. */
    readonly fieldPath: string | null = null,
  ) {
    super(reason);
  }
}

// Declared beside the stream options that set it (the config reads it without loading the normalizer).
export { SCHEMA_CONTRACTS, type SchemaContract } from '../contracts.js';

/**
 * A value refused for its column while the rest of its record loads: the column is NULL, the value is in
 * the row's `_extra` under its field, and `_rejected_records` gets a row of level `field`.
 */
export interface FieldRejection {
  table: string;
  /** The document's key (documentKey). */
  key: string | null;
  /** Path in the record, from its root (`lines[0].price_incl_tax`). */
  fieldPath: string;
  value: unknown;
  expected: string;
  /** `<fieldPath>: got <value>, expected <expected>`. */
  reason: string;
}

/** A field path the model does not map, seen in a batch: `count` rows of `table` carried it. */
export interface SchemaChange {
  table: string;
  /** Relative to the row's item (`zz_a`, `billing_address.zz_b`). */
  fieldPath: string;
  /** The first value seen, as JSON, cut to 200 characters. */
  example: string;
  count: number;
}

const NO_FIELD_REJECTIONS: readonly FieldRejection[] = Object.freeze([]);

/** A key column every row of a table must fill (DuckDB holds keys NOT NULL): where it comes from. */
interface KeyCheck {
  index: number;
  /** The field named in a rejection: the source path, or the column when the value comes from elsewhere. */
  field: string;
  expected: string;
}

interface CompiledNode {
  node: PlanNode;
  rows: TableRows;
  write: RowWriter;
  /** The writer run again on a row `write` refused, collecting every column that fails. */
  careful: CarefulWriter;
  /** By staging column: whether a value it refuses rejects the record (a key or a version column). */
  strict: boolean[];
  /** The `_extra` column, or -1. */
  extra: number;
  /** What the model maps of this node's items (known.ts). */
  known: KnownTree;
  /** Columns computed from the row once it is written (derive.ts). */
  derived: DerivedColumn[];
  /** For a unit: the `_absent_fields` column and the tracked fields (known.ts). */
  absent: { column: number; names: readonly TrackedField[] } | null;
  keyIndex: number;
  /** Key columns checked after each row (an optional unit key is handled before: its row is skipped). */
  keys: KeyCheck[];
  children: CompiledNode[];
}

/** A value of a row's item refused for its column, by its path relative to the item. */
interface Refusal {
  path: string;
  value: unknown;
  expected: string;
}

const KEY_EXPECTED: Partial<Record<ColumnType, string>> = {
  BIGINT: 'an integer id',
  VARCHAR: 'a string',
  TIMESTAMPTZ: 'a date-time',
};

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export class Normalizer {
  readonly tables = new Map<string, TableRows>();
  /** Units numbered so far; staging rows carry the number in `_unit`. */
  units = 0;
  private readonly compiled = new Map<string, CompiledNode>();
  private readonly touched = new Map<EntityKind, TableRows[]>();
  /** Made on first use: a normalizer that never reads a document's bytes does not compile it. */
  private fast: FastPath | null = null;
  /** The schema contract of the record being normalized. */
  private contract: SchemaContract = 'evolve';
  /** Field rejections of the record being normalized (null: none yet). */
  private refusals: FieldRejection[] | null = null;
  /** Unknown field paths of the record being normalized, by `table NUL path`, merged when it loads. */
  private recordChanges: Map<string, SchemaChange> | null = null;
  /** Unknown field paths of the records loaded since takeSchemaChanges. */
  private readonly schemaChanges = new Map<string, SchemaChange>();

  constructor(
    /** Whether documents in bytes may take the fast path (fast.ts; turned off by fast-switch.ts). */
    private readonly fastPath = fastPathOn(),
  ) {
    for (const def of dataTables()) this.tables.set(def.name, new TableRows(def.name, stagingColumns(def)));
  }

  /**
   * Rows of one record, or a NormalizeError (and no rows) when the record cannot be stored: its key or
   * version is unusable, its structure is wrong, or (`freeze`) it carries fields the model does not map.
   * A value that does not fit its column is a field rejection: returned, and the record still loads.
   * `envelope` is what the envelope the record came in said of it, for its unit rows' `_event_*` columns.
   */
  normalize(
    record: Record<string, unknown>,
    entity: EntityKind,
    apiVersion: string | null,
    envelope: EnvelopeMeta | null = null,
    contract: SchemaContract = 'evolve',
  ): readonly FieldRejection[] {
    const problem = recordProblem(record);
    if (problem !== null) throw new NormalizeError(problem, documentKey(record));
    const root = this.compile(entity, apiVersion);
    const touched = this.touchedTables(entity);
    const marks = touched.map((t) => t.length);
    const units = this.units;
    const ctx: WalkContext = {
      doc: record,
      unitRoot: record,
      apiVersion,
      envelope,
      fields: [],
      indexes: [],
    };
    this.contract = contract;
    this.refusals = null;
    this.recordChanges = null;
    try {
      this.walk(root, record, null, ctx, 0, 0, 0);
    } catch (error) {
      touched.forEach((t, i) => {
        t.truncate(marks[i]!);
      });
      this.units = units;
      this.refusals = null;
      this.recordChanges = null;
      throw error;
    }
    // (Set by walk: TypeScript keeps the null assigned above.)
    const changes = this.recordChanges as Map<string, SchemaChange> | null;
    if (changes !== null) {
      for (const [id, change] of changes) {
        const seen = this.schemaChanges.get(id);
        if (seen) seen.count += change.count;
        else this.schemaChanges.set(id, change);
      }
      this.recordChanges = null;
    }
    const refusals = (this.refusals as FieldRejection[] | null) ?? NO_FIELD_REJECTIONS;
    this.refusals = null;
    return refusals;
  }

  /**
   * The field paths the model does not map that the records loaded since the last call carried (a record
   * rejected whole counts for nothing), as plain data; empties the tally.
   */
  takeSchemaChanges(): SchemaChange[] {
    const changes = [...this.schemaChanges.values()];
    this.schemaChanges.clear();
    return changes;
  }

  /**
   * Rows of a document still in bytes, by the fast path (fast.ts), when it is an order this normalizer would
   * load whole; null, with nothing written, when it must be parsed and normalized the ordinary way (always,
   * with the fast path turned off).
   */
  normalizeBytes(bytes: Uint8Array): FastResult | null {
    if (!this.fastPath) return null;
    this.fast ??= new FastPath(this.tables, {
      get: () => this.units,
      set: (units) => {
        this.units = units;
      },
    });
    return this.fast.normalize(bytes);
  }

  clear(): void {
    for (const rows of this.tables.values()) rows.clear();
    this.units = 0;
    this.schemaChanges.clear();
  }

  /** Takes back the buffers of snapshots of its tables once they are loaded (see TableRows.reuse). */
  reuse(snapshots: readonly RowsSnapshot[]): void {
    for (const snapshot of snapshots) this.tables.get(snapshot.name)?.reuse(snapshot);
  }

  /** Writes the rows of `item` and its children; true when the item was skipped (a user without an id). */
  private walk(
    c: CompiledNode,
    item: Record<string, unknown>,
    parent: Record<string, unknown> | null,
    ctx: WalkContext,
    index: number,
    parentIndex: number,
    unit: number,
  ): boolean {
    const savedRoot = ctx.unitRoot;
    if (c.node.unit) {
      unit = ++this.units;
      ctx.unitRoot = item;
    }
    const rows = c.rows;
    let row = rows.addRow();
    rows.setInt64(0, row, unit);
    let refused: Refusal[] | null = null;
    try {
      c.write(item, parent, ctx, index, parentIndex, rows, row);
    } catch (error) {
      if (!(error instanceof ColumnError)) throw error;
      // Rare: the row is written again, column by column, to learn every value that does not fit.
      rows.truncate(row);
      row = rows.addRow();
      rows.setInt64(0, row, unit);
      refused = this.writeCarefully(c, item, parent, ctx, index, parentIndex, row);
    }
    if (c.derived.length) applyDerived(rows, row, c.derived);
    if (c.absent !== null) {
      const absent = absentFields(item, c.absent.names);
      if (absent !== null) rows.setText(c.absent.column, row, absent);
    }
    if (c.node.optionalKey && !rows.valid[c.keyIndex]![row]) {
      rows.truncate(row);
      this.units--;
      ctx.unitRoot = savedRoot;
      return true;
    }
    // A row without its key could not be merged (and DuckDB refuses it): the whole document is rejected.
    for (const key of c.keys)
      if (!rows.valid[key.index]![row])
        throw this.reject(ctx, key.field, undefined, key.expected, 'missing, ');
    let skipped: Map<string, Record<string, unknown>> | null = null;
    for (const child of c.children) {
      const field = child.node.field!;
      const value = item[field];
      if (value === undefined || value === null) continue;
      if (child.node.single) {
        if (!isObject(value)) throw this.reject(ctx, field, value, 'an object');
        ctx.fields.push(field);
        ctx.indexes.push(-1);
        const wasSkipped = this.walk(child, value, item, ctx, 0, index, unit);
        ctx.fields.pop();
        ctx.indexes.pop();
        // A skipped item's unknown fields are kept by the parent row, under the field that held it.
        if (wasSkipped && hasUnknown(value, child.known)) {
          const lost = this.extraOf(c.node.table, value, child.known, null, null, field, ctx);
          if (lost !== null) {
            skipped ??= new Map();
            skipped.set(field, lost);
          }
        }
        continue;
      }
      if (!Array.isArray(value)) throw this.reject(ctx, field, value, 'an array');
      ctx.fields.push(field);
      ctx.indexes.push(0);
      for (let i = 0; i < value.length; i++) {
        const element = value[i];
        ctx.indexes[ctx.indexes.length - 1] = i;
        if (!isObject(element)) throw this.reject(ctx, '', element, 'an object');
        this.walk(child, element, item, ctx, i, index, unit);
      }
      ctx.fields.pop();
      ctx.indexes.pop();
    }
    // The row's `_extra` is written after its children's rows: no child is of the row's own table
    // (compileNode checks), so the row is still the last of its table and its text can be set.
    if (c.extra >= 0 && (refused !== null || skipped !== null || hasUnknown(item, c.known))) {
      const paths = refused === null ? null : refused.map((r) => r.path);
      const extra = this.extraOf(c.node.table, item, c.known, paths, skipped, '', ctx);
      if (extra !== null) {
        rows.setText(c.extra, row, JSON.stringify(extra));
        // A number JSON.parse may have changed is kept as it read it, and named like a refused value (one
        // refused whole, a JSON column, already is). Only those refused values count: two numbers named here are
        // two values, even when a key holding a dot makes one's path read like the inside of the other's.
        const valuesRefused = refused === null ? [] : [...refused];
        for (const { path, value } of inexactNumbers(extra)) {
          if (valuesRefused.some((r) => within(path, r.path))) continue;
          refused ??= [];
          refused.push({ path, value, expected: INEXACT_NUMBER });
        }
      }
    }
    if (refused !== null) {
      const key = documentKey(ctx.doc);
      this.refusals ??= [];
      for (const r of refused) {
        const fieldPath = pathIn(ctx, r.path);
        this.refusals.push({
          table: c.node.table,
          key,
          fieldPath,
          value: r.value,
          expected: r.expected,
          reason: `${fieldPath}: got ${truncate(shown(r.value))}, expected ${r.expected}`,
        });
      }
    }
    ctx.unitRoot = savedRoot;
    return false;
  }

  /**
   * Writes the row with the careful writer and sorts out what it refused: a key or version column rejects
   * the record (as the hot writer's error would); a value from outside the item (the unit's, the
   * document's, the parent's or the envelope's) is left NULL, the level it belongs to reporting it; the
   * item's own values are the row's refusals, one per path (a non-object on the way to several columns,
   * `billing_address: "x"`, is one).
   */
  private writeCarefully(
    c: CompiledNode,
    item: Record<string, unknown>,
    parent: Record<string, unknown> | null,
    ctx: WalkContext,
    index: number,
    parentIndex: number,
    row: number,
  ): Refusal[] | null {
    const failures: ColumnFailure[] = [];
    c.careful(item, parent, ctx, index, parentIndex, c.rows, row, failures);
    let refused: Refusal[] | null = null;
    for (const f of failures) {
      if (c.strict[f.column])
        throw this.reject(ctx, f.named, f.value, f.expected, '', f.itemRelative ? f.path : f.named);
      if (!f.itemRelative) continue;
      if (refused?.some((r) => within(f.path, r.path))) continue;
      if (refused !== null) refused = refused.filter((r) => !within(r.path, f.path));
      refused ??= [];
      refused.push({ path: f.path, value: f.value, expected: f.expected });
    }
    return refused;
  }

  /**
   * What goes to a row's `_extra` from `item` (at `prefix` in the row's item), in the item's order: the
   * fields the model does not map, the values refused at `refused` paths, and the unknown fields of
   * `skipped` child items; null when nothing. Unknown fields are also counted as schema changes of `table`,
   * rejected under `freeze` and not kept under `discard`.
   */
  private extraOf(
    table: string,
    item: Record<string, unknown>,
    tree: KnownTree,
    refused: readonly string[] | null,
    skipped: Map<string, Record<string, unknown>> | null,
    prefix: string,
    ctx: WalkContext,
  ): Record<string, unknown> | null {
    let out: Record<string, unknown> | null = null;
    for (const key in item) {
      const value = item[key];
      const entry = tree.get(key);
      const path = prefix === '' ? key : `${prefix}.${key}`;
      let kept: unknown;
      if (entry === undefined) {
        this.unknownField(table, path, value, ctx);
        if (this.contract !== 'discard') kept = value;
      } else if (entry === 'leaf') {
        if (refused !== null) kept = refusedPart(value, path, refused);
      } else if (entry === 'child') {
        // A child's table takes it, but this row's columns may read into it too (`user.email`).
        kept = skipped?.get(key);
        const part = refused === null ? undefined : refusedPart(value, path, refused);
        if (part !== undefined) kept = kept === undefined ? part : merged(part, kept);
      } else if (isObject(value)) {
        kept = this.extraOf(table, value, entry, refused, null, path, ctx) ?? undefined;
      } else if (value !== null && value !== undefined) {
        // Columns read fields inside it, and it is not an object: none of them could (a field rejection).
        kept = value;
      }
      if (kept !== undefined) {
        // A null-prototype object: a `__proto__` field (JSON.parse makes it an own field) stays a field.
        out ??= Object.create(null) as Record<string, unknown>;
        out[key] = kept;
      }
    }
    return out;
  }

  private unknownField(table: string, path: string, value: unknown, ctx: WalkContext): void {
    if (this.contract === 'freeze') {
      const fieldPath = pathIn(ctx, path);
      throw new NormalizeError(
        `${fieldPath}: unknown field (schema contract freeze)`,
        documentKey(ctx.doc),
        fieldPath,
      );
    }
    this.recordChanges ??= new Map();
    const changes = this.recordChanges;
    const id = `${table}\u0000${path}`;
    const change = changes.get(id);
    if (change) change.count++;
    else changes.set(id, { table, fieldPath: path, example: exampleOf(value), count: 1 });
  }

  private reject(
    ctx: WalkContext,
    field: string,
    value: unknown,
    expected: string,
    what = '',
    /** The field's path for `fieldPath`, when it is not `field` (a source's alternatives, `a|b`). */
    blamed = field,
  ): NormalizeError {
    const path = pathIn(ctx, field) || '(record)';
    const got = value === undefined ? '' : `got ${truncate(JSON.stringify(value))}, `;
    return new NormalizeError(
      `${path}: ${what}${got}expected ${expected}`,
      documentKey(ctx.doc),
      pathIn(ctx, blamed) || null,
    );
  }

  private touchedTables(entity: EntityKind): TableRows[] {
    let list = this.touched.get(entity);
    if (!list) {
      list = planTables(entity).map((name) => this.tables.get(name)!);
      this.touched.set(entity, list);
    }
    return list;
  }

  private compile(entity: EntityKind, shape: string | null): CompiledNode {
    const cacheKey = `${entity}|${shape}`;
    let compiled = this.compiled.get(cacheKey);
    if (!compiled) {
      compiled = this.compileNode(plans[entity], shape);
      this.compiled.set(cacheKey, compiled);
    }
    return compiled;
  }

  private compileNode(node: PlanNode, shape: string | null, root: PlanNode = node): CompiledNode {
    const def = tableDef(node.table);
    const rows = this.tables.get(node.table)!;
    const tracked = node.unit ? trackedFields(root, node, shape) : [];
    const absentColumn = rows.columns.findIndex((c) => c.source === '@absent');
    const { write, careful } = compileRowWriter(rows.columns, rows.kinds, shape, node.sources);
    const versions = new Set(unitVersionColumns(def));
    const keyName = def.unit?.key ?? '';
    const keyIndex = def.unit ? rows.columns.findIndex((c) => c.name === keyName) : -1;
    const keys: KeyCheck[] = [];
    rows.columns.forEach((column, index) => {
      if (!def.key.includes(column.name) || (node.optionalKey && index === keyIndex)) return;
      const source = node.sources?.[column.name] ?? column.source;
      const text = source === undefined ? null : sourceFor(source, shape);
      // A plain field path names what the document lacks; `$.id`, `^.id` or `#` come from elsewhere.
      const plain = text !== null && /^[A-Za-z_][\w.]*$/.test(text.split('|')[0]!);
      keys.push({
        index,
        field: plain ? text!.split('|')[0]! : `${column.name} (from ${text})`,
        expected: KEY_EXPECTED[column.type] ?? 'a value',
      });
    });
    // walk writes a row's `_extra` after its children's rows, which must therefore be of other tables.
    const below = (n: PlanNode): boolean =>
      (n.children ?? []).some((child) => child.table === node.table || below(child));
    if (below(node)) throw new Error(`plan node ${node.table} has a descendant of its own table`);
    return {
      node,
      rows,
      write,
      careful,
      strict: rows.columns.map((column) => def.key.includes(column.name) || versions.has(column.name)),
      extra: rows.columns.findIndex((column) => column.source === '@extra'),
      known: knownTree(root, node, shape),
      derived: derivedColumns(rows.columns),
      absent: absentColumn < 0 || tracked.length === 0 ? null : { column: absentColumn, names: tracked },
      keyIndex,
      keys,
      children: (node.children ?? []).map((n) => this.compileNode(n, shape, root)),
    };
  }
}

/** The document's own key, for `_rejected_records.key`: an order's number, else the record's id. */
function documentKey(doc: Record<string, unknown>): string | null {
  return typeof doc.number === 'string' ? doc.number : typeof doc.id === 'number' ? String(doc.id) : null;
}

/** `path` (relative to the current item) from the record's root: `lines[0].price`, `user.zz`. */
function pathIn(ctx: WalkContext, path: string): string {
  let out = '';
  for (let i = 0; i < ctx.fields.length; i++) {
    const index = ctx.indexes[i]!;
    const step = index < 0 ? ctx.fields[i]! : `${ctx.fields[i]}[${index}]`;
    out = out === '' ? step : `${out}.${step}`;
  }
  if (path === '') return out;
  return out === '' ? path : `${out}.${path}`;
}

/** Whether `item` holds anything its known tree does not map, or a non-object where columns read inside. */
function hasUnknown(item: Record<string, unknown>, tree: KnownTree): boolean {
  for (const key in item) {
    const entry = tree.get(key);
    if (entry === undefined) return true;
    if (typeof entry === 'string') continue;
    const value = item[key];
    if (value === null || value === undefined) continue;
    if (!isObject(value) || hasUnknown(value, entry)) return true;
  }
  return false;
}

/**
 * The part of a field kept whole by a column (`path`) that field rejections refused: all of it, or the
 * refused fields inside it (a column reading the whole object and others reading into it).
 */
function refusedPart(value: unknown, path: string, refused: readonly string[]): unknown {
  if (refused.includes(path)) return value;
  if (!isObject(value) || !refused.some((r) => r.startsWith(`${path}.`))) return undefined;
  let out: Record<string, unknown> | undefined;
  for (const key in value) {
    const part = refusedPart(value[key], `${path}.${key}`, refused);
    if (part === undefined) continue;
    out ??= Object.create(null) as Record<string, unknown>;
    out[key] = part;
  }
  return out;
}

/** Two `_extra` objects of one field as one: a row's refused values and a skipped child's unknown fields. */
function merged(a: unknown, b: unknown): unknown {
  if (!isObject(a) || !isObject(b)) return b;
  const out = Object.create(null) as Record<string, unknown>;
  for (const key in a) out[key] = a[key];
  for (const key in b) out[key] = b[key];
  return out;
}

/** A schema change's example: the value as JSON, cut to 200 characters (never inside a surrogate pair). */
function exampleOf(value: unknown): string {
  const text = JSON.stringify(value) ?? 'null';
  return text.length > 200 ? Array.from(text).slice(0, 200).join('') : text;
}

/** A value as a reason shows it: JSON, but a number JSON cannot write (Infinity) as itself, not as null. */
const shown = (value: unknown): string | undefined =>
  typeof value === 'number' && !Number.isFinite(value) ? String(value) : JSON.stringify(value);

/** Whether `path` is `base` or inside it (`base.x`, `base[0]`). */
const within = (path: string, base: string): boolean =>
  path === base || path.startsWith(`${base}.`) || path.startsWith(`${base}[`);

function truncate(text: string | undefined): string {
  if (text === undefined) return 'undefined';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
