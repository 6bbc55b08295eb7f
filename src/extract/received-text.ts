/**
 * Each record's text as received, taken from its page's body, for the raw landing (src/load/landing.ts keeps
 * a record's text). Serializing every parsed record again for the landing cost more CPU than parsing the
 * page (docs/performance.md, "Issue 32 point 1"); a scan of the body that only finds where each record of
 * `results` begins and ends costs about a quarter of that. The texts are kept beside the parsed records (RECEIVED_TEXTS of
 * src/contracts.ts, by record object), and the landing falls back on
 * serializing the record wherever no text was kept: a body whose secrets were masked (its records were
 * re-made), a record that is not an object, one nested too deep (rawText turns it into a marker and the
 * landing must do the same), or a body this scan cannot follow.
 */

import { RECEIVED_TEXTS as texts } from '../contracts.js';

/** The text `record` was received as, if its page's body gave one. */
export function receivedText(record: unknown): string | undefined {
  return typeof record === 'object' && record !== null ? texts.get(record) : undefined;
}

/**
 * Deeper than this, a record keeps no text and is serialized for the landing as before: JSON.stringify
 * overflows near 5,000 levels, and such a record must become rawText's marker, not a text.
 */
const MAX_DEPTH = 256;

const QUOTE = 34;
const BACKSLASH = 92;
const COMMA = 44;
const COLON = 58;
const OPEN_BRACE = 123;
const CLOSE_BRACE = 125;
const OPEN_BRACKET = 91;
const CLOSE_BRACKET = 93;

const isSpace = (c: number) => c === 32 || c === 10 || c === 13 || c === 9;

function skipSpace(text: string, at: number): number {
  while (at < text.length && isSpace(text.charCodeAt(at))) at++;
  return at;
}

/** The index just past the string that opens at `at` (a quote), or -1. */
function stringEnd(text: string, at: number): number {
  let pos = at + 1;
  for (;;) {
    const quote = text.indexOf('"', pos);
    if (quote < 0) return -1;
    let backslashes = 0;
    for (let i = quote - 1; text.charCodeAt(i) === BACKSLASH; i--) backslashes++;
    if (backslashes % 2 === 0) return quote + 1;
    pos = quote + 1;
  }
}

/**
 * The end of the value that starts at `at` (past its last character) and its nesting depth, or null when the
 * text is not what JSON.parse accepted (it was, so that only happens on a scan error: the caller then keeps
 * no texts). Scalars end at the first delimiter.
 */
function valueEnd(text: string, at: number): { end: number; depth: number } | null {
  const first = text.charCodeAt(at);
  if (first === QUOTE) {
    const end = stringEnd(text, at);
    return end < 0 ? null : { end, depth: 0 };
  }
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) {
    let pos = at;
    for (; pos < text.length; pos++) {
      const c = text.charCodeAt(pos);
      if (c === COMMA || c === CLOSE_BRACE || c === CLOSE_BRACKET || isSpace(c)) break;
    }
    return pos === at ? null : { end: pos, depth: 0 };
  }
  let depth = 0;
  let deepest = 0;
  for (let pos = at; pos < text.length; pos++) {
    const c = text.charCodeAt(pos);
    if (c === QUOTE) {
      const end = stringEnd(text, pos);
      if (end < 0) return null;
      pos = end - 1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (++depth > deepest) deepest = depth;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--depth === 0) return { end: pos + 1, depth: deepest };
    }
  }
  return null;
}

/**
 * The spans of the elements of the top-level object's `results` array in `body` (the last such key, as
 * JSON.parse keeps the last), each with its depth; null when the body is not an object with such an array.
 */
export function resultSpans(body: string): { start: number; end: number; depth: number }[] | null {
  let pos = skipSpace(body, 0);
  if (body.charCodeAt(pos) !== OPEN_BRACE) return null;
  let found: { start: number; end: number; depth: number }[] | null = null;
  pos = skipSpace(body, pos + 1);
  if (body.charCodeAt(pos) === CLOSE_BRACE) return null;
  for (;;) {
    if (body.charCodeAt(pos) !== QUOTE) return null;
    const keyEnd = stringEnd(body, pos);
    if (keyEnd < 0) return null;
    const raw = body.slice(pos + 1, keyEnd - 1);
    // An escaped key is decoded as JSON.parse decoded it.
    const key = raw.includes('\\') ? (JSON.parse(body.slice(pos, keyEnd)) as string) : raw;
    pos = skipSpace(body, keyEnd);
    if (body.charCodeAt(pos) !== COLON) return null;
    pos = skipSpace(body, pos + 1);
    if (key === 'results') {
      if (body.charCodeAt(pos) !== OPEN_BRACKET) {
        found = null;
        const value = valueEnd(body, pos);
        if (!value) return null;
        pos = value.end;
      } else {
        found = [];
        pos = skipSpace(body, pos + 1);
        if (body.charCodeAt(pos) === CLOSE_BRACKET) pos++;
        else
          for (;;) {
            const value = valueEnd(body, pos);
            if (!value) return null;
            found.push({ start: pos, end: value.end, depth: value.depth });
            pos = skipSpace(body, value.end);
            const c = body.charCodeAt(pos);
            pos++;
            if (c === CLOSE_BRACKET) break;
            if (c !== COMMA) return null;
            pos = skipSpace(body, pos);
          }
      }
    } else {
      const value = valueEnd(body, pos);
      if (!value) return null;
      pos = value.end;
    }
    pos = skipSpace(body, pos);
    const c = body.charCodeAt(pos);
    if (c === CLOSE_BRACE) return found;
    if (c !== COMMA) return null;
    pos = skipSpace(body, pos + 1);
  }
}

/**
 * Keeps the text of each record of a page parsed from `body` (`parsed`, JSON.parse's result of that very
 * text). Nothing is kept when the spans found do not match the parsed records one for one.
 */
export function keepResultTexts(body: string, parsed: unknown): void {
  if (typeof parsed !== 'object' || parsed === null) return;
  const results = (parsed as { results?: unknown }).results;
  if (!Array.isArray(results) || results.length === 0) return;
  const spans = resultSpans(body);
  if (!spans || spans.length !== results.length) return;
  for (const [i, span] of spans.entries()) {
    const record: unknown = results[i];
    if (typeof record !== 'object' || record === null || span.depth > MAX_DEPTH) continue;
    texts.set(record, body.slice(span.start, span.end));
  }
}
