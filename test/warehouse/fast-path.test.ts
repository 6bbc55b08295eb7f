import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { describe, it, test } from 'node:test';
import fc from 'fast-check';
import { orderDocuments, UNKNOWN_FIELDS } from '../../bench/warehouse-data.js';
import { BatchBuilder as Batch } from '../../src/load/batch-builder.js';
import { DOCUMENTS_STREAM, KIND, loadDocument } from '../../src/load/documents.js';
import { Normalizer, type TableRows } from '../../src/normalize/index.js';
import { DocumentScan, Position } from '../../src/normalize/scan.js';
import { renderOrder2023, renderOrder2024 } from '../../src/sandbox/model/order-render.js';
import { orderNumberOf } from '../../src/sandbox/model/seed-subscriptions.js';
import { buildStore } from '../../src/sandbox/model/store.js';
import { fuzzParameters, fuzzRuns } from '../fuzz/support/cases.js';
import { type Line, lineArb, lineText } from '../fuzz/support/documents.js';
import { FIXTURES } from './helpers.js';

/**
 * The fast path (src/normalize/fast.ts) reads order documents from their bytes, without JSON.parse. It is
 * only allowed to be faster: these tests load the same documents as bytes (fast path first) and as text
 * (JSON.parse and the object normalizer only) and require every table, rejection and count to be the
 * same, byte for byte, `_unit` numbers included. The documents are written every way JSON allows (spaces,
 * escapes, non-ASCII, bytes that are not UTF-8, repeated names, odd numbers) and the fast path must also
 * actually be taken for ordinary orders, or these tests would prove nothing.
 */

const META = { store: 'main', runId: 'run', syncedAtMs: Date.UTC(2024, 4, 1) };

/** Loads each text both ways; returns how many the fast path took. */
function loadBothWays(texts: readonly (string | Buffer)[]): { fast: Batch; slow: Batch; fastTaken: number } {
  const fast = new Batch(new Normalizer(), META, 1);
  const slow = new Batch(new Normalizer(), META, 1);
  let fastTaken = 0;
  for (const text of texts) {
    const bytes = typeof text === 'string' ? Buffer.from(text, 'utf8') : text;
    const before = fast.counts.records;
    const rejectedBefore = fast.counts.rejections;
    const landedFast = fast.land(DOCUMENTS_STREAM, null, KIND.document, 'f:1', bytes);
    const fastRejections = loadDocument(fast, landedFast, bytes);
    if (
      fast.counts.records === before + 1 &&
      fast.counts.rejections === rejectedBefore &&
      fastRejections === 0
    )
      fastTaken++;
    const landedSlow = slow.land(DOCUMENTS_STREAM, null, KIND.document, 'f:1', bytes);
    assert.equal(
      loadDocument(slow, landedSlow, bytes.toString('utf8')),
      fastRejections,
      `rejections of ${bytes.toString('utf8').slice(0, 200)}`,
    );
  }
  return { fast, slow, fastTaken };
}

/** Every row of a table, each value as exactly what would be written (text as its raw bytes). */
function contents(rows: TableRows, skip: readonly string[] = []): string[] {
  rows.seal();
  const out: string[] = [];
  for (let row = 0; row < rows.length; row++) {
    const cells = rows.columns.map((def, column) => {
      if (skip.includes(def.name)) return '';
      if (!rows.valid[column]![row]) return 'NULL';
      const text = rows.text[column];
      if (text) {
        const start = row === 0 ? 0 : text.ends[row - 1]!;
        return `b:${Buffer.from(text.bytes.subarray(start, text.ends[row]!)).toString('hex')}`;
      }
      const value = rows.get(column, row);
      return typeof value === 'number' && Object.is(value, -0)
        ? '-0'
        : JSON.stringify(value, (_, v) => (typeof v === 'bigint' ? `${v}n` : v));
    });
    out.push(cells.join('|'));
  }
  return out;
}

function assertSame(fast: Batch, slow: Batch, what: string): void {
  assert.deepEqual(fast.counts, slow.counts, `${what}: counts`);
  for (const [name, rows] of slow.normalizer!.tables)
    assert.deepEqual(contents(fast.normalizer!.tables.get(name)!), contents(rows), `${what}: table ${name}`);
  const rejected = (b: Batch) => contents((b as unknown as { rejected: TableRows }).rejected);
  assert.deepEqual(rejected(fast), rejected(slow), `${what}: rejections`);
}

/** JSON text of a value written in one of several styles JSON allows. */
function write(value: unknown, style: 'compact' | 'spaced' | 'escaped' | 'pretty'): string {
  if (style === 'pretty') return JSON.stringify(value, null, 2);
  if (style === 'compact') return JSON.stringify(value);
  // Escaped: every non-ASCII character and every "a" as \uXXXX (a surrogate pair as two escapes).
  const unicodeEscape = (c: string) =>
    [...c].map((unit) => `\\u${unit.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
  const quote = (s: string) =>
    style === 'escaped'
      ? `"${[...s].map((c) => (c.length > 1 || c.charCodeAt(0) > 0x7e || c === 'a' ? unicodeEscape(c) : JSON.stringify(c).slice(1, -1))).join('')}"`
      : JSON.stringify(s);
  const gap = style === 'spaced' ? ' \t\r\n ' : '';
  const walk = (v: unknown): string => {
    if (Array.isArray(v)) return `[${gap}${v.map(walk).join(`${gap},${gap}`)}${gap}]`;
    if (v && typeof v === 'object')
      return `{${gap}${Object.entries(v)
        .filter(([, x]) => x !== undefined)
        .map(([k, x]) => `${JSON.stringify(k)}${gap}:${gap}${walk(x)}`)
        .join(`${gap},${gap}`)}${gap}}`;
    if (typeof v === 'string') return quote(v);
    return JSON.stringify(v) ?? 'null';
  };
  return walk(value);
}

const STYLES = ['compact', 'spaced', 'escaped', 'pretty'] as const;

describe('fast path: the same rows as JSON.parse and the object normalizer', () => {
  it('takes ordinary orders of both shapes, and loads them exactly', () => {
    const make = orderDocuments(7);
    const texts = Array.from({ length: 400 }, (_, i) => JSON.stringify(make(i + 1)));
    const { fast, slow, fastTaken } = loadBothWays(texts);
    assert.equal(fastTaken, texts.length, 'every benchmark order is read by the fast path');
    assertSame(fast, slow, 'benchmark orders');
  });

  it('reads webhook and event envelopes the way detection does: orders fast, anything routed elsewhere by the object path', () => {
    const make = orderDocuments(7);
    const order = make(3) as Record<string, unknown>;
    const shape = '2024-04-01';
    const webhook = (fields: Record<string, unknown>) =>
      JSON.stringify({ data: order, event_id: 'evt-1', webhook: { id: 1 }, ...fields });
    const plain = (fields: Record<string, unknown>) =>
      JSON.stringify({ data: order, webhook: { id: 1 }, ...fields });
    // `{api_version, data}` and nothing more: the fast path takes them, however they are spelled.
    const taken = [
      JSON.stringify({ api_version: shape, data: order }),
      JSON.stringify({ data: order, api_version: shape }),
      JSON.stringify({ api_version: shape, data: order }, null, 2),
    ];
    const both = loadBothWays(taken);
    assert.equal(both.fast.fastPathDocuments, taken.length, 'plain envelopes keep the fast path');
    assertSame(both.fast, both.slow, 'order envelopes');
    const column = (batch: Batch, name: string) => {
      const orders = batch.normalizer!.tables.get('orders')!;
      const at = orders.columns.findIndex((c) => c.name === name);
      return Array.from({ length: orders.length }, (_, row) =>
        orders.valid[at]![row] === 1 ? orders.get(at, row) : null,
      );
    };
    const filled = (batch: Batch, name: string) => column(batch, name).map((value) => value !== null);
    assert.deepEqual(filled(both.fast, '_api_version_label'), [true, true, true], 'the label is kept');
    assert.deepEqual(filled(both.fast, '_event_id'), [false, false, false]);
    assert.deepEqual(filled(both.fast, '_envelope'), [false, false, false], 'nothing more to keep');
    // Order envelopes that carry anything more (an event's id, type or time, `object`, a webhook's or a
    // proxy's fields): the object path keeps it in `_event_*` and `_envelope`.
    const events = [
      webhook({ object: 'order', event_type: 'order.updated', api_version: shape }),
      webhook({ event_type: 'order.created', api_version: shape }),
      webhook({ event_type: 'checkout.completed', api_version: shape }),
      webhook({ event_id: null, api_version: shape }),
      plain({ api_version: shape, timestamp: '2024-05-01T10:00:00.5+02:00' }),
      plain({
        api_version: shape,
        event_version: '2',
        event_type: 'order.paid',
        timestamp: '2024-05-01T10:00:00Z',
      }),
      plain({ api_version: shape, timestamp: 1714557600 }),
      plain({ object: 'order', api_version: shape }),
      plain({ api_version: shape, context: { store: 'main' } }),
      // The object's name written with an escape is the same name.
      plain({ object: 'order', api_version: shape }).replace('"object":"order"', '"object":"ord\\u0065r"'),
      JSON.stringify({ api_version: shape, data: order, zz_proxy: 'added' }),
      JSON.stringify({ api_version: shape, data: order, status: 'paid' }),
    ];
    const routed = loadBothWays(events);
    assert.equal(
      routed.fast.fastPathDocuments,
      0,
      'envelopes with more than a label are left to the object path',
    );
    assertSame(routed.fast, routed.slow, 'order events');
    assert.deepEqual(filled(routed.slow, '_event_id'), [
      true,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    // A timestamp that is not a date-time leaves `_event_at` NULL, and is kept in `_envelope`; the order loads.
    assert.deepEqual(filled(routed.slow, '_event_at'), [
      false,
      false,
      false,
      false,
      true,
      true,
      false,
      false,
      false,
      false,
      false,
      false,
    ]);
    assert.deepEqual(
      column(routed.slow, '_envelope').map((text) => (text === null ? null : JSON.parse(String(text)))),
      [
        { webhook: { id: 1 }, object: 'order' },
        { webhook: { id: 1 } },
        { webhook: { id: 1 } },
        { webhook: { id: 1 } },
        { webhook: { id: 1 } },
        { webhook: { id: 1 }, event_version: '2' },
        { webhook: { id: 1 }, timestamp: 1714557600 },
        { webhook: { id: 1 }, object: 'order' },
        { webhook: { id: 1 }, context: { store: 'main' } },
        { webhook: { id: 1 }, object: 'order' },
        { zz_proxy: 'added' },
        { status: 'paid' },
      ],
      'every envelope field no `_event_*` column keeps as sent',
    );
    // Sent elsewhere, skipped, or read with an unknown label: the object path decides, the same both ways.
    const others = [
      webhook({ object: 'customer', api_version: shape }),
      webhook({ object: 'subscription', api_version: shape }),
      webhook({ event_type: 'dispute.created', api_version: shape }),
      webhook({ event_type: 'cart.updated', api_version: shape }),
      webhook({ object: 7, event_type: 'product.updated', api_version: shape }),
      webhook({ object: 'order' }),
      webhook({ object: 'order', api_version: 'unstable' }),
      JSON.stringify({ event_version: '1', event_type: 'order.created', timestamp: 'x', data: order }),
      JSON.stringify({ ...order, event_type: 'order.created', timestamp: '2024-05-01T10:00:00Z' }),
      JSON.stringify({ ...order, data: { number: 'X-1' }, event_id: 'evt-2' }),
      JSON.stringify({ ...order, results: [order], next: null }),
      JSON.stringify({ api_version: shape, data: order, results: [], next: null }),
      JSON.stringify({ next: null, previous: null, results: [order, make(4)] }),
    ];
    for (const [i, text] of others.entries()) {
      const { fast, slow } = loadBothWays([text]);
      assertSame(fast, slow, `envelope ${i}: ${text.slice(0, 80)}`);
    }
  });

  it('takes the hand-written golden orders of both shapes, bare and in envelopes', async () => {
    const texts: string[] = [];
    for (const name of ['order-2023.json', 'order-2024.json']) {
      const fixture = JSON.parse(await readFile(path.join(FIXTURES, name), 'utf8')) as Record<
        string,
        unknown
      >;
      // A fixture may be an envelope already: its data is the order.
      const doc = (fixture.data ?? fixture) as Record<string, unknown>;
      texts.push(JSON.stringify(doc));
      const shape = name.includes('2023') ? '2023-02-10' : '2024-04-01';
      texts.push(JSON.stringify({ api_version: shape, data: doc }));
    }
    const { fast, slow, fastTaken } = loadBothWays(texts);
    assert.equal(fastTaken, texts.length);
    assertSame(fast, slow, 'golden orders');
  });

  it("takes the sandbox's orders of both shapes (every field mapped), and loads them exactly", () => {
    const parts = buildStore({ seed: 3, scale: 30, clock: () => new Date('2026-01-15T12:00:00Z') });
    const states = Array.from({ length: parts.orders.count }, (_, i) => parts.orders.find(orderNumberOf(i))!);
    assert.ok(states.length > 100, `${states.length} orders`);
    for (const render of [renderOrder2023, renderOrder2024]) {
      const texts = states.map((state) => JSON.stringify(render(state)));
      const { fast, slow } = loadBothWays(texts);
      assert.equal(
        fast.fastPathDocuments,
        texts.length,
        `every ${render.name} order is read by the fast path`,
      );
      assertSame(fast, slow, render.name);
    }
  });

  it('agrees however the document is written', () => {
    const make = orderDocuments(11);
    for (const style of STYLES) {
      const texts = Array.from({ length: 40 }, (_, i) => write(make(i + 1), style));
      const { fast, slow, fastTaken } = loadBothWays(texts);
      assertSame(fast, slow, style);
      // Escaped field names are left to JSON.parse; everything else is read fast.
      if (style !== 'escaped') assert.equal(fastTaken, texts.length, `${style} orders are read fast`);
    }
  });

  it('agrees on text that is not plain ASCII, and on bytes that are not UTF-8', () => {
    const base = orderDocuments(3)(1) as Record<string, unknown>;
    const texts: (string | Buffer)[] = [];
    for (const status of [
      'ouvert é',
      '已付款',
      '😀 emoji',
      'tab\there',
      'quote " and \\ slash /',
      'line\u2028sep',
      '\ufeffbom',
    ])
      texts.push(JSON.stringify({ ...base, number: `N-${texts.length}`, status }));
    // Raw bytes: a stray 0xff, a cut sequence, an overlong encoding, an encoded surrogate, a BOM before the document.
    const plain = Buffer.from(JSON.stringify({ ...base, number: 'N-bytes', status: 'XXXX' }));
    const at = plain.indexOf('XXXX');
    for (const bad of [[0xff], [0xe2, 0x82], [0xc0, 0xaf], [0xed, 0xa0, 0x80], [0xf4, 0x90, 0x80, 0x80]]) {
      const doc = Buffer.concat([plain.subarray(0, at), Buffer.from(bad), plain.subarray(at + 4)]);
      texts.push(doc);
    }
    texts.push(Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), plain]));
    const { fast, slow, fastTaken } = loadBothWays(texts);
    assertSame(fast, slow, 'unicode');
    assert.ok(fastTaken >= 7, `most of these are read fast (${fastTaken})`);
  });

  it('agrees on escapes, including surrogates paired and not', () => {
    const base = JSON.stringify({ ...(orderDocuments(5)(2) as object), status: 'STATUS' });
    const texts = [
      '\\u00e9t\\u00E9',
      '\\ud83d\\ude00',
      '\\ud800 alone',
      '\\udc00',
      '\\n\\r\\t\\b\\f\\/\\"\\\\',
      'a\\u0000b',
    ].map((escaped, i) =>
      base.replace('"STATUS"', `"${escaped}"`).replace(/"number":"[^"]*"/, `"number":"E${i}"`),
    );
    // An escaped field name, an escaped order number, an escaped timestamp and decimal.
    texts.push(base.replace('"status"', '"st\\u0061tus"'));
    texts.push(base.replace(/"number":"([^"]*)"/, '"number":"\\u0031$1"'));
    texts.push(base.replace(/"created_at":"2/, '"created_at":"\\u0032'));
    texts.push(base.replace(/"total_cost":"(\d)/, '"total_cost":"\\u003$1'));
    const { fast, slow } = loadBothWays(texts);
    assertSame(fast, slow, 'escapes');
  });

  it('leaves items without their id to the object path, which keys them by position, and agrees', () => {
    const make = orderDocuments(11);
    type Doc = Record<string, unknown> & { lines: Record<string, unknown>[] };
    const withoutIds = (doc: Doc, field: string, at: 'all' | 'first' | 'null') => {
      const items = doc[field] as Record<string, unknown>[];
      items.forEach((item, i) => {
        if (at === 'null' && i === 0) item.id = null;
        else if (at === 'all' || i === 0) delete item.id;
      });
      return JSON.stringify(doc);
    };
    const refunded = (doc: Doc) => {
      doc.refunds = [{ created_at: '2024-05-02T10:00:00Z', refund_line_items: [{ quantity: 1 }] }];
      return JSON.stringify(doc);
    };
    const fulfilled = (doc: Doc) => {
      const fulfillments = doc.fulfillments as { line_items: Record<string, unknown>[] }[];
      for (const item of fulfillments[0]?.line_items ?? []) delete item.id;
      return JSON.stringify(doc);
    };
    const idLess = [
      withoutIds(make(1) as Doc, 'lines', 'all'),
      withoutIds(make(2) as Doc, 'lines', 'first'),
      withoutIds(make(3) as Doc, 'lines', 'null'),
      withoutIds(make(4) as Doc, 'tax_lines', 'all'),
      withoutIds(make(5) as Doc, 'transactions', 'first'),
      refunded(make(6) as Doc),
      fulfilled(make(7) as Doc),
    ];
    const reader = new Normalizer(true);
    for (const [i, text] of idLess.entries()) {
      assert.match(text, /"lines":\[\{/, `document ${i} has lines`);
      assert.equal(reader.normalizeBytes(Buffer.from(text)), null, `the fast path gives document ${i} up`);
      const { fast, slow, fastTaken } = loadBothWays([text]);
      assert.equal(fastTaken, 1, `document ${i} loads whole`);
      assertSame(fast, slow, `id-less document ${i}`);
    }
    reader.clear();
    for (let i = 0; i < 20; i++)
      assert.notEqual(reader.normalizeBytes(Buffer.from(JSON.stringify(make(100 + i)))), null, 'with ids');
    const { slow } = loadBothWays([idLess[0]!]);
    const lines = slow.normalizer!.tables.get('order_lines')!;
    const id = lines.columns.findIndex((c) => c.name === 'id');
    assert.ok(lines.length > 1);
    assert.deepEqual(
      Array.from({ length: lines.length }, (_, row) => lines.get(id, row)),
      Array.from({ length: lines.length }, (_, row) => -(row + 1)),
      'the lines are keyed -1, -2, …',
    );
    const { fast: mixedFast, slow: mixedSlow } = loadBothWays([
      JSON.stringify(make(200)),
      ...idLess,
      JSON.stringify(make(201)),
    ]);
    assertSame(mixedFast, mixedSlow, 'ordinary and id-less orders');
  });

  it('writes _absent_fields as the object path does when documents in a row lack different fields', () => {
    const make = orderDocuments(17);
    // Every fifth pair of numbers is in the 2023-02-10 shape: 3, 4, 5, 8 … are 2024-04-01 documents.
    const lacking = (n: number, fields: string[], userFields: string[] = []): string => {
      const doc = make(n) as Record<string, unknown> & { user: Record<string, unknown> };
      for (const field of fields) delete doc[field];
      for (const field of userFields) delete doc.user[field];
      return JSON.stringify(doc);
    };
    const texts = [
      lacking(3, []),
      lacking(4, ['status']),
      lacking(5, ['status', 'source']),
      lacking(8, ['source'], ['email']),
      lacking(9, ['source'], ['email', 'first_name']),
      lacking(10, []),
      lacking(13, ['status', 'source'], ['first_name']),
      lacking(14, ['status', 'source']),
      lacking(15, [], ['email']),
    ];
    const { fast, slow } = loadBothWays(texts);
    assert.equal(fast.fastPathDocuments, texts.length, 'read by the fast path');
    assertSame(fast, slow, 'documents lacking different fields');
    const orders = slow.normalizer!.tables.get('orders')!;
    const absent = orders.columns.findIndex((c) => c.name === '_absent_fields');
    const absentTexts = Array.from({ length: orders.length }, (_, row) => String(orders.get(absent, row)));
    assert.ok(absentTexts[2]!.includes('status,') && absentTexts[2]!.includes('source'), absentTexts[2]);
    assert.notEqual(absentTexts[1], absentTexts[3]);
  });

  it('agrees on numbers, repeated fields, JSON columns and what is not an order', () => {
    const doc = orderDocuments(9)(3) as Record<string, unknown>;
    const text = JSON.stringify(doc);
    const line = JSON.stringify((doc.lines as object[])[0]);
    const variants = [
      // Numbers JSON.parse reads the same as plain integers, and ones it does not.
      text.replace(/"quantity":(\d+)/, '"quantity":$1.0'),
      text.replace(/"quantity":(\d+)/, '"quantity":$1e0'),
      text.replace(/"quantity":(\d+)/, '"quantity":-0'),
      text.replace(/"quantity":(\d+)/, '"quantity":12345678901234567890'),
      text.replace(/"quantity":(\d+)/, '"quantity":1.5'),
      text.replace(/"rate":0.19/, '"rate":1.9E-1'),
      text.replace(/"rate":0.19/, '"rate":0.1000000000000000055511151231257827'),
      text.replace(/"rate":0.19/, '"rate":-0.0'),
      text.replace(/"rate":0.19/, '"rate":1e400'),
      text.replace(/"id":(\d+)/, '"id":0$1'),
      // Repeated fields: JSON.parse keeps the last one.
      text.replace('"status":"open"', '"status":"open","status":"closed"'),
      text.replace('"currency":', '"unknown":1,"unknown":2,"currency":'),
      // JSON columns written as JSON.stringify would not write them.
      text.replace('"metadata":{}', '"metadata":{ }'),
      text.replace('"metadata":{}', '"metadata":{"b":1,"a":[true,null,"x"]}'),
      text.replace('"metadata":{}', '"metadata":{"2":1,"1":2}'),
      text.replace('"metadata":{}', '"metadata":{"a":1,"a":2}'),
      text.replace('"metadata":{}', '"metadata":{"a":1.50,"b":-0,"c":1e2}'),
      text.replace('"metadata":{}', '"metadata":{"a":"\\u00e9","b":"é"}'),
      text.replace('"metadata":{}', '"metadata":"text"'),
      text.replace('"metadata":{}', '"metadata":[1,{"x":[]}]'),
      // Values of the wrong type, and money or times that do not fit: refused, by the object path.
      text.replace(/"total_cost":"[^"]*"/, '"total_cost":"1.2345"'),
      text.replace(/"total_cost":"[^"]*"/, '"total_cost":12.5'),
      text.replace(/"created_at":"[^"]*"/, '"created_at":"yesterday"'),
      text.replace(/"created_at":"[^"]*"/, '"created_at":"2024-05-01 10:00:00+02"'),
      text.replace('"billing_address":{', '"billing_address":"x","ignored":{'),
      text.replace('"lines":[', '"lines":[1,'),
      text.replace('"lines":[', '"lines":{"a":').replace(/\],"tax_lines"/, '},"tax_lines"'),
      text.replace('"user":{', '"user":{"id":null,"x":{'),
      text.replace(/"number":"[^"]*"/, '"number":7'),
      text.replace(/"number":"[^"]*"/, '"number":null'),
      // Not an order, or an envelope the object path refuses or unwraps differently.
      `[${text}]`,
      `${text} `,
      `${text}x`,
      text.slice(0, -1),
      JSON.stringify({ api_version: '2023-02-10', data: doc }),
      JSON.stringify({ api_version: '2025-01-01', data: doc }),
      JSON.stringify({ api_version: '2024-04-01', data: [doc] }),
      JSON.stringify({ api_version: 7, data: doc }),
      JSON.stringify({ moved_fulfillment_order: {}, original_fulfillment_order: {}, ...doc }),
      line,
      '{}',
      JSON.stringify({ ...doc, lines: [] }),
      JSON.stringify({ ...doc, number: '' }),
      // Deeply nested junk in a field nobody reads, and in one that is read.
      text.replace('"currency":', `"junk":${'['.repeat(70)}${']'.repeat(70)},"currency":`),
      text.replace('"metadata":{}', `"metadata":${'{"a":'.repeat(40)}1${'}'.repeat(40)}`),
    ];
    for (const [i, variant] of variants.entries()) {
      const { fast, slow } = loadBothWays([variant]);
      assertSame(fast, slow, `variant ${i}: ${variant.slice(0, 60)}`);
    }
    const { fast, slow } = loadBothWays(variants);
    assertSame(fast, slow, 'variants');
  });
});

test('fast path: generated documents of every kind, with hostile changes, load the same both ways', () => {
  let taken = 0;
  fc.assert(
    fc.property(
      fc.array(fc.tuple(lineArb, fc.constantFrom(...STYLES)), { minLength: 1, maxLength: 4 }),
      (lines: [Line, (typeof STYLES)[number]][]) => {
        const texts = lines.map(([line, style]) =>
          line.kind === 'junk' ? line.text : write(JSON.parse(lineText(line)), style),
        );
        const { fast, slow, fastTaken } = loadBothWays(texts);
        taken += fastTaken;
        assertSame(fast, slow, 'generated');
      },
    ),
    fuzzParameters(fuzzRuns(300)),
  );
  // Generated orders are mostly refused or odd, but some must have gone the fast way.
  assert.ok(taken > 0, 'the fast path took some generated documents');
});

describe('fast path: a document carrying a field the model does not map is left to the object path', () => {
  // biome-ignore lint/suspicious/noExplicitAny: generated documents, edited field by field below at any depth
  type Doc = Record<string, any>;
  const make = orderDocuments(13);
  // orderDocuments makes numbers 1 and 2 of every five in the 2023-02-10 shape, the others in 2024-04-01.
  const doc2024 = (): Doc => make(3);
  const doc2023 = (): Doc => make(6);

  /**
   * Each document is one the fast path gives up (nothing written), and both ways then load it whole, with no
   * rejection, into the same rows: the object path keeps what the model does not map in `_extra`.
   */
  function leftToObjectPath(cases: Record<string, Doc | string>): void {
    const reader = new Normalizer(true);
    for (const [what, doc] of Object.entries(cases)) {
      const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
      assert.equal(reader.normalizeBytes(Buffer.from(text)), null, `the fast path gives up: ${what}`);
      for (const rows of reader.tables.values())
        assert.equal(rows.length, 0, `${what}: the fast path wrote nothing to ${rows.name}`);
      const { fast, slow, fastTaken } = loadBothWays([text]);
      assert.equal(fastTaken, 1, `${what}: loads whole`);
      assert.equal(fast.fastPathDocuments, 0, `${what}: read by the object path`);
      assertSame(fast, slow, what);
      assert.ok(extraTexts(slow).length > 0, `${what}: the object path kept the field in _extra`);
    }
  }

  /** Every `_extra` the batch's rows hold, as `table: text`. */
  function extraTexts(batch: Batch): string[] {
    const out: string[] = [];
    for (const [name, rows] of batch.normalizer!.tables) {
      const column = rows.columns.findIndex((c) => c.name === '_extra');
      for (let row = 0; row < rows.length; row++)
        if (rows.valid[column]![row]) out.push(`${name}: ${rows.get(column, row)}`);
    }
    return out;
  }

  /** Each document is read by the fast path, into the same rows as the object path's. */
  function takenFast(cases: Record<string, Doc | string>): void {
    for (const [what, doc] of Object.entries(cases)) {
      const text = typeof doc === 'string' ? doc : JSON.stringify(doc);
      const { fast, slow, fastTaken } = loadBothWays([text]);
      assert.equal(fast.fastPathDocuments, 1, `${what}: read by the fast path`);
      assert.equal(fastTaken, 1, `${what}: loads whole`);
      assertSame(fast, slow, what);
      assert.deepEqual(extraTexts(slow), [], `${what}: nothing in _extra`);
    }
  }

  it('takes the same documents without the unknown fields (so the give-ups below are theirs)', () => {
    takenFast({ '2024-04-01': doc2024(), '2023-02-10': doc2023() });
  });

  it('gives up an unknown field at the root, on a line, on a tax line, in an address, in the user …', () => {
    const with_ = (change: (d: Doc) => void, d = doc2024()): Doc => {
      change(d);
      return d;
    };
    leftToObjectPath({
      'at the root': with_((d) => {
        d.zz_root = 1;
      }),
      'at the root, an object': with_((d) => {
        d.zz_root = { a: [1, { b: 2 }] };
      }),
      'at the root, null': with_((d) => {
        d.zz_root = null;
      }),
      'at the root, first of all': (() => {
        const d = doc2024();
        return { zz_first: 'x', ...d };
      })(),
      'on the first line': with_((d) => {
        d.lines[0].zz_line = 'x';
      }),
      'on the last line': with_((d) => {
        d.lines.at(-1).zz_line = false;
      }),
      'on a line tax line': with_((d) => {
        d.lines[0].tax_lines[0].zz_tax = 1.5;
      }),
      'inside a line tax line report_values': with_((d) => {
        d.lines[0].tax_lines[0].report_values.zz = '1.00';
      }),
      'on an order tax line': with_((d) => {
        d.tax_lines[0].zz = [];
      }),
      'in billing_address': with_((d) => {
        d.billing_address.zz_billing = 'x';
      }),
      'in shipping_address': with_((d) => {
        d.shipping_address.zz = {};
      }),
      'in attribution.agent': with_((d) => {
        d.attribution.agent = { id: 77, email: 'agent@example.com', zz_agent: 1 };
      }),
      'in report_values': with_((d) => {
        d.report_values.zz = 2;
      }),
      'in the user': with_((d) => {
        d.user.zz_user = 'x';
      }),
      'on a transaction': with_((d) => {
        d.transactions[0].zz = 1;
      }),
      'on a fulfillment line item': with_((d) => {
        d.fulfillments[0].line_items[0].zz = 1;
      }),
      'in a fulfillment origin_address': with_((d) => {
        d.fulfillments[0].origin_address.zz = 1;
      }),
      'on a refund line': with_((d) => {
        d.refunds = [
          {
            id: 5,
            created_at: '2024-05-02T10:00:00Z',
            refund_line_items: [{ id: 6, quantity: 1, zz_refund: 1 }],
          },
        ];
      }),
      'in a 2023-02-10 line product': with_((d) => {
        d.lines[0].product.zz = 1;
      }, doc2023()),
      'in a 2023-02-10 line stockrecord': with_((d) => {
        d.lines[0].stockrecord.zz = 1;
      }, doc2023()),
      'in the data of an envelope': JSON.stringify({
        api_version: '2024-04-01',
        data: with_((d) => {
          d.lines[0].zz = 1;
        }),
      }),
    });
  });

  it("gives up a field the fast path reads elsewhere but the model does not map here (another shape's, detection's)", () => {
    const with_ = (change: (d: Doc) => void, d = doc2024()): Doc => {
      change(d);
      return d;
    };
    leftToObjectPath({
      'a bare order with an api_version': with_((d) => {
        d.api_version = '2024-04-01';
      }),
      'a bare order with an event id': with_((d) => {
        d.event_id = 'evt-1';
      }),
      'a bare order with data': with_((d) => {
        d.data = { x: 1 };
      }),
      'a bare order with object': with_((d) => {
        d.object = 'order';
      }),
      '2024-04-01 line with a 2023-02-10 price': with_((d) => {
        d.lines[0].price_incl_tax_excl_discounts = d.lines[0].price_incl_tax;
      }),
      '2024-04-01 line with a 2023-02-10 product': with_((d) => {
        d.lines.at(-1).product = { id: 1, title: 'Tea' };
      }),
      '2023-02-10 line with report_values': with_((d) => {
        d.lines[0].report_values = { currency: 'USD' };
      }, doc2023()),
      '2023-02-10 line with a variant_title': with_((d) => {
        d.lines[0].variant_title = 'Default';
      }, doc2023()),
      '2023-02-10 order with total_outstanding': with_((d) => {
        d.total_outstanding = '0.00';
      }, doc2023()),
      '2023-02-10 report_values with total_discount': with_((d) => {
        d.report_values.total_discount = '0.00';
      }, doc2023()),
      '2024-04-01 fulfillment with a 2023-02-10 reference': with_((d) => {
        d.fulfillments[0].reference = 'R-1';
      }),
    });
  });

  it('gives up a user without an id that carries an unknown field (its parent row keeps it)', () => {
    const withoutId = (id: 'missing' | 'null', unknown: boolean): Doc => {
      const d = doc2024();
      if (id === 'missing') delete d.user.id;
      else d.user.id = null;
      if (unknown) d.user.zz_user = 'x';
      return d;
    };
    leftToObjectPath({
      'user without id, unknown field': withoutId('missing', true),
      'user with a null id, unknown field': withoutId('null', true),
    });
    // Without the unknown field the user is skipped, and the fast path does it as the object path does.
    takenFast({
      'user without id': withoutId('missing', false),
      'user with a null id': withoutId('null', false),
    });
  });

  it('leaves a JSON column whose numbers JSON.parse would change to the object path, which names them', () => {
    const text = JSON.stringify(doc2024());
    assert.ok(text.includes('"metadata":{}'));
    const texts = [
      text.replace('"metadata":{}', '"metadata":{"ref":123456789012345678901}'),
      text.replace('"metadata":{}', '"metadata":[1e400]'),
      // Integers within ±2^53 and other finite numbers: JSON.parse keeps them, so does the fast path (1.50 is not
      // canonical, so it goes through the column's converter rather than being copied as sent).
      text.replace('"metadata":{}', '"metadata":{"ref":9007199254740991,"x":1.50,"y":-1e-300}'),
    ];
    const { fast, slow } = loadBothWays(texts);
    assert.equal(fast.fastPathDocuments, 1);
    // The two whose numbers JSON.parse changed land with metadata NULL and one field rejection each.
    assert.equal(slow.counts.fieldRejections, 2);
    assert.equal(fast.counts.fieldRejections, 2);
    assertSame(fast, slow, 'inexact numbers in a JSON column');
  });

  it('takes values kept whole whatever names they hold', () => {
    const d = doc2024();
    d.metadata = { 'zz odd name': { deep: [1, { x: null }] }, ünï: 2, '7': 'digit-first' };
    d.lines[0].metadata = { zz_line_meta: true };
    d.transactions[0].payment_details.zz_inner = { a: 1 };
    d.attribution.metadata = { zz: 'kept' };
    d.tags = ['zz'];
    // (An envelope with fields of its own is the object path's: they go to `_envelope`, tested above.)
    takenFast({ 'odd names inside JSON columns': d });
  });

  it('reads ordinary documents fast again after ones it gave up, however many unknown names it met', () => {
    const reader = new Normalizer(true);
    const ordinary = () => Buffer.from(JSON.stringify(make(100 + Math.floor(Math.random() * 50))));
    assert.notEqual(reader.normalizeBytes(ordinary()), null);
    // More distinct unknown names than a Position remembers (scan.ts MAX_IGNORED_NAMES), then another one.
    const many: Doc = doc2024();
    for (let i = 0; i < 300; i++) many[`zz_${i}`] = i;
    assert.equal(reader.normalizeBytes(Buffer.from(JSON.stringify(many))), null);
    assert.equal(reader.normalizeBytes(Buffer.from(JSON.stringify({ ...doc2024(), zz_new: 1 }))), null);
    const line = doc2024();
    line.lines[0].zz_line = 1;
    assert.equal(reader.normalizeBytes(Buffer.from(JSON.stringify(line))), null);
    for (let i = 0; i < 20; i++) assert.notEqual(reader.normalizeBytes(ordinary()), null, `ordinary ${i}`);
    const { fast, slow } = loadBothWays([
      JSON.stringify(make(1)),
      JSON.stringify(many),
      JSON.stringify(line),
      JSON.stringify(make(2)),
      JSON.stringify(make(3)),
    ]);
    assert.equal(fast.fastPathDocuments, 3);
    assertSame(fast, slow, 'ordinary documents around ones given up');
  });

  it("leaves the benchmark's unknown-fields documents to the object path, which loads the standard ones' rows", () => {
    const standard = orderDocuments(21);
    const variant = orderDocuments(21, 'unknown-fields');
    const reader = new Normalizer(true);
    const standardBatch = new Batch(new Normalizer(), META, 1);
    const variantBatch = new Batch(new Normalizer(), META, 1);
    for (let n = 1; n <= 60; n++) {
      // Each call draws the generator's next values: one document of each per number.
      const text = JSON.stringify(variant(n));
      const plain = JSON.stringify(standard(n));
      for (const field of Object.values(UNKNOWN_FIELDS)) assert.ok(text.includes(`"${field}":`), field);
      assert.equal(reader.normalizeBytes(Buffer.from(text)), null, `variant document ${n}`);
      assert.notEqual(reader.normalizeBytes(Buffer.from(plain)), null, `document ${n}`);
      for (const [batch, doc] of [
        [variantBatch, text],
        [standardBatch, plain],
      ] as const) {
        const landed = batch.land(DOCUMENTS_STREAM, null, KIND.document, 'f:1', Buffer.from(doc));
        assert.equal(loadDocument(batch, landed, doc), 0);
      }
    }
    // The generators draw the same values either way: only `_extra` may differ.
    assert.deepEqual(variantBatch.counts, standardBatch.counts);
    for (const [name, rows] of standardBatch.normalizer!.tables)
      assert.deepEqual(
        contents(variantBatch.normalizer!.tables.get(name)!, ['_extra']),
        contents(rows, ['_extra']),
        `table ${name}`,
      );
    // One row per document in each table holds its unknown field in `_extra`, and nothing else does.
    assert.deepEqual(extraTexts(standardBatch), []);
    const kept = extraTexts(variantBatch);
    for (const [table, field] of Object.entries(UNKNOWN_FIELDS))
      assert.equal(
        kept.filter((text) => text.startsWith(`${table}: {"${field}":`)).length,
        60,
        `${table}._extra holds ${field}`,
      );
    assert.equal(kept.length, 180);
  });

  it("reads a child's repeat of its parent's key (a refund's or a line's order_number) fast: the model maps it", () => {
    const d: Doc = doc2024();
    d.refunds = [
      {
        id: 5,
        order_number: d.number,
        created_at: '2024-05-02T10:00:00Z',
        refund_line_items: [{ id: 6, quantity: 1 }],
      },
    ];
    d.lines[0].order_number = d.number;
    takenFast({ 'order_number on a refund and a line': d });
  });

  it('scanner: counts the names a Position does not want per object, or gives up at the first one where strict', () => {
    const order = new Position('order');
    order.field('number');
    const lines = order.elementsAt('lines');
    lines.field('id');
    const scan = new DocumentScan();
    const text = '{"number":"1","zz":1,"lines":[{"id":1},{"id":2,"zz_a":[],"zz_b":{"c":1}},{}],"zz_c":null}';
    const read = (): number => scan.read(Buffer.from(text), order);
    const base = read();
    assert.ok(base >= 0);
    assert.equal(scan.unknown[base], 2, 'two unwanted names at the root');
    const items: number[] = [];
    for (let item = scan.aux[base + order.has('lines')]!; item >= 0; item = scan.next[item]!)
      items.push(item);
    assert.deepEqual(
      items.map((item) => scan.unknown[item]),
      [0, 2, 0],
      'per line, the empty one included',
    );
    lines.strict = true;
    assert.equal(read(), -1, 'a strict Position gives the document up');
    lines.strict = false;
    order.strict = true;
    assert.equal(read(), -1);
    order.strict = false;
    assert.equal(scan.unknown[read()], 2, 'and counts again once not strict');
    // Slots are reused from document to document: an empty object where the last one had unknown names.
    const firstLine = (doc: string): number => {
      const at = scan.read(Buffer.from(doc), order);
      return scan.aux[at + order.has('lines')]!;
    };
    const before = firstLine('{"number":"1","lines":[{"zz":1}]}');
    assert.equal(scan.unknown[before], 1);
    assert.equal(firstLine('{"number":"1","lines":[{}]}'), before);
    assert.equal(scan.unknown[before], 0, 'an empty object has none');
  });
});
