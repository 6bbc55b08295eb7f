import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { DuckDBInstance } from '@duckdb/node-api';
import * as z from 'zod';
import { runSync } from '../../pipelines/sync.js';
import { API_VERSION_2024, type OperationSpec } from '../../schemas/index.js';
import { parseConfig } from '../../src/config.js';
import { ERROR_CODES, isStoreSyncError } from '../../src/errors.js';
import { fullScanStream } from '../../src/extract/index.js';
import { silentLogger } from '../../src/log.js';
import { renderWarehouseDoc } from '../../src/model/docs.js';
import { addPlan, addTables, type TableDef } from '../../src/model/index.js';
import { planResources, streamResources } from '../../src/model/resources.js';
import { MODEL, validateModel } from '../../src/model/validate.js';
import { sendJson, startServer, type TestServer } from './helpers.js';

/**
 * What adding a full-scan stream costs (docs/architecture.md, "Adding a stream"): a toy resource, its
 * table, its plan and its stream are declared here and nowhere else, served by a loopback server as a
 * paginated list, and synced end to end through the real sync pipeline into a real DuckDB file.
 */

// The API: the resource's zod schema and the list operation that pages through it (for a built-in stream,
// schemas/resources.ts and schemas/operations.ts describe them before any stream reads them).
const Toy = z.looseObject({ id: z.int(), name: z.string(), colour: z.string().nullish() });
const listToys: OperationSpec = {
  id: 'listToys',
  method: 'GET',
  path: '/toys/',
  version: API_VERSION_2024,
  scopes: ['catalogue:read'],
  body: 'none',
  response: Toy,
  list: true,
};

// 1 and 2. The table it fills (src/model/tables/<family>.ts), and the plan that fills it (src/model/plans.ts).
const toys: TableDef = {
  name: 'toys',
  comment: 'Toys, from full scans of GET /toys/.',
  key: ['_store', 'id'],
  entity: 'toy',
  unit: { key: 'id' },
  fullScan: true,
  columns: [
    { name: 'id', type: 'BIGINT', comment: 'Toy id.', source: 'id' },
    { name: 'name', type: 'VARCHAR', comment: 'Name.', source: 'name' },
    { name: 'colour', type: 'VARCHAR', comment: 'Colour.', source: 'colour' },
  ],
};
addTables([toys]);
addPlan('toy', { table: 'toys', unit: true });

// 3. The stream (src/streams.ts). The plan's record schema is its operation's items: nothing more to declare.
const toyStream = fullScanStream({
  name: 'toys',
  entity: 'toy',
  table: 'toys',
  defaults: {},
  operation: listToys,
});

const PAGE_SIZE = 2;

describe('a toy full-scan stream declared outside src/', () => {
  let server: TestServer;
  let dir: string;
  let catalogue = [
    { id: 1, name: 'kite', colour: 'red' },
    { id: 2, name: 'yo-yo', colour: null },
    { id: 3, name: 'top', colour: 'blue' },
    { id: 4, name: 'ball', colour: 'green' },
    { id: 5, name: 'marble' },
  ];

  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'toy-stream-'));
    server = await startServer((req, res) => {
      const url = new URL(req.url ?? '/', server.origin);
      if (url.pathname !== '/toys/' || req.headers.authorization !== 'Bearer toy-token') {
        sendJson(res, url.pathname === '/toys/' ? 401 : 404, { detail: 'no' });
        return;
      }
      const offset = Number(url.searchParams.get('cursor') ?? 0);
      const end = offset + PAGE_SIZE;
      sendJson(res, 200, {
        next: end < catalogue.length ? `${server.origin}/toys/?cursor=${end}` : null,
        previous: null,
        results: catalogue.slice(offset, end),
      });
    });
  });

  after(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  const config = () =>
    parseConfig(
      {
        warehouse: 'warehouse.duckdb',
        rateLimit: 0,
        stores: [{ name: 'toyshop', baseUrl: `${server.origin}/`, tokenEnv: 'TOY_TOKEN' }],
      },
      'toy config',
      dir,
    );

  const sync = async (streams: string[] | null = null) => {
    const parsed = config();
    return runSync({
      config: parsed,
      store: parsed.stores[0]!,
      streams,
      catalog: [toyStream],
      mode: 'incremental',
      logger: silentLogger,
      token: 'toy-token',
    });
  };

  const rows = async () => {
    const instance = await DuckDBInstance.create(path.join(dir, 'warehouse.duckdb'), {
      access_mode: 'READ_ONLY',
    });
    const connection = await instance.connect();
    try {
      const reader = await connection.runAndReadAll(
        `SELECT _store, id, name, colour, _deleted_at IS NOT NULL AS deleted FROM toys ORDER BY id`,
      );
      return reader.getRowObjectsJson();
    } finally {
      connection.closeSync();
      instance.closeSync();
    }
  };

  const expected = (deleted: number[] = []) =>
    [
      [1, 'kite', 'red'],
      [2, 'yo-yo', null],
      [3, 'top', 'blue'],
      [4, 'ball', 'green'],
      [5, 'marble', null],
    ].map(([id, name, colour]) => ({
      _store: 'toyshop',
      id: String(id),
      name,
      colour,
      deleted: deleted.includes(id as number),
    }));

  it('passes the model validator like a built-in table and plan', () => {
    // The plan reads what the stream's operation lists: its record schema is not declared a second time.
    const resources = { ...planResources, ...streamResources([toyStream]) };
    assert.deepEqual(resources.toy, [{ name: 'listToys items', shape: null, schema: Toy }]);
    const problems = validateModel({ ...MODEL, resources }).filter((problem) => /toy/.test(problem));
    assert.deepEqual(problems, []);
    // And names a misspelt source, which would otherwise leave the column empty.
    const misspelt = MODEL.tables.map((table) =>
      table.name !== 'toys'
        ? table
        : {
            ...table,
            columns: table.columns.map((c) => (c.name === 'colour' ? { ...c, source: 'color' } : c)),
          },
    );
    assert.deepEqual(
      validateModel({ ...MODEL, tables: misspelt, resources }).filter((problem) => /toy/.test(problem)),
      ['toys.colour: source `color` names no field of the toys item in listToys items'],
    );
  });

  it('is documented with the built-in tables, under its kind, with no edit of the doc generator', () => {
    const doc = renderWarehouseDoc();
    assert.match(doc, /\n## Toy\n\n### `toys`\n/);
    assert.ok(doc.indexOf('### `toys`') > doc.indexOf('## Bookkeeping'), 'after the built-in families');
  });

  it('syncs every page of the list into its table', async () => {
    const result = await sync();
    assert.equal(result.outcome, 'succeeded');
    assert.deepEqual(
      result.streams.map(({ stream, status, pages, records }) => ({ stream, status, pages, records })),
      [{ stream: 'toys', status: 'ok', pages: 3, records: 5 }],
    );
    assert.deepEqual(await rows(), expected());
  });

  it('changes nothing when synced again', async () => {
    const result = await sync();
    assert.equal(result.outcome, 'succeeded');
    assert.deepEqual(await rows(), expected());
  });

  it('refuses a stream its catalog does not have, before any request', async () => {
    const requests = server.hits.length;
    await assert.rejects(
      sync(['locations']),
      (error) =>
        isStoreSyncError(error, ERROR_CODES.USAGE) && /no stream is named "locations"/.test(error.message),
    );
    assert.equal(server.hits.length, requests);
  });

  it('soft-deletes a toy that a completed scan no longer returns', async () => {
    catalogue = catalogue.filter((toy) => toy.id !== 3);
    const result = await sync();
    assert.equal(result.outcome, 'succeeded');
    assert.deepEqual(await rows(), expected([3]));
  });
});
