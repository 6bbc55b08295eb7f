import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { sendJson, startServer, type TestServer } from '../extract/helpers.js';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  readWarehouse,
  runCli,
  tempDir,
  writeConfig,
} from './helpers.js';

/**
 * Counts in the summary (docs/reliability.md, "Hardening"): records rejected while normalizing must not be
 * counted as loaded ("records 9" where 5 were stored). `records` is what was stored; every rejection, at
 * validation or at normalize, is in `rejections`, in the summary table and in `_sync_runs.counts` alike.
 */

describe('sync summary: records stored, rejections apart', () => {
  let server: TestServer;
  let dir: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    // Ten locations: one fails its schema (an extraction rejection), four carry a lone UTF-16 surrogate in
    // their name, which passes the schema and cannot be stored as UTF-8 (a normalize rejection), five are fine.
    const results = [
      ...[1, 2, 3, 4, 5].map((id) => ({ id, name: `fine ${id}` })),
      ...[6, 7, 8, 9].map((id) => ({ id, name: `broken \ud800 ${id}` })),
      { id: 'ten', name: 'not an integer id' },
    ];
    server = await startServer((_req, res) => sendJson(res, 200, { next: null, previous: null, results }));
    ({ dir, cleanup } = await tempDir());
  });

  after(async () => {
    killChildren();
    await server?.close();
    await cleanup?.();
    assertNoSecretsOrEscapes();
  });

  it('records = the 5 stored; rejections = 1 at validation + 4 at normalize; in the summary and _sync_runs', async () => {
    const warehouse = path.join(dir, 'w.duckdb');
    const config = await writeConfig(dir, {
      warehouse,
      stores: [{ name: 'shop', baseUrl: `${server.origin}/api/` }],
    });
    const result = await runCli(['sync', '--config', config, '--streams', 'locations']);
    assertExit(result, 3);
    const row = result.stdout
      .split('\n')
      .map((line) => line.trim().split(/\s+/))
      .find((cells) => cells[0] === 'shop' && cells[1] === 'locations');
    assert.ok(row, result.stdout);
    const [, , status, pages, records, rejections] = row;
    assert.deepEqual(
      { status, pages, records, rejections },
      { status: 'ok', pages: '1', records: '5', rejections: '5' },
      result.stdout,
    );
    const [stored] = await readWarehouse<{ n: bigint }>(warehouse, 'SELECT count(*) AS n FROM locations');
    assert.equal(Number(stored!.n), 5);
    const [run] = await readWarehouse<{ outcome: string; records: string; rejections: string }>(
      warehouse,
      "SELECT outcome, json_extract_string(counts, '$.locations.records') AS records, " +
        "json_extract_string(counts, '$.locations.rejections') AS rejections FROM _sync_runs",
    );
    assert.deepEqual(run, { outcome: 'completed_with_rejections', records: '5', rejections: '5' });
    const [rejected] = await readWarehouse<{ extract: bigint; normalize: bigint }>(
      warehouse,
      "SELECT count(*) FILTER (stage = 'extract') AS extract, count(*) FILTER (stage = 'normalize') AS normalize FROM _rejected_records",
    );
    assert.deepEqual(
      { extract: Number(rejected!.extract), normalize: Number(rejected!.normalize) },
      { extract: 1, normalize: 4 },
    );
  });
});
