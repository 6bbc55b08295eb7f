import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { type EntityKind, emptyStreamState } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { dataTables } from '../../src/model/index.js';
import { expected } from './golden-expected.js';
import { count, FIXTURES, tableRows, tempWarehouse } from './helpers.js';

/**
 * Golden test: hand-written documents of both order shapes (every array non-empty) and one of each other
 * document type, ingested, plus one API page per stream entity, and the exact rows of every table
 * compared with golden-expected.ts.
 */

const PAGES: [string, EntityKind][] = [
  ['products', 'product'],
  ['subscriptions', 'subscription'],
  ['locations', 'location'],
  ['metadata_definitions', 'metadata_definition'],
];

describe('golden documents', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
    const files = ['order-2023.json', 'order-2024.json', 'others.ndjson'].map((f) => path.join(FIXTURES, f));
    const summary = await ingestPaths(warehouse, files, {
      store: 'shop',
      runId: 'golden',
      logger: silentLogger,
    });
    assert.equal(summary.rejections, 0, 'the fixtures load without rejections');
    assert.equal(summary.documents, 8);
    const records = JSON.parse(await readFile(path.join(FIXTURES, 'pages', 'records.json'), 'utf8'));
    for (const [stream, entity] of PAGES) {
      const page = {
        store: 'shop',
        stream,
        entity,
        runId: 'golden',
        records: records[stream],
        rejections: [],
      };
      const result = await warehouse.commitPage({ ...page, state: emptyStreamState() });
      assert.deepEqual(result, { rejections: 0, fieldRejections: 0 });
    }
  });
  after(() => cleanup());

  for (const table of dataTables().map((t) => t.name)) {
    it(`${table} holds exactly the expected rows`, async () => {
      const rows = await tableRows(warehouse.connection, table, { compact: true });
      assert.deepEqual(rows, expected[table] ?? [], `rows of ${table}`);
    });
  }

  it('covers every table the documents feed, and nothing is rejected', async () => {
    const empty = dataTables().filter((t) => !expected[t.name]?.length);
    assert.deepEqual(
      empty.map((t) => t.name),
      [],
      'every data table has golden rows',
    );
    assert.equal(await count(warehouse.connection, '_rejected_records'), 0);
    assert.equal(await count(warehouse.connection, '_ingested_files', "status = 'complete'"), 3);
  });
});
