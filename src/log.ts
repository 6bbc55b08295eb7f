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

/** Registers a value that must never be printed. Short values are ignored: masking "a" would garble output. */
export function registerSecret(value: string | undefined | null): void {
  if (value && value.length >= 4) secrets.add(value);
}

/** Replaces every registered secret in a string. */
export function redact(text: string): string {
  let out = text;
  for (const secret of secrets) {
    if (out.includes(secret)) out = out.split(secret).join('***');
  }
  return out;
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
