import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { emptyStreamState, type StreamState } from '../../src/contracts.js';
import { openWarehouse, readStatus, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { FIXTURES, tempWarehouse } from './helpers.js';

/** `store-sync status`: per store and stream, last success, rows, watermark, cursor in progress, rejections. */

describe('status', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  const inProgress: StreamState = {
    watermark: '2024-05-01',
    lastFullScanAt: null,
    pass: {
      id: 'p1',
      mode: 'incremental',
      startedAt: '2024-05-02T00:00:00Z',
      slices: {
        a: { nextUrl: null, done: true, params: {} },
        b: { nextUrl: 'https://api.example/subscriptions/?cursor=xyz', done: false, params: {} },
      },
    },
    extra: {},
  };

  before(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
    const page = { store: 'shop', runId: 'r1', rejections: [] };
    await warehouse.commitPage({
      ...page,
      stream: 'locations',
      entity: 'location',
      records: [{ id: 1, name: 'Leeds' }],
      state: emptyStreamState(),
    });
    await warehouse.commitPage({
      ...page,
      stream: 'subscriptions',
      entity: 'subscription',
      records: [{ id: 7, status: 'active' }],
      rejections: [
        { stream: 'subscriptions', key: '8', reason: 'id: expected an integer id', raw: { id: 'x' } },
      ],
      state: inProgress,
    });
    const bad = path.join(dir, 'bad.ndjson');
    await writeFile(bad, '{"id": 1, "checkout_url": "x", "total_cost": "1.2345"}\n');
    await ingestPaths(warehouse, [path.join(FIXTURES, 'others.ndjson'), bad], {
      store: 'shop',
      runId: 'r2',
      logger: silentLogger,
    });
  });
  after(() => cleanup());

  it('reports every stream and the documents, with rows, cursor and rejections', async () => {
    const rows = await readStatus(warehouse);
    assert.deepEqual(
      rows.map((r) => [
        r.store,
        r.stream,
        r.rows,
        r.watermark,
        r.cursorInProgress,
        r.rejectionsSinceLastSuccess,
      ]),
      [
        // The ingest that last succeeded rejected one document: it counts until a later run succeeds.
        ['shop', 'documents', 7, null, null, 1],
        ['shop', 'locations', 1, null, null, 0],
        ['shop', 'subscriptions', 1, '2024-05-01', 'https://api.example/subscriptions/?cursor=xyz', 1],
      ],
    );
    const [documents, locations, subscriptions] = rows;
    assert.ok(documents!.lastSuccessAt, 'a completed file counts as a success');
    assert.ok(locations!.lastSuccessAt, 'a commit with no pass in progress is a completed pass');
    assert.equal(subscriptions!.lastSuccessAt, null, 'a pass still in progress has not succeeded yet');
  });

  it('reads back the state committed with the page', async () => {
    assert.deepEqual(await warehouse.readState('shop', 'subscriptions'), inProgress);
    assert.deepEqual(await warehouse.readState('shop', 'nothing'), emptyStreamState());
    assert.deepEqual(
      (await warehouse.listStates()).map((s) => s.stream),
      ['locations', 'subscriptions'],
    );
  });

  it('records runs in _sync_runs', async () => {
    const runId = await warehouse.startRun({
      store: 'shop',
      command: 'sync',
      mode: 'incremental',
      streams: ['locations'],
    });
    await warehouse.finishRun(runId, { outcome: 'ok', counts: { locations: 1 }, requests: 3, retries: 1 });
    const reader = await warehouse.connection.runAndReadAll(
      `SELECT command, mode, streams, outcome, counts::VARCHAR, requests, retries, finished_at IS NOT NULL FROM _sync_runs WHERE _run_id = '${runId}'`,
    );
    assert.deepEqual(reader.getRowsJson(), [
      ['sync', 'incremental', ['locations'], 'ok', '{"locations":1}', '3', '1', true],
    ]);
  });

  it('a run whose process ended without an outcome is marked interrupted by the next writer, not left running', async () => {
    // A killed or Ctrl-C'd ingest never records its outcome: its row said "running" for ever.
    const { warehouse: own, dir, cleanup } = await tempWarehouse();
    const file = path.join(dir, 'warehouse.duckdb');
    try {
      const done = await own.startRun({ store: 'shop', command: 'ingest', mode: null, streams: [] });
      await own.finishRun(done, { outcome: 'succeeded', counts: {}, requests: 0, retries: 0 });
      const abandoned = await own.startRun({ store: 'shop', command: 'ingest', mode: null, streams: [] });
      await own.close();
      const outcomes = async (w: Warehouse) =>
        (
          await w.connection.runAndReadAll(
            `SELECT _run_id = '${abandoned}', outcome, error, finished_at IS NULL FROM _sync_runs ORDER BY 1`,
          )
        ).getRowsJson();
      const reader = await openWarehouse(file, { readOnly: true });
      assert.deepEqual(await outcomes(reader), [
        [false, 'succeeded', null, false],
        [true, null, null, true],
      ]);
      await reader.close();
      const writer = await openWarehouse(file);
      try {
        assert.deepEqual(await outcomes(writer), [
          [false, 'succeeded', null, false],
          [
            true,
            'interrupted',
            'the process ended before it recorded an outcome (killed, or stopped by a signal)',
            true,
          ],
        ]);
      } finally {
        await writer.close();
      }
    } finally {
      await cleanup();
    }
  });
});
