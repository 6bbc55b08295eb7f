/**
 * Where a JSON text first breaks the grammar (RFC 8259), as a line and column an editor jumps to, with what
 * was expected there. JSON.parse names a character offset at best (Node 20 names none for an unexpected
 * token), which nobody can find in a file; the config file's errors use this instead (src/config.ts).
 */

export interface JsonSyntaxError {
  /** 1-based. */
  line: number;
  /** 1-based, in characters of that line. */
  column: number;
  message: string;
}

class Broken extends Error {
  constructor(
    readonly offset: number,
    message: string,
  ) {
    super(message);
  }
}

const NUMBER = /-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?/y;
const ESCAPES = new Set(['"', '\\', '/', 'b', 'f', 'n', 'r', 't']);

function describe(char: string | undefined): string {
  if (char === undefined) return 'the end of the file';
  if (char === '\n' || char === '\r') return 'a line break';
  return `'${char}'`;
}

/** The first syntax error of `text`, or null when it is JSON. */
export function findJsonSyntaxError(text: string): JsonSyntaxError | null {
  let i = 0;
  const fail = (message: string, at = i): never => {
    throw new Broken(at, message);
  };
  const space = () => {
    while (i < text.length && ' \t\n\r'.includes(text[i]!)) i++;
  };
  /** Where a value was expected: a trailing comma, a comment, a quote of the wrong kind, or anything else. */
  const noValue = (after: string): never => {
    const char = text[i];
    if (char === undefined) fail(`the file ends where a value should follow ${after}`);
    if (char === '/') fail('JSON allows no comments');
    if (char === "'") fail('strings need double quotes ("…"), not single quotes');
    return fail(`expected a value after ${after}, found ${describe(char)}`);
  };
  const string = () => {
    const start = i++;
    for (;;) {
      const char = text[i];
      if (char === undefined) fail('the file ends inside a string: a closing " is missing', start);
      if (char === '"') {
        i++;
        return;
      }
      if (char!.charCodeAt(0) < 0x20)
        fail(`${describe(char)} inside a string: write it escaped (\\n, \\t) or close the string before it`);
      if (char === '\\') {
        const next = text[i + 1];
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6)))
            fail('\\u must be followed by four hexadecimal digits');
          i += 6;
          continue;
        }
        if (next === undefined || !ESCAPES.has(next))
          fail(`\\${next ?? ''} is not an escape JSON knows: write a backslash as \\\\`);
        i += 2;
        continue;
      }
      i++;
    }
  };
  const value = (after: string): void => {
    space();
    const char = text[i];
    const compound = char === '{' ? object : char === '[' ? array : char === '"' ? string : null;
    if (compound) {
      compound();
      return;
    }
    if (char === '-' || (char !== undefined && char >= '0' && char <= '9')) {
      NUMBER.lastIndex = i;
      const match = NUMBER.exec(text);
      if (!match) fail('not a number JSON allows (digits, with an optional sign, fraction and exponent)');
      i += match![0].length;
      return;
    }
    for (const word of ['true', 'false', 'null']) {
      if (text.startsWith(word, i)) {
        i += word.length;
        return;
      }
    }
    if (char !== undefined && /[A-Za-z_]/.test(char))
      fail('a word that is not true, false or null: strings need double quotes');
    noValue(after);
  };
  const object = () => {
    i++;
    let comma = -1;
    space();
    if (text[i] === '}') {
      i++;
      return;
    }
    for (;;) {
      space();
      const char = text[i];
      if (char !== '"') {
        if (char === '}' && comma >= 0)
          fail('a trailing comma: JSON allows no comma after the last property', comma);
        if (char === undefined) fail('the file ends inside an object: a closing } is missing');
        if (char === "'") fail('property names need double quotes ("…"), not single quotes');
        if (char === '/') fail('JSON allows no comments');
        fail(`expected a double-quoted property name, found ${describe(char)}`);
      }
      string();
      space();
      if (text[i] !== ':') fail(`expected ':' after the property name, found ${describe(text[i])}`);
      i++;
      value("a property's ':'");
      space();
      const next = text[i];
      if (next === '}') {
        i++;
        return;
      }
      if (next !== ',') {
        if (next === undefined) fail('the file ends inside an object: a closing } is missing');
        fail(`expected ',' or '}' after a property's value, found ${describe(next)} (a missing comma?)`);
      }
      comma = i++;
    }
  };
  const array = () => {
    i++;
    let comma = -1;
    space();
    if (text[i] === ']') {
      i++;
      return;
    }
    for (;;) {
      space();
      if (text[i] === ']' && comma >= 0)
        fail('a trailing comma: JSON allows no comma after the last item', comma);
      value("'[' or ','");
      space();
      const next = text[i];
      if (next === ']') {
        i++;
        return;
      }
      if (next !== ',') {
        if (next === undefined) fail('the file ends inside a list: a closing ] is missing');
        fail(`expected ',' or ']' after a list item, found ${describe(next)} (a missing comma?)`);
      }
      comma = i++;
    }
  };
  try {
    space();
    if (i === text.length) fail('the file is empty: expected a JSON object');
    value('the start of the file');
    space();
    if (i < text.length) fail(`unexpected ${describe(text[i])} after the end of the JSON value`);
    return null;
  } catch (error) {
    if (!(error instanceof Broken)) throw error;
    const before = text.slice(0, error.offset);
    const lineStart = before.lastIndexOf('\n') + 1;
    return {
      line: (before.match(/\n/g)?.length ?? 0) + 1,
      column: error.offset - lineStart + 1,
      message: error.message,
    };
  }
}
