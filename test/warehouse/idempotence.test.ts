import assert from 'node:assert/strict';
import { appendFile, cp, readFile, utimes, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { gzipSync } from 'node:zlib';
import { ingestPaths } from '../../pipelines/ingest.js';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import type { Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, FIXTURES, snapshot, tempDir, tempWarehouse } from './helpers.js';

/**
 * Idempotent (docs/operations.md, "What a run promises"): syncing or ingesting the same data twice changes
 * nothing but `_synced_at` and `_run_id`.
 */

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

  it('a file that grew is read from where the last run stopped: its old states do not replace newer ones', async () => {
    // Cart 701 moves on in a later capture; then the first file is appended to. Read again from the start,
    // the first file's old state of the cart (carts carry no version: the one read last wins) replaced the
    // newer one, and its old rejections were recorded again at every run.
    const later = path.join(docs, 'later.ndjson');
    await writeFile(
      later,
      `${JSON.stringify({ id: 701, status: 'abandoned', abandoned: true, checkout_url: 'https://shop.example/c/701' })}\n`,
    );
    await ingestPaths(warehouse, [later], options('ingest-5'));
    const file = path.join(docs, 'in', 'others.ndjson');
    const rejectedBefore = await count(warehouse.connection, '_rejected_records');
    await appendFile(
      file,
      `${JSON.stringify({ id: 702, status: 'open', checkout_url: 'https://shop.example/c/702' })}\n`,
    );
    const grown = await ingestPaths(warehouse, [file], options('ingest-6'));
    assert.equal(grown.files[0]!.status, 'resumed');
    assert.equal(grown.documents, 1, 'only the appended document is read');
    const carts = await warehouse.connection.runAndReadAll('SELECT id, status FROM carts ORDER BY id');
    assert.deepEqual(carts.getRowsJson(), [
      ['701', 'abandoned'],
      ['702', 'open'],
    ]);
    assert.equal(await count(warehouse.connection, '_rejected_records'), rejectedBefore);
    const again = await ingestPaths(warehouse, [file], options('ingest-7'));
    assert.equal(again.files[0]!.status, 'unchanged');
  });

  it('a grown file whose last line had no newline: read once if it was whole, read again if it was cut short', async () => {
    const cart = (id: number, status: string) =>
      JSON.stringify({ id, status, checkout_url: `https://shop.example/c/${id}` });
    // A writer that ends its lines only when it writes the next: the line was whole, and loaded.
    const open = path.join(docs, 'open.ndjson');
    await writeFile(open, cart(801, 'open'));
    await ingestPaths(warehouse, [open], options('open-1'));
    const newer = path.join(docs, 'newer.ndjson');
    await writeFile(newer, `${cart(801, 'submitted')}\n`);
    await ingestPaths(warehouse, [newer], options('open-2'));
    await appendFile(open, `\n${cart(802, 'open')}\n`);
    const grown = await ingestPaths(warehouse, [open], options('open-3'));
    assert.equal(grown.files[0]!.status, 'resumed');
    assert.equal(grown.documents, 1, 'cart 801 was not read again');
    const status = async (id: number) =>
      (
        await warehouse.connection.runAndReadAll(`SELECT status FROM carts WHERE id = ${id}`)
      ).getRowsJson()[0]?.[0];
    assert.equal(await status(801), 'submitted');
    assert.equal(await status(802), 'open');

    // Ingest ran while a line was being written: cut short, it was rejected; completed, it loads.
    const cut = path.join(docs, 'cut.ndjson');
    const whole = cart(803, 'open');
    await writeFile(cut, `${cart(804, 'open')}\n${whole.slice(0, 20)}`);
    const first = await ingestPaths(warehouse, [cut], options('cut-1'));
    assert.equal(first.rejections, 1);
    await appendFile(cut, `${whole.slice(20)}\n`);
    const completed = await ingestPaths(warehouse, [cut], options('cut-2'));
    assert.equal(completed.files[0]!.status, 'loaded');
    assert.equal(await status(803), 'open');
  });

  it('a gzipped capture grown by another gzip member is read from where the last run stopped', async () => {
    const cart = (id: number) =>
      `${JSON.stringify({ id, status: 'open', checkout_url: `https://shop.example/c/${id}` })}\n`;
    const file = path.join(docs, 'carts.ndjson.gz');
    await writeFile(file, gzipSync(cart(901) + cart(902)));
    await ingestPaths(warehouse, [file], options('gz-1'));
    await appendFile(file, gzipSync(cart(903)));
    const grown = await ingestPaths(warehouse, [file], options('gz-2'));
    assert.equal(grown.files[0]!.status, 'resumed');
    assert.equal(grown.documents, 1, 'only the appended member is read');
    const carts = await warehouse.connection.runAndReadAll(
      'SELECT count(*) FROM carts WHERE id BETWEEN 901 AND 903',
    );
    assert.deepEqual(carts.getRowsJson(), [['3']]);
  });

  it('a file changed before its end is read again whole', async () => {
    const file = path.join(docs, 'in', 'others.ndjson');
    const text = await readFile(file, 'utf8');
    await writeFile(file, `${text.replace('"id":702,"status":"open"', '"id":702,"status":"shut"')}\n`);
    const changed = await ingestPaths(warehouse, [file], options('ingest-8'));
    assert.equal(changed.files[0]!.status, 'loaded');
    assert.equal(changed.documents, 7);
    const [cart] = (
      await warehouse.connection.runAndReadAll('SELECT status FROM carts WHERE id = 702')
    ).getRowsJson();
    assert.deepEqual(cart, ['shut']);
  });
});
