import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { type IngestSummary, ingestPaths } from '../../pipelines/ingest.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, ndjson, orderDoc, tableRows, tempDir, tempWarehouse } from './helpers.js';

/** Every input format ingest reads, a malformed line with its file and line, and stdin. */

const pretty = (doc: unknown) => JSON.stringify(doc, null, 2);
const STDIN_CHILD = new URL('./children/ingest-stdin.ts', import.meta.url).pathname;

/** Ingests `content` through a child's stdin into a new warehouse, then checks its summary and tables. */
async function ingestStdin<T>(
  content: string | Buffer,
  check: (summary: IngestSummary, stored: Warehouse) => Promise<T>,
): Promise<T> {
  const { dir, cleanup } = await tempDir();
  try {
    const file = path.join(dir, 'w.duckdb');
    const child = spawn(process.execPath, ['--import', 'tsx', STDIN_CHILD, file], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stdin.end(content);
    const [code] = await once(child, 'exit');
    assert.equal(code, 0);
    const stored = await openWarehouse(file, { readOnly: true });
    try {
      return await check(JSON.parse(out) as IngestSummary, stored);
    } finally {
      await stored.close();
    }
  } finally {
    await cleanup();
  }
}

describe('ingest formats', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  let summary: IngestSummary;

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    const input = path.join(dir, 'in');
    await mkdir(path.join(input, 'sub'), { recursive: true });
    const files: Record<string, string | Buffer> = {
      'a.json': pretty(orderDoc(1)),
      'b.json': `\uFEFF${pretty([orderDoc(2), orderDoc(3)])}`,
      'c.ndjson': `${JSON.stringify(orderDoc(4))}\n{"number": "T-5", "lines": [\n\n${JSON.stringify(orderDoc(6))}\n`,
      'd.ndjson.gz': gzipSync(ndjson([orderDoc(7), orderDoc(8)])),
      'e.json.gz': gzipSync(pretty([orderDoc(9)])),
      'sub/f.jsonl': ndjson([
        { api_version: '2024-04-01', data: orderDoc(10) },
        { api_version: '2024-04-01', data: [orderDoc(11)] },
      ]),
      'g.json': `${pretty(orderDoc(12))}\n${pretty(orderDoc(13))}`,
      'h.json': `[\n${JSON.stringify(orderDoc(14))},\n{"number": tru},\n${JSON.stringify(orderDoc(15))}\n]`,
      'i.ndjson': `${JSON.stringify({ hello: 'world' })}\n${JSON.stringify(orderDoc(16)).slice(0, 40)}`,
      'notes.txt': 'not a document',
    };
    for (const [name, content] of Object.entries(files)) await writeFile(path.join(input, name), content);
    summary = await ingestPaths(warehouse, [input], {
      store: 'shop',
      runId: 'formats',
      logger: silentLogger,
    });
  });
  after(() => cleanup());

  it('reads JSON, arrays, NDJSON, JSONL, concatenated values and .gz of each, folders recursively', async () => {
    assert.deepEqual(
      summary.files.map((f) => [path.relative(path.join(dir, 'in'), f.path), f.documents, f.rejections]),
      [
        ['a.json', 1, 0],
        ['b.json', 2, 0],
        ['c.ndjson', 3, 1],
        ['d.ndjson.gz', 2, 0],
        ['e.json.gz', 1, 0],
        ['g.json', 2, 0],
        ['h.json', 3, 1],
        ['i.ndjson', 2, 2],
        ['sub/f.jsonl', 2, 0],
      ],
    );
    const numbers = (await tableRows(warehouse.connection, 'orders')).map((o) => o.number);
    assert.deepEqual(numbers, [1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15].map((n) => `T-${n}`).sort());
    assert.equal(await count(warehouse.connection, 'order_lines'), 28);
  });

  it('rejects a malformed line with its file and line number, and loads the rest', async () => {
    const rows = await tableRows(warehouse.connection, '_rejected_records', {
      exclude: ['_synced_at', '_run_id', 'raw_seq'],
    });
    const bySource = Object.fromEntries(
      rows.map((r) => [path.relative(path.join(dir, 'in'), String(r.source)), r]),
    );
    assert.deepEqual(Object.keys(bySource).sort(), ['c.ndjson:2', 'h.json:3', 'i.ndjson:1', 'i.ndjson:2']);
    assert.match(String(bySource['c.ndjson:2']!.reason), /^malformed JSON/);
    assert.equal(bySource['c.ndjson:2']!.payload, '{"number": "T-5", "lines": [');
    assert.equal(bySource['c.ndjson:2']!.stage, 'parse');
    assert.match(String(bySource['h.json:3']!.reason), /^malformed JSON/);
    assert.match(String(bySource['i.ndjson:1']!.reason), /^unrecognised document/);
    assert.match(String(bySource['i.ndjson:2']!.reason), /^malformed JSON/);
  });

  it('ignores files a folder holds that are not documents', () => {
    assert.ok(!summary.files.some((f) => f.path.endsWith('notes.txt')));
  });

  it('reads every line whatever the first line is: longer than a read, or an array (a file and stdin alike)', async () => {
    // A format chosen from the first read alone (1 MB of a file, 64 KB of stdin) goes wrong: a longer first
    // line makes an NDJSON input read as values, and a truncated line then swallows every document after
    // it; a first line holding an array makes the rest one 80-byte complaint, landed nowhere.
    const long = (pad: number) =>
      `${JSON.stringify({ ...orderDoc(30), metadata: { pad: 'x'.repeat(pad) } })}\n{"number": "T-31",\n${ndjson([orderDoc(32), orderDoc(33)])}`;
    const batches = `${JSON.stringify([orderDoc(40), orderDoc(41)])}\n${JSON.stringify([orderDoc(42), orderDoc(43)])}\n`;
    const stdin = (content: string) =>
      ingestStdin(content, async (summary, stored) => ({
        rejections: summary.rejections,
        orders: await count(stored.connection, 'orders'),
      }));
    const { warehouse: own, dir: ownDir, cleanup: done } = await tempWarehouse();
    try {
      await writeFile(path.join(ownDir, 'long.json'), long(1_100_000));
      // Blank lines before the first document: its line is still the one the format is chosen from.
      await writeFile(
        path.join(ownDir, 'blank-first.json'),
        `\n \r\n${long(1_100_000).replaceAll('T-3', 'T-5')}`,
      );
      await writeFile(path.join(ownDir, 'batches.json'), batches);
      const files = await ingestPaths(
        own,
        [
          path.join(ownDir, 'long.json'),
          path.join(ownDir, 'blank-first.json'),
          path.join(ownDir, 'batches.json'),
        ],
        {
          store: 'shop',
          runId: 'first-lines',
          logger: silentLogger,
        },
      );
      assert.deepEqual(
        files.files.map((f) => [path.basename(f.path), f.rejections]),
        [
          ['long.json', 1],
          ['blank-first.json', 1],
          ['batches.json', 0],
        ],
      );
      const orders = await tableRows(own.connection, 'orders', { exclude: [] });
      assert.deepEqual(orders.map((o) => o.number).sort(), [
        'T-30',
        'T-32',
        'T-33',
        'T-40',
        'T-41',
        'T-42',
        'T-43',
        'T-50',
        'T-52',
        'T-53',
      ]);
      const rejected = await tableRows(own.connection, '_rejected_records');
      assert.deepEqual(rejected.map((r) => path.basename(String(r.source))).sort(), [
        'blank-first.json:4',
        'long.json:2',
      ]);
    } finally {
      await done();
    }
    assert.deepEqual(await stdin(long(70_000)), { rejections: 1, orders: 3 });
    assert.deepEqual(await stdin(batches), { rejections: 0, orders: 4 });
  });

  it('reads stdin', async () => {
    await ingestStdin(
      gzipSync(ndjson([orderDoc(21), orderDoc(22), orderDoc(23)])),
      async (result, stored) => {
        assert.equal(result.documents, 3);
        assert.equal(await count(stored.connection, 'orders'), 3);
        const [ledger] = await tableRows(stored.connection, '_ingested_files');
        assert.match(String(ledger!.path), /^stdin:[0-9a-f]{64}$/);
        const [line] = await tableRows(stored.connection, 'order_lines', { where: "order_number = 'T-22'" });
        assert.equal(line!.sku, 'SKU-1');
      },
    );
  });
});
