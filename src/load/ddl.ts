import { createHash } from 'node:crypto';
import type { DuckDBBlobValue, DuckDBConnection, DuckDBListValue } from '@duckdb/node-api';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import { ident, literal, type TableDef, tableDef, tableDefinitions } from '../model/index.js';
import { commitThroughCheckpoint } from './checkpoint.js';
import { ChunkAppender, partColumns } from './chunks.js';
import { LANDING_PART_BYTES } from './landing.js';
import { modelsSql } from './models.js';
import type { OpenOptions } from './open.js';
import { RUNTIME_PROFILES, withProfileMemory } from './runtime-profile.js';

/**
 * Schema from the registry: tables, columns and the `COMMENT ON` data dictionary.
 * Migrations are additive and idempotent (new tables, new columns); they run only when the registry's
 * fingerprint differs from the one recorded in `_schema`, so opening an up-to-date warehouse writes nothing.
 */

const SCHEMA_TABLE = '_schema';

export function createTableSql(def: TableDef): string {
  const columns = def.columns.map(
    (c) =>
      `  ${ident(c.name)} ${c.type}${def.key.includes(c.name) ? ' NOT NULL' : ''}${c.uncompressed ? ' USING COMPRESSION uncompressed' : ''}`,
  );
  return `CREATE TABLE IF NOT EXISTS ${ident(def.name)} (\n${columns.join(',\n')}\n)`;
}

export function commentSql(def: TableDef): string[] {
  const keyNote = ` Key: ${def.key.join(', ')}.`;
  return [
    `COMMENT ON TABLE ${ident(def.name)} IS ${literal(def.comment + keyNote)}`,
    ...def.columns.map(
      (c) => `COMMENT ON COLUMN ${ident(def.name)}.${ident(c.name)} IS ${literal(c.comment)}`,
    ),
  ];
}

/**
 * The statements that bring a warehouse to the registry's schema. `existing` names the tables the warehouse
 * already has: only those need their columns added (ADD COLUMN IF NOT EXISTS) and backfilled, because a
 * table created here already has every column. Those statements are catalog changes, a third of the CPU
 * of creating a fresh warehouse when run for every column (docs/performance.md, "Start-up"). Without
 * `existing`, every statement: the fingerprint is taken over that full list, so it stays what it was.
 */
function migrationSql(existing?: ReadonlySet<string>): string[] {
  const statements: string[] = [];
  for (const def of tableDefinitions) {
    statements.push(createTableSql(def));
    if (existing && !existing.has(def.name)) {
      statements.push(...commentSql(def));
      continue;
    }
    for (const c of def.columns) {
      statements.push(`ALTER TABLE ${ident(def.name)} ADD COLUMN IF NOT EXISTS ${ident(c.name)} ${c.type}`);
      // Rows stored before the column existed get what it means for them (a no-op once they have it).
      if (c.backfill)
        statements.push(
          `UPDATE ${ident(def.name)} SET ${ident(c.name)} = ${c.backfill} WHERE ${ident(c.name)} IS NULL`,
        );
    }
    statements.push(...commentSql(def));
  }
  // The analyst views read the tables above, so they come after them.
  statements.push(...modelsSql());
  return statements;
}

export function schemaFingerprint(): string {
  return createHash('sha256').update(migrationSql().join(';\n')).digest('hex').slice(0, 16);
}

/** Creates or upgrades the schema; a no-op when the recorded fingerprint matches. */
export async function migrate(connection: DuckDBConnection, options: OpenOptions): Promise<void> {
  await connection.run(createTableSql(tableDef(SCHEMA_TABLE)));
  const fingerprint = schemaFingerprint();
  const current = await connection.runAndReadAll(
    `SELECT fingerprint FROM ${SCHEMA_TABLE} ORDER BY applied_at DESC LIMIT 1`,
  );
  if (current.getRows()[0]?.[0] === fingerprint) return;
  const oldLanding = await oldLandingColumns(connection);
  const existing = await existingTables(connection);
  const upgrade = async () => {
    await connection.run('BEGIN');
    try {
      await connection.run(migrationSql(existing).join(';\n'));
      const widen = await wideningSql(connection);
      if (widen.length) await connection.run(widen.join(';\n'));
      if (oldLanding.length) await moveLandingToParts(connection, oldLanding);
      await connection.run(`INSERT INTO ${SCHEMA_TABLE} VALUES (${literal(fingerprint)}, now())`);
      // Moving a landing appends it whole: see commitThroughCheckpoint.
      if (oldLanding.length) await commitThroughCheckpoint(connection);
      else await connection.run('COMMIT');
    } catch (error) {
      // A failed write (disk full, file too large) may leave nothing to roll back: the rollback's own error
      // must not hide the one that says what went wrong.
      await connection.run('ROLLBACK').catch(() => undefined);
      const message = error instanceof Error ? error.message : String(error);
      throw new StoreSyncError(ERROR_CODES.WAREHOUSE, `could not write the warehouse schema: ${message}`, {
        cause: error,
      });
    }
  };
  // DuckDB pins every old blob of the vector it fetches a row from, so a large landing in the old layout
  // needs far more memory to move than a writer's limit (docs/performance.md, "Settings and the measurements
  // behind them"). A one-off upgrade, so it runs under the bulk-copy profile (DuckDB's default limit), lifted
  // around the whole transaction: an aborted transaction refuses even SET, so restoring the limit inside it
  // would hide the error that aborted it.
  if (oldLanding.length) await withProfileMemory(connection, options, RUNTIME_PROFILES.bulkCopy, upgrade);
  else await upgrade();
}

/** The tables of the warehouse's main schema. */
async function existingTables(connection: DuckDBConnection): Promise<Set<string>> {
  const reader = await connection.runAndReadAll(
    "SELECT table_name FROM duckdb_tables() WHERE database_name = current_database() AND schema_name = 'main'",
  );
  return new Set(reader.getRows().map(([name]) => String(name)));
}

/** Columns of `_raw_landing` that held its blocks' bytes before `_raw_landing_parts` existed. */
const OLD_LANDING_COLUMNS = ['payload', 'payload_parts'] as const;

/**
 * Which of OLD_LANDING_COLUMNS the warehouse's `_raw_landing` still has: the oldest warehouses had only
 * `payload`, later ones both; none once the landing has been moved (or in a new warehouse).
 */
async function oldLandingColumns(connection: DuckDBConnection): Promise<string[]> {
  const reader = await connection.runAndReadAll(
    `SELECT column_name FROM information_schema.columns
     WHERE table_schema = 'main' AND table_name = '_raw_landing' AND column_name IN (${OLD_LANDING_COLUMNS.map(literal).join(', ')})`,
  );
  return reader.getRows().map(([name]) => String(name));
}

/** Old landing rows read per query (by row id: a fetch, where a scan would read every row's list). */
const ROWS_PER_MOVE = 8;

/**
 * Moves the bytes of a warehouse's landing blocks written before `_raw_landing_parts` existed (a blob in
 * `payload`, or a list of 16 KB parts in `payload_parts`) into it, cut into parts of LANDING_PART_BYTES
 * like new blocks. `_raw_landing` is then rewritten without those columns and the old table dropped: left
 * in place, every checkpoint after a new block would rewrite the old bytes with the landing's row group
 * (see landing.ts), and an UPDATE would keep their old values in memory until the commit. Runs in the
 * schema migration's transaction, after the registry's tables and columns exist. The parts are cut here,
 * not in SQL: array_slice copies each block once per part, far too slow for a large landing
 * (docs/performance.md, "Settings and the measurements behind them").
 */
async function moveLandingToParts(connection: DuckDBConnection, present: string[]): Promise<void> {
  const select = OLD_LANDING_COLUMNS.map((c) => (present.includes(c) ? ident(c) : 'NULL')).join(', ');
  const rows = await connection.runAndReadAll('SELECT rowid FROM _raw_landing ORDER BY first_seq');
  const rowids = rows.getRows().map(([rowid]) => String(rowid));
  // The table was just created from the registry, so its columns are in the registry's order.
  const columns = partColumns(tableDef('_raw_landing_parts').columns.map((c) => c.name));
  const appender = await ChunkAppender.open(connection, '_raw_landing_parts');
  try {
    for (let i = 0; i < rowids.length; i += ROWS_PER_MOVE) {
      const reader = await connection.runAndReadAll(
        `SELECT first_seq, ${select} FROM _raw_landing WHERE rowid IN (${rowids.slice(i, i + ROWS_PER_MOVE).join(', ')})`,
      );
      for (const [seq, payload, list] of reader.getRows()) {
        if (payload === null && list === null) continue;
        const block =
          payload !== null
            ? (payload as DuckDBBlobValue).bytes
            : Buffer.concat((list as DuckDBListValue).items.map((p) => (p as DuckDBBlobValue).bytes));
        appender.appendParts(columns, Number(seq), block, LANDING_PART_BYTES);
      }
    }
  } finally {
    appender.close();
  }
  const landing = tableDef('_raw_landing');
  const kept = landing.columns.map((c) => ident(c.name)).join(', ');
  await connection.run(
    [
      'ALTER TABLE _raw_landing RENAME TO _raw_landing_moved',
      createTableSql(landing),
      `INSERT INTO _raw_landing (${kept}) SELECT ${kept} FROM _raw_landing_moved`,
      'DROP TABLE _raw_landing_moved',
      ...commentSql(landing),
    ].join(';\n'),
  );
}

const DECIMAL_TYPE = /^DECIMAL\((\d+),(\d+)\)$/;

/**
 * A column whose registry type became a wider DECIMAL (subscriptions.shipping_price: DECIMAL(12,2) →
 * DECIMAL(18,3)) is widened in place: ADD COLUMN IF NOT EXISTS leaves an existing column's type alone, and
 * a narrower column would round the values it now receives. Widening loses nothing; nothing is narrowed.
 */
async function wideningSql(connection: DuckDBConnection): Promise<string[]> {
  const reader = await connection.runAndReadAll(
    "SELECT table_name, column_name, data_type FROM information_schema.columns WHERE table_schema = 'main'",
  );
  const existing = new Map(reader.getRows().map(([t, c, type]) => [`${t}.${c}`, String(type)]));
  const statements: string[] = [];
  for (const def of tableDefinitions) {
    for (const c of def.columns) {
      const want = DECIMAL_TYPE.exec(c.type);
      const have = DECIMAL_TYPE.exec(existing.get(`${def.name}.${c.name}`) ?? '');
      if (!want || !have || c.type === have[0]) continue;
      const [p, s, oldP, oldS] = [want[1], want[2], have[1], have[2]].map(Number) as number[];
      if (s! >= oldS! && p! - s! >= oldP! - oldS!)
        statements.push(
          `ALTER TABLE ${ident(def.name)} ALTER COLUMN ${ident(c.name)} SET DATA TYPE ${c.type}`,
        );
    }
  }
  return statements;
}
