import type { DuckDBConnection, StatementType } from '@duckdb/node-api';
import { ERROR_CODES, isStoreSyncError, StoreSyncError } from '../errors.js';
import { duckdbApi } from './duckdb-api.js';

/**
 * What `store-sync query` lets a statement do: read the warehouse, and the user's own files through read_csv,
 * read_parquet, read_json and the like. The read-only open keeps the warehouse as it is, but DuckDB still
 * writes any file the user can write (`COPY … TO` the warehouse's own path replaced it with a 7-byte CSV, and
 * the command exited 0), attaches new database files, installs extensions over the network and stores secrets
 * under ~/.duckdb. DuckDB 1.5 has no setting that allows reading files while forbidding writing them
 * (enable_external_access, allowed_directories and disabled_filesystems govern both alike), so a statement is
 * refused by its type (checkStatement) and what settings can forbid is forbidden, then locked
 * (SANDBOX_SETTINGS). `CALL enable_logging(storage = 'file', …)` is not covered by the lock, but the logger it
 * sets up serves the statements after it, and a run has one statement in an instance closed after it.
 */

/**
 * The connection's settings, in one round trip before the user's statement: times in UTC; no extension
 * installed or loaded on the statement's behalf (DuckDB otherwise downloads httpfs for an https:// path, or
 * excel for read_xlsx); no secret written to ~/.duckdb; and then the configuration locked, so that neither
 * SET nor PRAGMA can undo any of it. The extensions built into the bindings (Parquet, JSON, ICU) need no
 * loading.
 */
export const SANDBOX_SETTINGS = [
  "SET TimeZone = 'UTC'",
  'SET autoinstall_known_extensions = false',
  'SET autoload_known_extensions = false',
  'SET allow_persistent_secrets = false',
  'SET lock_configuration = true',
].join('; ');

const EXTENSIONS = 'install or load DuckDB extensions';
const SETTINGS = "change DuckDB's settings (SET, RESET, USE, PRAGMA name = value)";

/** Why a statement type is refused, completing "store-sync query … cannot". */
/** The statement types' values (the type of the same name is the package's). */
const Statement = duckdbApi.StatementType;

const REFUSED: Partial<Record<StatementType, string>> = {
  [Statement.COPY]: 'run COPY, which writes files (COPY … TO) or loads them into tables',
  [Statement.COPY_DATABASE]: 'copy a database (COPY FROM DATABASE)',
  [Statement.EXPORT]: 'run EXPORT DATABASE, which writes files',
  // In a read-only DuckDB, ATTACH opens a file read-only unless told READ_WRITE, which creates the file. One
  // statement per run leaves no statement to read an attached database with, so none is attached at all.
  [Statement.ATTACH]: 'attach databases (ATTACH … READ_WRITE creates or changes the file it names)',
  [Statement.DETACH]: 'detach databases',
  [Statement.LOAD]: `${EXTENSIONS} (INSTALL, LOAD)`,
  [Statement.UPDATE_EXTENSIONS]: `${EXTENSIONS} (UPDATE EXTENSIONS)`,
  [Statement.EXTENSION]: EXTENSIONS,
  [Statement.SET]: SETTINGS,
  [Statement.VARIABLE_SET]: SETTINGS,
};

/**
 * The statement types `query` runs: reads, and statements that could change only the warehouse, which the
 * read-only open refuses, or the connection's temporary objects, which end with the run (CREATE TEMP TABLE, a
 * macro, a secret kept in memory). EXPLAIN is checked by what it explains (explainedStatement). Any other
 * type, including one a later DuckDB adds, is refused.
 */
const ALLOWED = new Set<StatementType>([
  Statement.SELECT,
  Statement.PRAGMA,
  Statement.CALL,
  Statement.CREATE,
  Statement.CREATE_FUNC,
  Statement.DROP,
  Statement.ALTER,
  Statement.INSERT,
  Statement.UPDATE,
  Statement.DELETE,
  Statement.MERGE_INTO,
  Statement.ANALYZE,
  Statement.VACUUM,
  Statement.TRANSACTION,
  Statement.PREPARE,
  Statement.EXECUTE,
]);

export function refusal(what: string, cause?: unknown): StoreSyncError {
  return new StoreSyncError(
    ERROR_CODES.QUERY,
    `store-sync query only reads (the warehouse, and your own files through read_csv, read_parquet or read_json), so it cannot ${what}: store-sync export writes the warehouse as Parquet files, and --format csv or json with a redirect saves a result`,
    cause === undefined ? {} : { cause },
  );
}

function checkType(type: StatementType): void {
  if (ALLOWED.has(type)) return;
  throw refusal(REFUSED[type] ?? `run ${Statement[type] ?? `type ${type}`} statements`);
}

/**
 * Where the next token starts, past blanks and comments as DuckDB's scanner reads them (`--` to the end of
 * the line, `/* … *\/` nested); undefined inside a comment that does not end.
 */
function skipBlanks(sql: string, from: number): number | undefined {
  let i = from;
  for (;;) {
    while (i < sql.length && ' \t\n\r\f\v'.includes(sql[i]!)) i++;
    if (sql.startsWith('--', i)) {
      while (i < sql.length && sql[i] !== '\n' && sql[i] !== '\r') i++;
    } else if (sql.startsWith('/*', i)) {
      let depth = 0;
      do {
        if (i >= sql.length) return undefined;
        if (sql.startsWith('/*', i)) {
          depth++;
          i += 2;
        } else if (sql.startsWith('*/', i)) {
          depth--;
          i += 2;
        } else i++;
      } while (depth > 0);
    } else return i;
  }
}

/** The keyword or name at `i`, upper-cased (DuckDB's names ignore case, quoted or not), and its length. */
function wordAt(sql: string, i: number): { word: string; length: number } {
  const match = /^(?:[A-Za-z_][A-Za-z0-9_$]*|"(?:[^"]|"")*")/.exec(sql.slice(i));
  if (!match) return { word: '', length: 0 };
  const text = match[0];
  const word = text.startsWith('"') ? text.slice(1, -1).replaceAll('""', '"') : text;
  return { word: word.toUpperCase(), length: text.length };
}

/** Where the statement starts, past blanks, comments and empty statements (`;`). */
function statementStart(sql: string): number | undefined {
  let i: number | undefined = 0;
  for (;;) {
    i = skipBlanks(sql, i);
    if (i === undefined || sql[i] !== ';') return i;
    i++;
  }
}

/** Whether the SQL holds no statement: only blanks, comments and semicolons. */
export function isEmptySql(sql: string): boolean {
  return statementStart(sql) === sql.length;
}

/**
 * Refuses, from its text, what preparing would already act on: DuckDB creates the folder of an EXPORT
 * DATABASE while it prepares it, and IMPORT DATABASE turns into the statements of the folder's load.sql
 * before anything is prepared. (Their types are refused too, after preparing: see checkStatement.)
 */
export function checkText(sql: string): void {
  const start = statementStart(sql);
  if (start === undefined) return;
  const first = wordAt(sql, start);
  const next = skipBlanks(sql, start + first.length);
  const second = next === undefined ? '' : wordAt(sql, next).word;
  if (first.word === 'EXPORT') throw refusal(REFUSED[Statement.EXPORT]!);
  if (first.word === 'IMPORT' || (first.word === 'PRAGMA' && second === 'IMPORT_DATABASE'))
    throw refusal('import databases (IMPORT DATABASE runs the statements of the folder it names)');
}

/**
 * The text of the statement an EXPLAIN explains: what follows `EXPLAIN`, `EXPLAIN ANALYZE` or `ANALYSE`
 * (then perhaps VERBOSE), `EXPLAIN VERBOSE` or `EXPLAIN (options)`, DuckDB's grammar for it. EXPLAIN ANALYZE
 * runs that statement (`EXPLAIN ANALYZE COPY … TO` writes the file), so it is checked as if it stood alone.
 * An options list with anything but words, numbers and plain quoted strings gives undefined: the caller
 * refuses what it cannot read.
 */
export function explainedStatement(sql: string): string | undefined {
  let i = statementStart(sql);
  if (i === undefined) return undefined;
  const explain = wordAt(sql, i);
  if (explain.word !== 'EXPLAIN' || explain.length !== 'EXPLAIN'.length) return undefined;
  i = skipBlanks(sql, i + explain.length);
  if (i === undefined) return undefined;
  if (sql[i] === '(') {
    i++;
    for (;;) {
      i = skipBlanks(sql, i);
      if (i === undefined) return undefined;
      const c = sql[i];
      if (c === ')') {
        i++;
        break;
      }
      if (c === "'" || c === '"') {
        // A quoted option value or name, its quote doubled inside; a backslash could escape (E'…').
        const quoted = /^(?:'(?:[^'\\]|'')*'|"(?:[^"\\]|"")*")/.exec(sql.slice(i));
        if (!quoted) return undefined;
        i += quoted[0].length;
      } else if (c !== undefined && /[A-Za-z0-9_.,+-]/.test(c)) i++;
      else return undefined;
    }
  } else {
    const next = wordAt(sql, i);
    if (next.word === 'ANALYZE' || next.word === 'ANALYSE') {
      i = skipBlanks(sql, i + next.length);
      if (i === undefined) return undefined;
      const verbose = wordAt(sql, i);
      if (verbose.word === 'VERBOSE') i += verbose.length;
    } else if (next.word === 'VERBOSE') i += next.length;
  }
  return sql.slice(i);
}

/**
 * Refuses a prepared statement whose type writes files, attaches databases, installs or loads extensions or
 * changes settings; an EXPLAIN, by the type of the statement it explains.
 */
export async function checkStatement(
  connection: DuckDBConnection,
  sql: string,
  type: StatementType,
): Promise<void> {
  if (type !== Statement.EXPLAIN) return checkType(type);
  const cannotTell = (cause?: unknown) =>
    refusal(
      'run an EXPLAIN whose statement it cannot make out (write EXPLAIN or EXPLAIN ANALYZE, then the statement)',
      cause,
    );
  const explained = explainedStatement(sql);
  if (explained === undefined) throw cannotTell();
  checkText(explained);
  let inner: StatementType;
  try {
    const extracted = await connection.extractStatements(explained);
    if (extracted.count !== 1) throw cannotTell();
    const prepared = await extracted.prepare(0);
    inner = prepared.statementType;
    prepared.destroySync();
  } catch (error) {
    // The whole EXPLAIN was prepared already: what follows it failing alone means it was not made out.
    throw isStoreSyncError(error) ? error : cannotTell(error);
  }
  if (inner === Statement.EXPLAIN) throw cannotTell();
  checkType(inner);
}

/** DuckDB's refusals of what SANDBOX_SETTINGS forbid, in the words of the checks above. */
export function settingsRefusal(message: string, cause: unknown): StoreSyncError | undefined {
  if (/the configuration has been locked/i.test(message)) return refusal(SETTINGS, cause);
  if (/Persistent secrets are disabled/i.test(message))
    return refusal('store secrets in files (CREATE PERSISTENT SECRET)', cause);
  const extension =
    /requires the extension (\w+)/i.exec(message)?.[1] ??
    /exists in the (\w+) extension/i.exec(message)?.[1] ??
    /required extension '(\w+)'/i.exec(message)?.[1];
  if (extension)
    return refusal(
      `${EXTENSIONS}, and this needs the ${extension} extension (https:// and s3:// paths need httpfs: download the file first, or use the DuckDB CLI)`,
      cause,
    );
  return undefined;
}
