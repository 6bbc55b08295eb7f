import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { ApiClient, STREAMS } from '../../src/extract/index.js';
import { validateRecords } from '../../src/extract/validate.js';
import type { Warehouse } from '../../src/load/index.js';
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

  /** Reads `page` as the locations stream does (list page, validation) and commits it as run `runId`. */
  async function syncPage(page: string, runId: string) {
    body = page;
    const stream = STREAMS.locations;
    const read = await client.listPage(stream.operation, client.operationUrl(stream.operation).href);
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
});
