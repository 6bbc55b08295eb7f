import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { LineSplitter, type Piece, type Splitter, ValueSplitter } from '../../src/ingest/splitters.js';

/** The splitters cut the same documents, at the same lines and offsets, however the bytes are chunked. */

function split(make: () => Splitter, bytes: Buffer, cuts: number[]): Piece[] {
  const splitter = make();
  const pieces: Piece[] = [];
  let at = 0;
  for (const cut of [...cuts.filter((c) => c > 0 && c < bytes.length)].sort((a, b) => a - b)) {
    pieces.push(...splitter.push(bytes.subarray(at, cut)));
    at = cut;
  }
  pieces.push(...splitter.push(bytes.subarray(at)), ...splitter.finish());
  return pieces;
}

const docArb = fc.dictionary(
  fc.string({ maxLength: 6 }),
  fc.oneof(fc.string(), fc.integer(), fc.constant(null), fc.array(fc.string(), { maxLength: 3 })),
  { maxKeys: 4, noNullPrototype: true },
);

describe('document splitters', () => {
  it('NDJSON: one piece per non-blank line, independent of chunking', () => {
    fc.assert(
      fc.property(
        fc.array(docArb, { maxLength: 8 }),
        fc.array(fc.nat({ max: 400 }), { maxLength: 6 }),
        (docs, cuts) => {
          const text = docs
            .map((d, i) => (i % 3 === 1 ? `\r\n${JSON.stringify(d)}` : JSON.stringify(d)))
            .join('\n');
          const bytes = Buffer.from(text);
          const pieces = split(() => new LineSplitter(), bytes, cuts);
          assert.deepEqual(
            pieces.map((p) => JSON.parse(p.text)),
            docs,
          );
          assert.equal(pieces.at(-1)?.end ?? 0, docs.length ? bytes.length : 0);
        },
      ),
    );
  });

  it('JSON arrays and concatenated pretty values: one piece per element, with its start line', () => {
    fc.assert(
      fc.property(
        fc.array(docArb, { maxLength: 6 }),
        fc.array(fc.nat({ max: 600 }), { maxLength: 6 }),
        fc.boolean(),
        (docs, cuts, array) => {
          const body = docs.map((d) => JSON.stringify(d, null, 2));
          const text = array ? `[\n${body.join(',\n')}\n]\n` : body.join('\n');
          const pieces = split(() => new ValueSplitter(array), Buffer.from(text), cuts);
          assert.deepEqual(
            pieces.map((p) => JSON.parse(p.text)),
            docs,
          );
          assert.ok(pieces.every((p) => !p.error));
          for (const p of pieces) assert.equal(text.split('\n')[p.line - 1]!.trimStart()[0], p.text[0]);
        },
      ),
    );
  });

  it('reports a truncated value and an unclosed array instead of losing them', () => {
    const truncated = split(() => new ValueSplitter(false), Buffer.from('{"a":1}\n{"b":[1,'), []);
    assert.equal(truncated.length, 2);
    assert.match(truncated[1]!.error!, /ends inside a JSON value/);
    const unclosed = split(() => new ValueSplitter(true), Buffer.from('[{"a":1},'), []);
    assert.equal(unclosed.length, 2);
    assert.match(unclosed[1]!.error!, /not closed/);
  });
});
