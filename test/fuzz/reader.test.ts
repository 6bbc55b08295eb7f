import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gzipSync } from 'node:zlib';
import fc from 'fast-check';
import { ingestPaths } from '../../pipelines/ingest.js';
import { DocumentReader } from '../../src/ingest/reader.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { fuzzParameters, fuzzRuns } from './support/cases.js';

/**
 * The ingest reader under fuzz: documents written in every format ingest accepts (NDJSON, a JSON array,
 * pretty-printed values one after another; plain or gzip; with or without a byte-order mark) come back
 * one by one, exactly; and lines of random bytes between good documents are each rejected while every
 * good document still loads.
 */

const RUNS = fuzzRuns(300);

let dir: string;
let warehouse: Warehouse;
let files = 0;

before(async () => {
  dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-fuzz-reader-'));
  warehouse = await openWarehouse(path.join(dir, 'reader.duckdb'));
});

after(async () => {
  await warehouse?.close();
  await rm(dir, { recursive: true, force: true });
});

type Format = 'ndjson' | 'array' | 'values';

function render(values: unknown[], format: Format, crlf: boolean): string {
  const nl = crlf ? '\r\n' : '\n';
  if (format === 'ndjson') return values.map((v) => JSON.stringify(v)).join(nl) + nl;
  if (format === 'array')
    return `[${nl}${values.map((v) => JSON.stringify(v, null, 2)).join(`,${nl}`)}${nl}]${nl}`;
  return values.map((v) => JSON.stringify(v, null, 2).replaceAll('\n', nl)).join(nl) + nl;
}

// A pretty-printed document spans several lines, which is how the reader tells "values" from NDJSON.
const documentValue = fc.dictionary(
  fc.string({ minLength: 1, maxLength: 6 }),
  fc.jsonValue({ maxDepth: 3 }),
  {
    minKeys: 1,
    maxKeys: 5,
  },
);

test('reader: every format hands back exactly the documents written, in order', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(documentValue, { minLength: 1, maxLength: 12 }),
      fc.constantFrom<Format>('ndjson', 'array', 'values'),
      fc.record({ gzip: fc.boolean(), bom: fc.boolean(), crlf: fc.boolean() }),
      async (values, format, { gzip, bom, crlf }) => {
        let bytes = Buffer.from((bom ? '\ufeff' : '') + render(values, format, crlf), 'utf8');
        if (gzip) bytes = gzipSync(bytes);
        const file = path.join(
          dir,
          `doc-${++files}.${format === 'ndjson' ? 'ndjson' : 'json'}${gzip ? '.gz' : ''}`,
        );
        await writeFile(file, bytes);
        const reader = new DocumentReader(file);
        const pieces = [];
        for await (const piece of reader.pieces()) pieces.push(piece);
        assert.deepEqual(
          pieces.map((p) => p.error ?? null),
          values.map(() => null),
          'no piece is reported broken',
        );
        assert.deepEqual(
          pieces.map((p) => JSON.parse(p.text)),
          JSON.parse(JSON.stringify(values)),
        );
        assert.equal(reader.bytesRead, bytes.length, 'every stored byte was read (and hashed)');
      },
    ),
    fuzzParameters(Math.max(50, Math.round(RUNS / 3))),
  );
});

const goodOrder = (n: number) =>
  JSON.stringify({ number: `R${n}`, total_incl_tax: '5.00', updated_at: '2024-05-01T10:00:00Z' });

// Random bytes with no newline and something other than blanks in them (a blank line is skipped, not a document).
const garbage = fc
  .uint8Array({ minLength: 1, maxLength: 80 })
  .map((a) => Buffer.from(a.filter((b) => b !== 10 && b !== 13)))
  .filter((b) => b.toString('latin1').trim().length > 0);

test('reader: random bytes between documents are each rejected and every document still loads', async () => {
  await fc.assert(
    fc.asyncProperty(
      fc.array(fc.option(garbage, { freq: 2 }), { minLength: 1, maxLength: 30 }),
      async (lines) => {
        const store = `reader_${++files}`;
        const file = path.join(dir, `${store}.ndjson`);
        const parts = lines.map((g, i) => g ?? Buffer.from(goodOrder(i)));
        await writeFile(file, Buffer.concat(parts.flatMap((p) => [p, Buffer.from('\n')])));
        const summary = await ingestPaths(warehouse, [file], {
          store,
          runId: `run-${store}`,
          logger: silentLogger,
        });
        const counts = await warehouse.exclusive(async () => {
          const reader = await warehouse.connection.runAndReadAll(
            `SELECT (SELECT count(*) FROM orders WHERE _store = '${store}'),
                  (SELECT count(*) FROM _rejected_records WHERE _store = '${store}' AND reason <> '')`,
          );
          return reader.getRows()[0]!.map(Number);
        });
        const good = lines.filter((g) => g === null).length;
        assert.deepEqual(counts, [good, lines.length - good], 'orders loaded, lines rejected');
        assert.equal(summary.documents, lines.length);
      },
    ),
    fuzzParameters(Math.max(20, Math.round(RUNS / 40)), 1000),
  );
});
