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
} from '../model/index.js';
import { ColumnError, compileRowWriter, type RowWriter, type WalkContext } from './compile.js';
import { applyDerived, type DerivedColumn, derivedColumns } from './derive.js';
import type { EnvelopeMeta } from './detect.js';
import { FastPath, type FastResult } from './fast.js';
import { fastPathOn } from './fast-switch.js';
import { recordProblem } from './guard.js';
import { absentFields, type TrackedField, trackedFields } from './known.js';
import { type RowsSnapshot, TableRows } from './rows.js';

/**
 * Record → rows. A record is walked along its entity's plan; every row goes into the columnar buffer of
 * its table, whose first column `_unit` numbers the unit (merge root) it belongs to. A value that cannot
 * be stored exactly rejects the whole record and takes back every row it wrote.
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
  /** Columns computed from the row once it is written (derive.ts). */
  derived: DerivedColumn[];
  /** For a unit: the `_absent_fields` column and the tracked fields (known.ts). */
  absent: { column: number; names: readonly TrackedField[] } | null;
  keyIndex: number;
  /** Key columns checked after each row (an optional unit key is handled before: its row is skipped). */
  keys: KeyCheck[];
  children: CompiledNode[];
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
    void contract;
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
    try {
      this.walk(root, record, null, ctx, 0, 0, 0);
    } catch (error) {
      touched.forEach((t, i) => {
        t.truncate(marks[i]!);
      });
      this.units = units;
      throw error;
    }
    return NO_FIELD_REJECTIONS;
  }

  /** The field paths the model does not map that the records normalized since the last call carried. */
  takeSchemaChanges(): SchemaChange[] {
    return [];
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
  }

  /** Takes back the buffers of snapshots of its tables once they are loaded (see TableRows.reuse). */
  reuse(snapshots: readonly RowsSnapshot[]): void {
    for (const snapshot of snapshots) this.tables.get(snapshot.name)?.reuse(snapshot);
  }

  private walk(
    c: CompiledNode,
    item: Record<string, unknown>,
    parent: Record<string, unknown> | null,
    ctx: WalkContext,
    index: number,
    parentIndex: number,
    unit: number,
  ): void {
    const savedRoot = ctx.unitRoot;
    if (c.node.unit) {
      unit = ++this.units;
      ctx.unitRoot = item;
    }
    const rows = c.rows;
    const row = rows.addRow();
    rows.setInt64(0, row, unit);
    try {
      c.write(item, parent, ctx, index, parentIndex, rows, row);
    } catch (error) {
      if (error instanceof ColumnError) throw this.reject(ctx, error.path, error.value, error.expected);
      throw error;
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
      return;
    }
    // A row without its key could not be merged (and DuckDB refuses it): the whole document is rejected.
    for (const key of c.keys)
      if (!rows.valid[key.index]![row])
        throw this.reject(ctx, key.field, undefined, key.expected, 'missing, ');
    for (const child of c.children) {
      const field = child.node.field!;
      const value = item[field];
      if (value === undefined || value === null) continue;
      if (child.node.single) {
        if (!isObject(value)) throw this.reject(ctx, field, value, 'an object');
        this.walk(child, value, item, ctx, 0, index, unit);
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
    ctx.unitRoot = savedRoot;
  }

  private reject(
    ctx: WalkContext,
    field: string,
    value: unknown,
    expected: string,
    what = '',
  ): NormalizeError {
    const trail = ctx.fields.map((f, i) => `${f}[${ctx.indexes[i]}]`);
    if (field) trail.push(field);
    const path = trail.join('.') || '(record)';
    const got = value === undefined ? '' : `got ${truncate(JSON.stringify(value))}, `;
    return new NormalizeError(`${path}: ${what}${got}expected ${expected}`, documentKey(ctx.doc));
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
    const write = compileRowWriter(rows.columns, rows.kinds, shape, node.sources);
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
    return {
      node,
      rows,
      write,
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

function truncate(text: string | undefined): string {
  if (text === undefined) return 'undefined';
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}
