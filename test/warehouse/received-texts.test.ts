import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { ApiClient, STREAMS } from '../../src/extract/index.js';
import { followCursor } from '../../src/extract/pagination.js';
import { validateRecords } from '../../src/extract/validate.js';
import type { Warehouse } from '../../src/load/index.js';
import { CODEC, decodeBlock, storedBlocks } from '../../src/load/landing.js';
import { startServer, type TestServer } from '../extract/helpers.js';
import { tempWarehouse } from './helpers.js';

/**
 * The warehouse side of received texts (src/extract/received-text.ts): a page read by the client, validated
 * and committed lands each record, and stores each rejection's payload, as the text the server sent, not
 * JSON.stringify of what JSON.parse made of it (1.50 would be 1.5, a big integer 1.2345678901234568e+22,
 * 1e400 null). A body in which a secret was masked keeps no texts: its records land re-serialized, masked.
 */

const TOKEN = 'received-texts-token-Zq81';

/** The page the server answers with next. */
let body = '';

describe('received texts in the warehouse', () => {
  let server: TestServer;
  let client: ApiClient;
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;

  before(async () => {
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
      res.end(body);
    });
    client = new ApiClient({ baseUrl: `${server.origin}/api/`, token: TOKEN, rateLimit: 0 });
    ({ warehouse, cleanup } = await tempWarehouse());
  });

  after(async () => {
    await client?.close();
    await server?.close();
    await cleanup?.();
  });

  /**
   * Reads `page` as the locations stream does (its chain, which keeps the records' texts once the next request
   * is out; validation) and commits it as run `runId`.
   */
  async function syncPage(page: string, runId: string) {
    body = page;
    const stream = STREAMS.locations;
    const pages = [];
    for await (const read of followCursor({
      client,
      operation: stream.operation,
      startUrl: client.operationUrl(stream.operation).href,
    }))
      pages.push(read);
    assert.equal(pages.length, 1);
    const read = pages[0]!;
    const { records, rejections } = validateRecords(stream.schema, read.results, stream.name, 'GET /api/x');
    await warehouse.commitPage({
      store: 'shop',
      stream: stream.name,
      entity: stream.entity,
      runId,
      records,
      rejections,
      state: emptyStreamState(),
    });
  }

  /** The texts of the records the raw landing holds, in order. */
  async function landedTexts(): Promise<string[]> {
    const reader = await warehouse.connection.runAndReadAll('SELECT first_seq FROM _raw_landing ORDER BY 1');
    const seqs = reader.getRows().map(([seq]) => Number(seq));
    const blocks = await storedBlocks(warehouse.connection, seqs);
    const landed = (
      await Promise.all(seqs.map(async (s) => (await decodeBlock(CODEC, blocks.get(s)!)).records))
    ).flat();
    return landed.filter((r) => r.kind === 'record').map((r) => r.bytes.toString('utf8'));
  }

  async function rejectedPayloads(runId: string): Promise<string[]> {
    const reader = await warehouse.connection.runAndReadAll(
      `SELECT payload FROM _rejected_records WHERE _run_id = '${runId}' ORDER BY key`,
    );
    return reader.getRows().map(([payload]) => String(payload));
  }

  it('a rejection stores the text its record was received as', async () => {
    const rejected = '{"id": "bad", "big": 123456789012345678901234567890, "tiny": 1e400, "x": 1.50}';
    await syncPage(`{"next": null, "results": [${rejected}]}`, 'rejected');
    assert.deepEqual(await rejectedPayloads('rejected'), [rejected]);
  });

  it('a record lands exactly as the server sent it: spacing, 1.50 and a big integer', async () => {
    const sent = [
      '{"id": 1, "name": "Depot", "x": 1.50, "big": 123456789012345678901234567890}',
      '{"id":2,"name":"caf\\u00e9","x":1.50}',
    ];
    const before = (await landedTexts()).length;
    await syncPage(`{ "next": null,\n  "results": [ ${sent.join(',\n ')} ] }`, 'exact');
    assert.deepEqual((await landedTexts()).slice(before), sent);
    const names = await warehouse.connection.runAndReadAll('SELECT name FROM locations WHERE id = 2');
    assert.deepEqual(names.getRows(), [['café']], 'the parsed record is what is normalized');
  });

  it('a body in which a secret was masked lands its records re-serialized, masked', async () => {
    const before = (await landedTexts()).length;
    await syncPage(
      `{"next": null, "results": [{"id": 3, "name": "echo ${TOKEN}", "x": 1.50}, {"id": "bad", "note": "${TOKEN}"}]}`,
      'masked',
    );
    assert.deepEqual((await landedTexts()).slice(before), ['{"id":3,"name":"echo ***","x":1.5}']);
    assert.deepEqual(await rejectedPayloads('masked'), ['{"id":"bad","note":"***"}']);
  });
});
