/**
 * Whole-record checks that come before any column is read: nesting depth and unpaired UTF-16 surrogates.
 * Both walk the record with an explicit stack, never recursion, because the point is to survive records
 * that would overflow the call stack (JSON.stringify gives up near 5,000 levels and takes the process's
 * batch down with it). The fast pass keeps no paths; only a record that fails is walked again, with paths,
 * to name the field in the rejection.
 */

/** Deepest nesting of objects and arrays a record may have, the record itself being level 1. */
export const MAX_NESTING = 1000;

declare global {
  interface String {
    /** ES2024 (Node ≥ 20): false when the string holds an unpaired surrogate. */
    isWellFormed(): boolean;
  }
}

const SURROGATE_REASON =
  'contains an unpaired UTF-16 surrogate, which cannot be stored as UTF-8; expected well-formed Unicode text';
const DEPTH_REASON = `nested deeper than ${MAX_NESTING} levels; expected at most ${MAX_NESTING} levels of objects and arrays in a record`;

/** Null when the record may be normalized, else the reason it must be rejected (`field: what is wrong`). */
export function recordProblem(record: object): string | null {
  return firstProblem(record) ? describeProblem(record) : null;
}

/** Fast pass: true at the first problem; containers and their depths share one stack. */
function firstProblem(record: object): boolean {
  const stack: unknown[] = [record, 1];
  while (stack.length > 0) {
    const depth = stack.pop() as number;
    const value = stack.pop() as object;
    if (depth > MAX_NESTING) return true;
    if (Array.isArray(value)) {
      for (const item of value) {
        if (typeof item === 'string') {
          if (!item.isWellFormed()) return true;
        } else if (typeof item === 'object' && item !== null) stack.push(item, depth + 1);
      }
      continue;
    }
    for (const key in value) {
      if (!key.isWellFormed()) return true;
      const item = (value as Record<string, unknown>)[key];
      if (typeof item === 'string') {
        if (!item.isWellFormed()) return true;
      } else if (typeof item === 'object' && item !== null) stack.push(item, depth + 1);
    }
  }
  return false;
}

interface Frame {
  value: object;
  depth: number;
  path: string;
}

/** Paths of deeply nested junk stop growing after the first levels, which say where it is. */
const MAX_PATH = 120;
const extend = (path: string, step: string) =>
  path.length >= MAX_PATH ? path : (path + step).length > MAX_PATH ? `${path + step}...` : path + step;

/** Slow pass, for a record known to fail: the same walk in document order, carrying paths. */
function describeProblem(record: object): string {
  const stack: Frame[] = [{ value: record, depth: 1, path: '' }];
  while (stack.length > 0) {
    const { value, depth, path } = stack.pop()!;
    if (depth > MAX_NESTING) return `${path}: ${DEPTH_REASON}`;
    const children: Frame[] = [];
    const visit = (at: string, item: unknown): string | null => {
      if (typeof item === 'string' && !item.isWellFormed()) return `${at}: ${SURROGATE_REASON}`;
      if (typeof item === 'object' && item !== null)
        children.push({ value: item, depth: depth + 1, path: at });
      return null;
    };
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) {
        const found = visit(extend(path, `[${i}]`), value[i]);
        if (found) return found;
      }
    } else {
      for (const key of Object.keys(value)) {
        // JSON.stringify escapes the lone surrogate, so the reason itself stays storable.
        if (!key.isWellFormed())
          return `${extend(path, `[${JSON.stringify(key)}]`)}: the field name ${SURROGATE_REASON}`;
        const at = extend(path, path ? `.${key}` : key);
        const found = visit(at, (value as Record<string, unknown>)[key]);
        if (found) return found;
      }
    }
    // Reversed so the first field is walked first and the reason names the first problem in the document.
    for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
  }
  return '(record): could not be checked';
}

/** A record's text for the raw landing, or a marker standing in for a record too deep to serialize. */
export interface RawText {
  text: string;
  /** Null when `text` is the record exactly; else why the record is rejected and only a marker kept. */
  unserializable: string | null;
}

/**
 * JSON text of a received value. JSON.stringify recurses and overflows the stack near 5,000 levels; such
 * a record is over MAX_NESTING anyway (so it is rejected), and what is kept of it is a small marker with
 * its key and the reason, since there is no text of it to keep.
 */
export function rawText(value: unknown): RawText {
  try {
    return { text: JSON.stringify(value) ?? 'null', unserializable: null };
  } catch (error) {
    if (!(error instanceof RangeError) || typeof value !== 'object' || value === null) throw error;
    const problem = recordProblem(value) ?? `(record): ${DEPTH_REASON}`;
    const unserializable = `${problem}; the record is too deep to serialize, so the raw landing keeps only a marker`;
    const doc = value as Record<string, unknown>;
    const key =
      typeof doc.number === 'string'
        ? { number: doc.number }
        : typeof doc.id === 'number'
          ? { id: doc.id }
          : {};
    return { text: JSON.stringify({ store_sync_unserializable: unserializable, ...key }), unserializable };
  }
}
