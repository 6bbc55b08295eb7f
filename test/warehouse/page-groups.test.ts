import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { type EntityKind, emptyStreamState, type PageCommit, type StreamState } from '../../src/contracts.js';
import { type PageCounts, PageGroups, type Warehouse } from '../../src/load/index.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { count, snapshot, tableRows, tempWarehouse } from './helpers.js';

/**
 * A sync commits its pages in groups (src/load/page-groups.ts, Warehouse.commitPages): pages of several
 * streams in one transaction load exactly what they load one transaction each, every page keeps its own
 * counts, each stream's saved state is its last page's, and a page that cannot be committed fails its own
 * stream only, with no later page of that stream committed after it.
 */

type Row = Record<string, unknown>;

/** A state whose slice cursor names the page: the saved state tells which page of a stream came last. */
function stateAfter(stream: string, page: number, last: boolean): StreamState {
  return {
    ...emptyStreamState(),
    pass: last
      ? null
      : {
          id: `full/incremental/-/2026-01-01T00:00:00.000Z`,
          mode: 'incremental',
          startedAt: '2026-01-01T00:00:00.000Z',
          slices: {
            '-': { nextUrl: `https://shop.test/api/${stream}?cursor=${page + 1}`, done: false, params: {} },
          },
        },
    extra: { page },
  };
}

describe('page groups', () => {
  let sandbox: Sandbox;
  let pages: PageCommit[];
  let subscriptionRecords: Row[];
  const one = { warehouse: null as unknown as Warehouse, cleanup: async () => {} };
  const grouped = { warehouse: null as unknown as Warehouse, cleanup: async () => {} };

  before(async () => {
    sandbox = await startSandbox({ seed: 3, scale: 40, rateLimit: 0 });
    const records = (resource: string) =>
      JSON.parse(JSON.stringify(sandbox.store.snapshot(resource as never))) as Row[];
    const subscriptions = records('subscriptions').slice(0, 40);
    subscriptionRecords = subscriptions;
    const products = records('products').slice(0, 12);
    const locations = records('locations');
    const split = (stream: string, entity: EntityKind, rows: Row[], size: number): PageCommit[] => {
      const out: PageCommit[] = [];
      for (let i = 0; i < rows.length; i += size)
        out.push({
          store: 'shop',
          stream,
          entity,
          runId: 'run-1',
          records: rows.slice(i, i + size),
          rejections: [],
          state: stateAfter(stream, out.length, i + size >= rows.length),
        });
      return out;
    };
    const subs = split('subscriptions', 'subscription', subscriptions, 10);
    // A record met again on a later page, newer: it wins, whichever transaction holds either page.
    const again = { ...subscriptions[3]!, status: 'canceled', date_updated: '2026-06-01T00:00:00Z' };
    subs[2]!.records = [...subs[2]!.records, again];
    // One record whose price the warehouse cannot store (a field rejection), and one refused at extraction.
    subs[1]!.records = [
      ...subs[1]!.records.slice(1),
      { ...subs[1]!.records[0]!, total: '1.2345678901234567890' },
    ];
    subs[0]!.rejections = [
      { stream: 'subscriptions', key: '999999', reason: 'id: expected an integer id', raw: { id: 'x' } },
    ];
    const prods = split('products', 'product', products, 5);
    prods.at(-1)!.completedFullScan = { passStartedAt: '2026-01-01T00:00:00.000Z' };
    const locs = split('locations', 'location', locations, 100);
    // Interleaved as the streams of one run hand them over.
    pages = [];
    for (let i = 0; i < Math.max(subs.length, prods.length, locs.length); i++)
      for (const list of [subs, prods, locs]) if (list[i]) pages.push(list[i]!);
    Object.assign(one, await tempWarehouse());
    Object.assign(grouped, await tempWarehouse());
  });

  after(async () => {
    await one.cleanup();
    await grouped.cleanup();
    await sandbox?.close();
  });

  /** Pages of subscriptions of run `runId`, of the sizes given, in order, the records never repeated. */
  const subscriptionPages = (sizes: { runId: string; records: number }[]): PageCommit[] => {
    let next = 0;
    return sizes.map(({ runId, records }, n) => {
      const slice = subscriptionRecords.slice(next, next + records);
      next += records;
      assert.equal(slice.length, records, 'the sandbox has records enough');
      return {
        store: 'shop',
        stream: 'subscriptions',
        entity: 'subscription',
        runId,
        records: slice,
        rejections: [],
        state: stateAfter('subscriptions', n, n === sizes.length - 1),
      };
    });
  };

  /** The landing blocks of a warehouse in order: records in each and the run it belongs to. */
  const landingBlocks = async (warehouse: Warehouse) =>
    (
      await warehouse.connection.runAndReadAll(
        'SELECT records::INTEGER AS records, _run_id FROM _raw_landing ORDER BY first_seq',
      )
    ).getRowObjectsJson();

  it('pages committed as one group load what they load one transaction each, with their own counts', async () => {
    const alone: PageCounts[] = [];
    for (const page of pages) alone.push(await one.warehouse.commitPage(page));
    const groups = new PageGroups(grouped.warehouse);
    const together = await Promise.all(pages.map((page) => groups.commit(page)));
    await groups.close();

    // Fewer transactions: a raw landing block per transaction.
    assert.equal(await count(one.warehouse.connection, '_raw_landing'), pages.length);
    assert.ok(
      (await count(grouped.warehouse.connection, '_raw_landing')) < pages.length,
      'the pages shared transactions',
    );
    assert.deepEqual(
      await snapshot(grouped.warehouse.connection, ['_synced_at', '_run_id', '_deleted_at']),
      await snapshot(one.warehouse.connection, ['_synced_at', '_run_id', '_deleted_at']),
    );
    const states = async (w: Warehouse) =>
      (await w.listStates()).map((s) => [s.stream, s.state, s.lastSuccessAt !== null]);
    assert.deepEqual(await states(grouped.warehouse), await states(one.warehouse));
    const lastPage = (stream: string) => pages.filter((p) => p.stream === stream).length - 1;
    assert.deepEqual(
      (await grouped.warehouse.listStates()).map((s) => [s.stream, (s.state.extra as { page: number }).page]),
      ['locations', 'products', 'subscriptions'].map((stream) => [stream, lastPage(stream)]),
      "each stream's state is its last page's",
    );
    const rejections = (w: Warehouse) =>
      tableRows(w.connection, '_rejected_records', { exclude: ['_synced_at', 'seq'] }).then((rows) =>
        rows.map((r) => JSON.stringify(r)).sort(),
      );
    assert.deepEqual(await rejections(grouped.warehouse), await rejections(one.warehouse));
    assert.deepEqual(
      together.map((c) => [c.rejections, c.fieldRejections]),
      alone.map((c) => [c.rejections, c.fieldRejections]),
    );
    assert.deepEqual(
      together.map((c) => c.rejections),
      pages.map((p) =>
        p === pages[0] ? 1 : p.stream === 'subscriptions' && p.state.extra['page'] === 1 ? 1 : 0,
      ),
      'the extract rejection and the field rejection each count on their own page',
    );
    const canceled = await tableRows(grouped.warehouse.connection, 'subscriptions', {
      where: `id = ${Number(pages[0]!.records[3]!['id'])}`,
    });
    assert.equal(canceled[0]?.['status'], 'canceled', 'the newer copy of the record won');
  });

  it('a group takes pages in order until the next would pass its record limit, one page at least', async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      // Handed over in one turn: every page waits for the first group. At 10 records a group: 4 + 4 (a third
      // would make 12), 4 + 4, the 12-record page alone (over the limit, but one page at least), then 4.
      const handed = subscriptionPages([4, 4, 4, 4, 12, 4].map((records) => ({ runId: 'run-3', records })));
      const groups = new PageGroups(warehouse, { groupRecords: 10 });
      const counts = await Promise.all(handed.map((p) => groups.commit(p)));
      await groups.close();
      assert.equal(counts.length, handed.length);
      assert.deepEqual(
        (await landingBlocks(warehouse)).map((b) => b['records']),
        [8, 8, 12, 4],
        'four landing blocks, one per group',
      );
      assert.equal(await count(warehouse.connection, 'subscriptions'), 32);
    } finally {
      await cleanup();
    }
  });

  it('pages of two runs never share a group: each landing block holds one run', async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      // Interleaved runs (a, a, b, a, b, b), all under the group limit: a block ends wherever the run changes.
      const runs = ['run-a', 'run-a', 'run-b', 'run-a', 'run-b', 'run-b'];
      const handed = subscriptionPages(runs.map((runId) => ({ runId, records: 3 })));
      const groups = new PageGroups(warehouse);
      await Promise.all(handed.map((p) => groups.commit(p)));
      await groups.close();
      assert.deepEqual(await landingBlocks(warehouse), [
        { records: 6, _run_id: 'run-a' },
        { records: 3, _run_id: 'run-b' },
        { records: 3, _run_id: 'run-a' },
        { records: 6, _run_id: 'run-b' },
      ]);
      const loaded = await warehouse.connection.runAndReadAll(
        'SELECT _run_id, count(*)::INTEGER AS n FROM subscriptions GROUP BY ALL ORDER BY ALL',
      );
      assert.deepEqual(loaded.getRowObjectsJson(), [
        { _run_id: 'run-a', n: 9 },
        { _run_id: 'run-b', n: 9 },
      ]);
    } finally {
      await cleanup();
    }
  });

  it('a page that cannot be committed fails its own stream, and no later page of that stream is committed', async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      const page = (
        stream: string,
        entity: EntityKind,
        id: number,
        n: number,
        extra: Row = {},
      ): PageCommit => ({
        store: 'shop',
        stream,
        entity,
        runId: 'run-2',
        records: [{ ...(pages.find((p) => p.stream === stream)!.records[0] as Row), id, ...extra }],
        rejections: [],
        state: { ...stateAfter(stream, n, false), extra: { page: n } },
      });
      // A record that cannot be written as JSON (JSON has no BigInt; a parsed response never holds one) fails
      // its page while the transaction is built.
      const handed = [
        page('products', 'product', 9001, 0),
        page('locations', 'location', 9101, 0),
        page('products', 'product', 9002, 1, { unsavable: 1n }),
        page('locations', 'location', 9102, 1),
        page('products', 'product', 9003, 2),
      ];
      const groups = new PageGroups(warehouse);
      const outcomes = await Promise.allSettled(handed.map((p) => groups.commit(p)));
      const late = await groups.commit(page('products', 'product', 9004, 3)).then(
        () => 'committed',
        (error: Error) => error.message,
      );
      await groups.close();
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'fulfilled', 'rejected', 'fulfilled', 'rejected'],
      );
      assert.match(late, /BigInt/, 'a page handed over after its stream failed is refused with the failure');
      const ids = async (table: string) =>
        (await tableRows(warehouse.connection, table, { where: 'id > 9000' }))
          .map((r) => Number(r['id']))
          .sort();
      assert.deepEqual(await ids('products'), [9001]);
      assert.deepEqual(await ids('locations'), [9101, 9102]);
      const saved = Object.fromEntries(
        (await warehouse.listStates()).map((s) => [s.stream, (s.state.extra as { page: number }).page]),
      );
      assert.deepEqual(
        saved,
        { products: 0, locations: 1 },
        "the failed stream's cursor stays at its last page stored",
      );
    } finally {
      await cleanup();
    }
  });
  /** Landing blocks in order, each with its sequence range: a batch's landing starts where the one before ended. */
  const landingRanges = async (warehouse: Warehouse) =>
    (
      await warehouse.connection.runAndReadAll(
        'SELECT first_seq::INTEGER AS first, last_seq::INTEGER AS last, records::INTEGER AS records FROM _raw_landing ORDER BY first_seq',
      )
    ).getRowObjectsJson() as { first: number; last: number; records: number }[];

  it('a group that fails at its commit is tried page by page, and the group built meanwhile is built again after it', async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      // The history of locations is gone: a transaction writing a location fails in DuckDB, at its commit's
      // statements, after the page was built; every other stream's page loads.
      await warehouse.connection.run('DROP TABLE locations_history');
      const location = pages.find((p) => p.stream === 'locations')!;
      const [s0, s1, s2, s3] = subscriptionPages([4, 4, 4, 4].map(() => ({ runId: 'run-1', records: 4 })));
      const handed = [s0!, { ...location, records: location.records.slice(0, 4) }, s1!, s2!, s3!];
      // Groups of 8 records: [s0, location] first; [s1, s2] is built while it commits, then [s3].
      const groups = new PageGroups(warehouse, { groupRecords: 8 });
      const outcomes = await Promise.allSettled(handed.map((p) => groups.commit(p)));
      await groups.close();
      assert.deepEqual(
        outcomes.map((o) => o.status),
        ['fulfilled', 'rejected', 'fulfilled', 'fulfilled', 'fulfilled'],
      );
      assert.equal(await count(warehouse.connection, 'subscriptions'), 16);
      assert.equal(await count(warehouse.connection, 'locations'), 0);
      const ranges = await landingRanges(warehouse);
      assert.deepEqual(
        ranges.map((r) => r.records),
        [4, 8, 4],
        's0 alone (tried page by page), then the next groups as built again',
      );
      ranges.forEach((range, i) => {
        assert.equal(range.last - range.first + 1, range.records);
        if (i > 0) assert.equal(range.first, ranges[i - 1]!.last + 1, 'no landing range overlaps or skips');
      });
    } finally {
      await cleanup();
    }
  });

  /** Hands `pages` over one per turn of the event loop, as a stream's chain does, and waits for their commits. */
  const handOverInTurns = async (groups: PageGroups, pages: PageCommit[]) => {
    const committed: Promise<PageCounts>[] = [];
    for (const page of pages) {
      committed.push(groups.commit(page));
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    return Promise.all(committed);
  };

  it('with readyPages, pages handed over one at a time wait for each other up to the ready size, a lone page for the linger', {
    timeout: 60_000,
  }, async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      const handed = subscriptionPages([5, 5, 5, 5, 5].map((records) => ({ runId: 'run-1', records })));
      // Ready at 15 records; six pages of one stream waiting would make it ready, and there are never as many.
      const groups = new PageGroups(warehouse, {
        readyPages: 6,
        readyRecords: 15,
        lingerMs: 50,
      });
      await handOverInTurns(groups, handed.slice(0, 3));
      // The fourth page alone: nothing else comes, so it is committed once the linger is over.
      await groups.commit(handed[3]!);
      await groups.commit(handed[4]!);
      await groups.close();
      assert.deepEqual(
        (await landingBlocks(warehouse)).map((b) => b['records']),
        [15, 5, 5],
        'three pages handed over in separate turns shared one transaction; the later ones each had their own',
      );
    } finally {
      await cleanup();
    }
  });

  it('with readyPages, that many pages of one stream waiting make the group ready at once', {
    timeout: 60_000,
  }, async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    try {
      const handed = subscriptionPages([2, 2, 2, 2].map((records) => ({ runId: 'run-1', records })));
      // Nothing else would make the group ready for ten minutes: the stream's third page waiting does.
      const groups = new PageGroups(warehouse, {
        readyPages: 3,
        readyRecords: 1_000,
        lingerMs: 600_000,
      });
      await handOverInTurns(groups, handed.slice(0, 3));
      assert.deepEqual(
        (await landingBlocks(warehouse)).map((b) => b['records']),
        [6],
      );
      // close() commits what waits without the linger.
      const last = groups.commit(handed[3]!);
      await groups.close();
      await last;
      assert.deepEqual(
        (await landingBlocks(warehouse)).map((b) => b['records']),
        [6, 2],
      );
    } finally {
      await cleanup();
    }
  });

  it("with readyPages, a stream's last commit, which the stream waits for, is committed without the linger", {
    timeout: 60_000,
  }, async () => {
    const { warehouse, cleanup } = await tempWarehouse();
    let groups: PageGroups | undefined;
    try {
      const [page, closing] = subscriptionPages([3, 0].map((records) => ({ runId: 'run-1', records })));
      // Nothing else would make the group ready for ten minutes; the closing commit does, and it does not wait for
      // close(): the stream awaits it before it reports, and the run closes the groups only after that.
      groups = new PageGroups(warehouse, {
        readyPages: 6,
        readyRecords: 1_000,
        lingerMs: 600_000,
      });
      let timer: NodeJS.Timeout | undefined;
      const committed = await Promise.race([
        handOverInTurns(groups, [page!, { ...closing!, last: true }]).then(() => true),
        new Promise<false>((resolve) => {
          timer = setTimeout(() => resolve(false), 30_000);
        }),
      ]).finally(() => clearTimeout(timer));
      assert.equal(committed, true, 'the group holding the closing commit was committed before the linger');
      assert.deepEqual(
        (await landingBlocks(warehouse)).map((b) => b['records']),
        [3],
      );
    } finally {
      await groups?.close();
      await cleanup();
    }
  });
});
