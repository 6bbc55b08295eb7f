/**
 * Structured logging to stderr: human lines on a terminal, JSON lines with --log-format json.
 * Every secret registered here is masked in every line, whatever its source, so a token that
 * slips into an error message from a library still never reaches the output.
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';
export type LogFormat = 'human' | 'json';
export type LogFields = Record<string, unknown>;

const LEVELS: Record<LogLevel, number> = { debug: 10, info: 20, warn: 30, error: 40 };
const secrets = new Set<string>();
/** One pattern for every registered secret in every spelling JSON allows (see secretPattern). */
let anySecret: RegExp | null = null;

/** Registers a value that must never be printed. Short values are ignored: masking "a" would garble output. */
export function registerSecret(value: string | undefined | null): void {
  if (!value || value.length < 4 || secrets.has(value)) return;
  secrets.add(value);
  // Longest first: a secret that contains another is masked whole.
  anySecret = new RegExp(
    [...secrets]
      .sort((a, b) => b.length - a.length)
      .map(secretPattern)
      .join('|'),
    'g',
  );
}

/** The character a JSON short escape (`\n`, `\/`, …) stands for, by the letter after the backslash. */
const SHORT_ESCAPES: Record<string, string> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  '\b': 'b',
  '\f': 'f',
  '\n': 'n',
  '\r': 'r',
  '\t': 't',
};

/** Regex source: one or more backslashes. */
const BACKSLASHES = String.raw`\\+`;
const regexUnit = (unit: number) => `\\u${unit.toString(16).padStart(4, '0')}`;

/**
 * A secret as a server or a serializer may spell it: each UTF-16 unit as itself, as `\uXXXX` (hex in any
 * case; a character outside the BMP as its two surrogates) or as its short escape (`\/`, `\"`, `\\`, `\n`,
 * …), mixed freely, as JSON allows (RFC 8259 §7). Escapes may have more than one backslash: text that was
 * JSON-encoded twice (an escaped body quoted in a JSON log line) doubles them.
 */
function secretPattern(secret: string): string {
  let pattern = '';
  for (let i = 0; i < secret.length; i++) {
    const unit = secret.charCodeAt(i);
    const hex = unit
      .toString(16)
      .padStart(4, '0')
      .replace(/[a-f]/g, (h) => `[${h}${h.toUpperCase()}]`);
    const alternatives = [`${BACKSLASHES}u${hex}`];
    const short = SHORT_ESCAPES[secret[i]!];
    // A backslash itself: one or more of them (as is, escaped, escaped twice).
    if (short === '\\') alternatives.push(BACKSLASHES);
    else {
      if (short !== undefined) alternatives.push(`${BACKSLASHES}${short === '/' ? '\\/' : short}`);
      alternatives.push(regexUnit(unit));
    }
    pattern += `(?:${alternatives.join('|')})`;
  }
  return pattern;
}

/**
 * Replaces every registered secret in a string, in every spelling JSON allows: as is, and escaped in any
 * mix of `\uXXXX` and short escapes (a PHP server writes `/` as `\/`; another may escape every non-ASCII
 * character). Text without a backslash can only hold a secret as is, which is checked first and cheaply.
 */
export function redact(text: string): string {
  if (anySecret === null) return text;
  if (!text.includes('\\')) {
    let out = text;
    for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join('***');
    return out;
  }
  anySecret.lastIndex = 0;
  return anySecret.test(text) ? text.replace(anySecret, '***') : text;
}

/**
 * Masks every registered secret in every string of a parsed JSON value, keys included, in place (objects and
 * arrays are changed, strings replaced). A parsed string holds the decoded text, so the secret is found as
 * is, whatever escapes the body spelled it with (and still escaped, when a server escaped it twice).
 * Returns the value (a string comes back masked).
 */
export function redactValue<T>(value: T): T {
  if (anySecret === null) return value;
  return maskParsed(value) as T;
}

/** Walks with a stack of its own, not recursion: a hostile body may nest deeper than the call stack goes. */
function maskParsed(root: unknown): unknown {
  if (typeof root === 'string') return redact(root);
  if (root === null || typeof root !== 'object') return root;
  const pending: object[] = [root];
  for (let node = pending.pop(); node !== undefined; node = pending.pop()) {
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) {
        const item: unknown = node[i];
        if (typeof item === 'string') node[i] = redact(item);
        else if (item !== null && typeof item === 'object') pending.push(item);
      }
      continue;
    }
    const record = node as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      const item = record[key];
      const masked = typeof item === 'string' ? redact(item) : item;
      if (masked !== null && typeof masked === 'object') pending.push(masked);
      const maskedKey = redact(key);
      if (maskedKey !== key) {
        delete record[key];
        record[maskedKey] = masked;
      } else if (masked !== item) record[key] = masked;
    }
  }
  return root;
}

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  /** A logger whose lines all carry these fields (run id, store, stream). */
  child(fields: LogFields): Logger;
}

export interface LoggerOptions {
  format?: LogFormat;
  level?: LogLevel;
  write?: (line: string) => void;
  fields?: LogFields;
}

function formatHuman(level: LogLevel, event: string, fields: LogFields): string {
  const { message, ...rest } = fields;
  const parts = Object.entries(rest)
    .filter(([, v]) => v !== undefined)
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  const head = level === 'info' ? '' : `${level.toUpperCase()} `;
  const text = typeof message === 'string' ? `${event}: ${message}` : event;
  return `${head}${text}${parts.length ? ` ${parts.join(' ')}` : ''}`;
}

export function createLogger(options: LoggerOptions = {}): Logger {
  const format = options.format ?? 'human';
  const minimum = LEVELS[options.level ?? 'info'];
  const write = options.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const base = options.fields ?? {};
  const emit = (level: LogLevel, event: string, fields: LogFields = {}) => {
    if (LEVELS[level] < minimum) return;
    const all = { ...base, ...fields };
    const line =
      format === 'json'
        ? JSON.stringify({ time: new Date().toISOString(), level, event, ...all }, jsonSafe)
        : formatHuman(level, event, all);
    write(redact(line));
  };
  return {
    debug: (e, f) => emit('debug', e, f),
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    error: (e, f) => emit('error', e, f),
    child: (fields) => createLogger({ ...options, fields: { ...base, ...fields } }),
  };
}

function jsonSafe(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

/** A logger that drops everything, for library callers and tests that do not care. */
export const silentLogger: Logger = createLogger({ write: () => {} });
