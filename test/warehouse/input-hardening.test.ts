import assert from 'node:assert/strict';
import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { invalidUtf8At } from '../../src/ingest/prepare.js';
import {
  EXCERPT_BYTES,
  LineSplitter,
  type Piece,
  type Splitter,
  splitterCopies,
  ValueSplitter,
} from '../../src/ingest/splitters.js';
import { payloadExcerpt, REJECTED_PAYLOAD_BYTES } from '../../src/load/batch-builder.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { CODEC, decodeBlock, storedBlocks } from '../../src/load/landing.js';
import { createLogger, silentLogger } from '../../src/log.js';
import { count, ndjson, orderDoc, tableRows, tempDir } from './helpers.js';

/**
 * Input hardening (docs/reliability.md, "Hardening"): a document over `maxDocumentBytes` is rejected with its
 * size and the rest of the file loads; a rejected payload is kept in `_rejected_records` as an excerpt (the
 * raw landing keeps it whole); a JSON array is read element by element, so one that is cut short or misses a
 * bracket loads the documents before the fault and names its byte offset; long lines are put together once,
 * not at every chunk; bytes that are not UTF-8 reject their document with their offset; unchanged files are
 * skipped by path, size and time with the ledger read in a few queries.
 */

const rejectedRows = (w: Warehouse) =>
  tableRows(w.connection, '_rejected_records', { exclude: ['_synced_at', '_run_id', 'raw_seq'] });

/** Pushes `bytes` through a splitter in chunks of `chunk` bytes. */
function split(splitter: Splitter, bytes: Buffer, chunk: number): Piece[] {
  const pieces: Piece[] = [];
  for (let at = 0; at < bytes.length; at += chunk) {
    // Each chunk in a buffer of its own, overwritten once pushed, as the reader reuses its buffers.
    const copy = Buffer.from(bytes.subarray(at, at + chunk));
    for (const piece of splitter.push(copy)) pieces.push(cloned(piece));
    copy.fill(0x7e);
  }
  for (const piece of splitter.finish()) pieces.push(cloned(piece));
  return pieces;
}

/** A piece whose bytes outlive the chunk they came from. */
const cloned = (p: Piece) => ({ ...p, bytes: Buffer.from(p.bytes), text: p.bytes.toString('utf8') }) as Piece;

describe('ingest input hardening', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let n = 0;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
  });
  after(() => cleanup());

  /** A new warehouse, given to `use` and closed after. */
  async function withWarehouse<T>(use: (w: Warehouse, file: string) => Promise<T>): Promise<T> {
    const file = path.join(dir, `w${n++}.duckdb`);
    const warehouse = await openWarehouse(file);
    try {
      return await use(warehouse, file);
    } finally {
      await warehouse.close();
    }
  }

  describe('splitting long documents is linear', () => {
    it('a 24 MB line in 4 KB chunks is copied about twice, not once per chunk', () => {
      const line = Buffer.from(JSON.stringify({ ...orderDoc(1), note: 'x'.repeat(24 << 20) }));
      const bytes = Buffer.concat([Buffer.from('{"a":1}\n'), line, Buffer.from('\n{"b":2}\n')]);
      for (const make of [() => new LineSplitter(), () => new ValueSplitter(false)]) {
        const before = splitterCopies.bytes;
        const pieces = split(make(), bytes, 4096);
        const copied = splitterCopies.bytes - before;
        assert.deepEqual(
          pieces.map((p) => p.bytes.length),
          [7, line.length, 7],
        );
        assert.ok(pieces[1]!.bytes.equals(line));
        // Put together at every chunk it would be 6,000 chunks × 12 MB on average: about 75 GB.
        assert.ok(copied <= 2 * line.length + 8192, `copied ${copied} bytes for a ${line.length}-byte line`);
      }
    });

    it('a JSON array element across many chunks, and documents around it, come out whole and in place', () => {
      const docs = [orderDoc(1), { ...orderDoc(2), note: 'é'.repeat(300_000) }, orderDoc(3)];
      const text = `[${docs.map((d) => JSON.stringify(d, null, 1)).join(',\n')}]`;
      for (const chunk of [1, 7, 4096, 65_536]) {
        const pieces = split(new ValueSplitter(true), Buffer.from(text), chunk);
        assert.deepEqual(
          pieces.map((p) => JSON.parse(p.text)),
          docs,
        );
        assert.deepEqual(
          pieces.map((p) => [p.start, p.end]),
          docs.map((doc) => {
            const start = Buffer.byteLength(text.slice(0, text.indexOf(JSON.stringify(doc, null, 1))));
            return [start, start + Buffer.byteLength(JSON.stringify(doc, null, 1))];
          }),
        );
      }
    });
  });

  describe('maxDocumentBytes', () => {
    it('a line over the limit is rejected with its size and the limit, holding no more than its excerpt', () => {
      const big = Buffer.from(JSON.stringify({ ...orderDoc(2), note: 'y'.repeat(5 << 20) }));
      const bytes = Buffer.concat([
        Buffer.from(`${JSON.stringify(orderDoc(1))}\n`),
        big,
        Buffer.from('\n{}\n'),
      ]);
      for (const make of [
        () => new LineSplitter({ maxDocumentBytes: 1 << 20 }),
        () => new ValueSplitter(false, { maxDocumentBytes: 1 << 20 }),
      ]) {
        const before = splitterCopies.bytes;
        const pieces = split(make(), bytes, 65_536);
        const copied = splitterCopies.bytes - before;
        assert.equal(pieces.length, 3);
        const start = Buffer.byteLength(`${JSON.stringify(orderDoc(1))}\n`);
        assert.equal(
          pieces[1]!.error,
          `document too large: ${big.length} bytes from byte ${start}, over the limit of ${1 << 20} bytes (maxDocumentBytes); only its first ${EXCERPT_BYTES} bytes are kept`,
        );
        assert.ok(pieces[1]!.bytes.equals(big.subarray(0, EXCERPT_BYTES)));
        // Just past the document (the value splitter) or its newline (the line splitter).
        assert.ok([start + big.length, start + big.length + 1].includes(pieces[1]!.end));
        assert.equal(pieces[2]!.text, '{}');
        // What was held of it: up to the limit, then its excerpt (not 5 MB).
        assert.ok(copied < (1 << 20) + 2 * EXCERPT_BYTES + 65_536, `copied ${copied}`);
      }
    });

    it('ingest rejects the large document into _rejected_records and loads the rest, on every path', async () => {
      const big = { ...orderDoc(2), note: 'z'.repeat(3 << 20) };
      const docs = [orderDoc(1), big, orderDoc(3)];
      const files = {
        'big.ndjson': ndjson(docs),
        'big-array.json': `[\n${docs.map((d) => JSON.stringify(d)).join(',\n')}\n]\n`,
        'big-pretty.json': docs.map((d) => JSON.stringify(d, null, 2)).join('\n'),
      };
      for (const [name, content] of Object.entries(files)) {
        const file = path.join(dir, name);
        await writeFile(file, content);
        for (const workers of [0, 1]) {
          await withWarehouse(async (w) => {
            const summary = await ingestPaths(w, [file], {
              store: 'shop',
              runId: 'r',
              logger: silentLogger,
              workers,
              maxDocumentBytes: 1 << 20,
            });
            assert.equal(summary.documents, 3);
            assert.equal(summary.rejections, 1, name);
            assert.deepEqual(
              (await tableRows(w.connection, 'orders')).map((r) => r.number),
              ['T-1', 'T-3'],
            );
            const [rejected] = await rejectedRows(w);
            assert.match(
              String(rejected!.reason),
              /^document too large: \d+ bytes from byte \d+, over the limit of 1048576 bytes \(maxDocumentBytes\)/,
            );
            assert.equal(rejected!.stage, 'parse');
            assert.equal(String(rejected!.payload).length, EXCERPT_BYTES);
            const begins = content.lastIndexOf('{', content.indexOf('"T-2"'));
            assert.equal(rejected!.source, `${file}:${content.slice(0, begins).split('\n').length}`);
            // Landed as its excerpt with its reason: a rebuild rejects it the same way.
            await rebuildWarehouse(w, { logger: silentLogger });
            assert.deepEqual(await rejectedRows(w), [rejected]);
            assert.equal(await count(w.connection, 'orders'), 2);
          });
        }
      }
    });
  });

  describe('rejected payloads are kept as an excerpt', () => {
    it('payloadExcerpt cuts at a character boundary and leaves small payloads alone', () => {
      assert.equal(payloadExcerpt('{"a":1}'), null);
      assert.equal(payloadExcerpt('é'.repeat(REJECTED_PAYLOAD_BYTES / 2)), null);
      const cut = payloadExcerpt(`a${'é'.repeat(REJECTED_PAYLOAD_BYTES)}`)!;
      assert.equal(Buffer.byteLength(cut.text), REJECTED_PAYLOAD_BYTES - 1);
      assert.ok(!cut.text.includes('\ufffd'));
      assert.equal(
        cut.note,
        `(payload: its first ${REJECTED_PAYLOAD_BYTES - 1} of ${1 + 2 * REJECTED_PAYLOAD_BYTES} bytes)`,
      );
    });

    it('a large malformed document: 64 KiB of it in _rejected_records, all of it in the raw landing', async () => {
      const broken = `${JSON.stringify({ ...orderDoc(5), note: 'q'.repeat(2 << 20) }).slice(0, -1)},}`;
      const file = path.join(dir, 'broken.ndjson');
      await writeFile(file, `${JSON.stringify(orderDoc(4))}\n${broken}\n`);
      await withWarehouse(async (w) => {
        const summary = await ingestPaths(w, [file], { store: 'shop', runId: 'r', logger: silentLogger });
        assert.equal(summary.rejections, 1);
        const [rejected] = await rejectedRows(w);
        assert.equal(rejected!.payload, broken.slice(0, REJECTED_PAYLOAD_BYTES));
        assert.match(
          String(rejected!.reason),
          new RegExp(
            `^malformed JSON: .* \\(payload: its first ${REJECTED_PAYLOAD_BYTES} of ${broken.length} bytes\\)$`,
          ),
        );
        const seqs = (await w.connection.runAndReadAll('SELECT first_seq FROM _raw_landing'))
          .getRows()
          .map(([s]) => Number(s));
        const blocks = await storedBlocks(w.connection, seqs);
        const landed = (
          await Promise.all(seqs.map(async (s) => (await decodeBlock(CODEC, blocks.get(s)!)).records))
        ).flat();
        assert.equal(landed.at(-1)!.bytes.toString('utf8'), broken);
        // A rebuild from the landing rejects it the same way.
        const before = await rejectedRows(w);
        await rebuildWarehouse(w, { logger: silentLogger });
        assert.deepEqual(await rejectedRows(w), before);
      });
    });
  });

  describe('JSON arrays are read document by document', () => {
    const docs = Array.from({ length: 2000 }, (_, i) => orderDoc(i + 1));
    const text = `[\n${docs.map((d) => JSON.stringify(d)).join(',\n')}\n]\n`;

    it('an array cut short near its end loads the documents before the cut and names its byte offset', async () => {
      const cut = Math.floor(text.length * 0.97);
      const file = path.join(dir, 'cut-array.json');
      await writeFile(file, text.slice(0, cut));
      // The element the cut falls in starts after the last complete one.
      const whole = docs.findIndex((d) => text.indexOf(JSON.stringify(d)) + JSON.stringify(d).length > cut);
      const brokenAt = text.indexOf(JSON.stringify(docs[whole]));
      await withWarehouse(async (w) => {
        const summary = await ingestPaths(w, [file], { store: 'shop', runId: 'r', logger: silentLogger });
        assert.equal(await count(w.connection, 'orders'), whole);
        assert.equal(summary.rejections, 1);
        const reasons = (await rejectedRows(w)).map((r) => String(r.reason));
        assert.deepEqual(reasons, [
          `the file ends inside a JSON value (truncated?): the value that starts at byte ${brokenAt} (line ${whole + 2}) is not closed in the ${cut - brokenAt} bytes to the end`,
        ]);
      });
    });

    it('an array missing one } loads the documents before it, and the rest is one rejection naming where it starts', async () => {
      const fault = 1500;
      const faulty = JSON.stringify(docs[fault]).slice(0, -1);
      const broken = text.replace(JSON.stringify(docs[fault]), faulty);
      const at = broken.indexOf(faulty);
      // Gzipped too: the offset counts the decompressed bytes.
      for (const [name, content] of [
        ['missing-brace.json', broken],
        ['missing-brace.json.gz', gzipSync(broken)],
      ] as const) {
        const file = path.join(dir, name);
        await writeFile(file, content);
        await withWarehouse(async (w) => {
          const summary = await ingestPaths(w, [file], {
            store: 'shop',
            runId: 'r',
            logger: silentLogger,
            maxDocumentBytes: 64 << 10,
          });
          assert.equal(summary.rejections, 2);
          assert.equal(await count(w.connection, 'orders'), fault);
          const reasons = (await rejectedRows(w)).map((r) => String(r.reason)).sort();
          assert.match(
            reasons[0]!,
            new RegExp(`^document too large: \\d+ bytes from byte ${at}, over the limit of 65536 bytes`),
          );
          assert.match(reasons[1]!, /^the JSON array is not closed with \]: the input ends at byte \d+$/);
        });
      }
    });
  });

  describe('invalid UTF-8', () => {
    it('invalidUtf8At finds the start of the first ill-formed sequence', () => {
      const cases: [number[], number][] = [
        [[0x61, 0x62], -1],
        [[0x61, 0xc3, 0xa9, 0xe2, 0x82, 0xac, 0xf0, 0x9f, 0x98, 0x80], -1],
        [[0x61, 0xff], 1],
        [[0x61, 0xe2, 0x82], 1],
        [[0x61, 0xe2, 0x82, 0x61], 1],
        [[0xc0, 0xaf], 0],
        [[0x61, 0x62, 0xed, 0xa0, 0x80], 2],
        [[0xf4, 0x90, 0x80, 0x80], 0],
        [[0x80], 0],
        [[0xe0, 0x9f, 0x80], 0],
      ];
      for (const [bytes, at] of cases) assert.equal(invalidUtf8At(Uint8Array.from(bytes)), at, `${bytes}`);
    });

    it('rejects the document naming the byte offset, loads the rest, the same on both ways of reading and after a rebuild', async () => {
      const plain = Buffer.from(JSON.stringify({ ...orderDoc(8), status: 'XXXX' }));
      const at = plain.indexOf('XXXX');
      const bad = Buffer.concat([
        plain.subarray(0, at),
        Buffer.from([0x6f, 0xff, 0x6b]),
        plain.subarray(at + 4),
      ]);
      // A cart is never read by the fast path: both ways of reading meet the same bytes.
      const cart = Buffer.from(JSON.stringify({ id: 9, checkout_url: 'https://x/c/9', note: 'XXXX' }));
      const cat = cart.indexOf('XXXX');
      const badCart = Buffer.concat([
        cart.subarray(0, cat),
        Buffer.from([0xe2, 0x82]),
        cart.subarray(cat + 4),
      ]);
      const first = Buffer.from(`\ufeff${JSON.stringify(orderDoc(7))}\n`);
      const content = Buffer.concat([
        first,
        bad,
        Buffer.from('\n'),
        badCart,
        Buffer.from(`\n${JSON.stringify(orderDoc(9))}\n`),
      ]);
      const file = path.join(dir, 'bad-utf8.ndjson');
      await writeFile(file, content);
      const badAt = first.length + at + 1;
      const cartAt = first.length + bad.length + 1 + cat;
      let expected: unknown;
      for (const workers of [0, 1]) {
        await withWarehouse(async (w) => {
          const summary = await ingestPaths(w, [file], {
            store: 'shop',
            runId: 'r',
            logger: silentLogger,
            workers,
          });
          assert.equal(summary.rejections, 2);
          assert.deepEqual(
            (await tableRows(w.connection, 'orders')).map((r) => r.number),
            ['T-7', 'T-9'],
          );
          const rejected = await rejectedRows(w);
          assert.deepEqual(
            rejected.map((r) => [r.reason, r.source]).sort(),
            [
              [`invalid UTF-8 at byte ${badAt} of the input (byte ${at + 1} of the document)`, `${file}:2`],
              [`invalid UTF-8 at byte ${cartAt} of the input (byte ${cat} of the document)`, `${file}:3`],
            ].sort(),
          );
          expected ??= rejected;
          assert.deepEqual(rejected, expected);
          assert.equal(content.subarray(badAt, badAt + 1)[0], 0xff);
          await rebuildWarehouse(w, { logger: silentLogger });
          assert.deepEqual(await rejectedRows(w), rejected);
          assert.equal(await count(w.connection, 'orders'), 2);
        });
      }
    });
  });

  describe('unchanged files are skipped before they are read', () => {
    it('by path, size and time, with the ledger read in a few queries; a touched file is hashed', async () => {
      const folder = path.join(dir, 'many');
      await mkdir(folder);
      const files = 12_000;
      for (let i = 0; i < files; i++)
        await writeFile(
          path.join(folder, `f${String(i).padStart(5, '0')}.json`),
          `${JSON.stringify(orderDoc(i + 1))}\n`,
        );
      const same = path.join(folder, 'f00001.json');
      const touched = path.join(folder, 'f00002.json');
      // A time of whole seconds, which utimes sets exactly (it takes seconds as a double, which may miss a
      // time in milliseconds by a nanosecond, and so the millisecond the ledger compares).
      const then = Math.floor(Date.now() / 1000) - 3600;
      await utimes(same, then, then);
      await withWarehouse(async (w) => {
        await ingestPaths(w, [folder], { store: 'shop', runId: 'first', logger: silentLogger });
        assert.equal(await count(w.connection, 'orders'), files);
        // Same size and time, other content: taken as unchanged without being read (no hash would agree).
        const original = await readFile(same, 'utf8');
        const swapped = original.replace('"T-2"', '"X-2"');
        assert.equal(swapped.length, original.length);
        await writeFile(same, swapped);
        await utimes(same, then, then);
        assert.equal((await stat(same)).mtimeMs, then * 1000);
        // A new time, the same content: hashed, and skipped as already loaded.
        const later = new Date(Date.now() + 60_000);
        await utimes(touched, later, later);
        const events: Record<string, unknown>[] = [];
        const logger = createLogger({
          level: 'debug',
          format: 'json',
          write: (line) => events.push(JSON.parse(line) as Record<string, unknown>),
        });
        const skipped = (of: string[]) =>
          events
            .filter((e) => e.event === 'ingest_file_unchanged' && of.includes(path.basename(String(e.path))))
            .map((e) => [path.basename(String(e.path)), e.by]);
        const summary = await ingestPaths(w, [folder], { store: 'shop', runId: 'again', logger });
        assert.deepEqual(
          summary.files.filter((f) => f.status !== 'unchanged'),
          [],
        );
        assert.equal(summary.documents, 0);
        assert.ok(summary.files.every((f) => f.status === 'unchanged'));
        // A query per file scanned the ledger once per file: 122 s for 50,000 unchanged files.
        assert.deepEqual(
          events.filter((e) => e.event === 'ingest_planned').map((e) => e.ledger_queries),
          [3],
        );
        assert.deepEqual(skipped(['f00001.json', 'f00002.json']), [
          ['f00001.json', 'time'],
          ['f00002.json', 'content'],
        ]);
        assert.equal(await count(w.connection, 'orders', `number = 'X-2'`), 0);
        // The ledger now holds the touched file's new time: the next run skips it unread.
        events.length = 0;
        const again = await ingestPaths(w, [folder], { store: 'shop', runId: 'third', logger });
        assert.equal(again.documents, 0);
        assert.deepEqual(skipped(['f00002.json']), [['f00002.json', 'time']]);
      });
    });
  });
});
