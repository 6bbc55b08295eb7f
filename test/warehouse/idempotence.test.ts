import assert from 'node:assert/strict';
import { appendFile, cp, utimes } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, FIXTURES, snapshot, tempDir, tempWarehouse } from './helpers.js';

/** DESIGN §4.2: syncing or ingesting the same data twice changes nothing but `_synced_at` and `_run_id`. */

const options = (runId: string) => ({ store: 'shop', runId, logger: silentLogger });

describe('idempotence', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  let docs: string;
  let removeDocs: () => Promise<void>;

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
    ({ dir: docs, cleanup: removeDocs } = await tempDir());
    for (const f of ['order-2023.json', 'order-2024.json', 'others.ndjson'])
      await cp(path.join(FIXTURES, f), path.join(docs, 'in', f));
  });
  after(async () => {
    await cleanup();
    await removeDocs();
  });

  it('the same page committed twice changes nothing but _synced_at and _run_id', async () => {
    const page: PageCommit = {
      store: 'shop',
      stream: 'locations',
      entity: 'location',
      runId: 'run-1',
      records: [
        { id: 1, name: 'Leeds', address: { country: 'GB' } },
        { id: 2, name: 'Berlin', address: { country: 'DE' } },
      ],
      rejections: [],
      state: emptyStreamState(),
    };
    await warehouse.commitPage(page);
    const first = await snapshot(warehouse.connection);
    const firstTimes = await snapshot(warehouse.connection, []);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await warehouse.commitPage({ ...page, runId: 'run-2' });
    assert.deepEqual(await snapshot(warehouse.connection), first);
    assert.notDeepEqual(
      await snapshot(warehouse.connection, []),
      firstTimes,
      '_synced_at and _run_id did move',
    );
    assert.equal(await count(warehouse.connection, 'locations'), 2);
  });

  it('ingesting the same folder twice reads nothing the second time and changes nothing', async () => {
    const first = await ingestPaths(warehouse, [docs], options('ingest-1'));
    assert.equal(first.documents, 8);
    const before = await snapshot(warehouse.connection, []);
    const second = await ingestPaths(warehouse, [docs], options('ingest-2'));
    assert.deepEqual(
      second.files.map((f) => f.status),
      ['unchanged', 'unchanged', 'unchanged'],
    );
    assert.equal(second.documents, 0);
    assert.deepEqual(await snapshot(warehouse.connection, []), before, 'not even _synced_at moved');
  });

  it('a touched but identical file is recognised by its content hash', async () => {
    const file = path.join(docs, 'in', 'others.ndjson');
    const later = new Date(Date.now() + 60_000);
    await utimes(file, later, later);
    const before = await snapshot(warehouse.connection, []);
    const again = await ingestPaths(warehouse, [file], options('ingest-3'));
    assert.equal(again.files[0]!.status, 'unchanged');
    assert.deepEqual(await snapshot(warehouse.connection, []), before);
  });

  it('the same documents under another path load again to the same rows', async () => {
    const before = await snapshot(warehouse.connection);
    await cp(path.join(docs, 'in'), path.join(docs, 'copy'), { recursive: true });
    const copy = await ingestPaths(warehouse, [path.join(docs, 'copy')], options('ingest-4'));
    assert.equal(copy.documents, 8);
    assert.deepEqual(await snapshot(warehouse.connection), before);
  });

  it('a changed file is read again', async () => {
    const file = path.join(docs, 'in', 'others.ndjson');
    await appendFile(
      file,
      `${JSON.stringify({ id: 702, status: 'open', checkout_url: 'https://shop.example/c/702' })}\n`,
    );
    const changed = await ingestPaths(warehouse, [file], options('ingest-5'));
    assert.equal(changed.files[0]!.status, 'loaded');
    assert.equal(changed.documents, 7);
    assert.equal(await count(warehouse.connection, 'carts'), 2);
  });
});
