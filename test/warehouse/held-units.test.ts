import assert from 'node:assert/strict';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { BatchWriter } from '../../src/load/batch-writer.js';
import { KIND, loadRecord } from '../../src/load/documents.js';
import { openWarehouse, type Transaction, type Warehouse } from '../../src/load/index.js';
import { silentLogger } from '../../src/log.js';
import { count, ndjson, orderDoc, storedRows, tableRows, tempDir } from './helpers.js';

/**
 * Customers (a sighted unit: TableDef `unit.sighted`) are held in memory across the batches of an ingest's
 * or a rebuild's transaction and merged once when it commits (src/load/held-units.ts). What is stored must be
 * what merging batch by batch stores: the same winners, folds and row times.
 */

/** A user carrying every field customers track: only such sightings are held (held-units.ts). */
const fullUser = (id: number, email: string, more: Record<string, unknown> = {}) => ({
  id,
  email,
  first_name: `F${id}`,
  last_name: 'L',
  phone_number: null,
  accepts_marketing: false,
  language: 'en',
  ip: null,
  user_agent: null,
  ...more,
});

/**
 * Orders whose customers repeat across batches, with versions that do not grow with arrival, users that lack
 * fields (folded with a fuller sighting), unknown user fields, and the first twenty orders delivered again at
 * the end (an equal version: the later arrival wins).
 */
function sightings(): Record<string, unknown>[] {
  const docs: Record<string, unknown>[] = [];
  for (let n = 0; n < 480; n++) {
    const customer = n % 40;
    const day = String(1 + ((n * 7) % 23)).padStart(2, '0');
    const doc = orderDoc(n, `2024-05-${day}T10:00:00Z`);
    // Customers 0 to 3 are sometimes sighted without most fields: they are merged batch by batch, with folds.
    // Customers 4 to 7 always lack the same two fields: held like those that lack none.
    const user: Record<string, unknown> =
      customer < 4 && n % 3 === 0
        ? { id: customer }
        : fullUser(customer, `c${customer}-${n}@example.com`, { first_name: `F${n}` });
    if (customer >= 4 && customer < 8) {
      delete user.ip;
      delete user.user_agent;
    }
    if (n % 13 === 0) user.zz_hobby = `h${n}`;
    doc.user = user;
    docs.push(doc);
  }
  return [...docs, ...docs.slice(0, 20)];
}

describe('customers held until the commit', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let file: string;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
    file = path.join(dir, 'orders.ndjson');
    await writeFile(file, ndjson(sightings()));
  });
  after(async () => cleanup());

  /** Ingests the documents 40 per batch, committing every `commitDocuments`, holding customers. */
  async function ingest(name: string, commitDocuments: number) {
    const warehouse = await openWarehouse(path.join(dir, `${name}.duckdb`));
    const summary = await ingestPaths(warehouse, [file], {
      store: 'shop',
      runId: name,
      logger: silentLogger,
      workers: 0,
      batchDocuments: 40,
      commitDocuments,
      holdUnits: true,
    });
    return { warehouse, summary };
  }

  it('one transaction of many batches stores what a commit per batch stores', async () => {
    const held = await ingest('held', 1_000_000);
    const each = await ingest('each', 40);
    try {
      assert.equal(held.summary.records, 500);
      for (const table of ['customers', 'orders', 'order_lines']) {
        const [a, b] = await Promise.all([
          tableRows(held.warehouse.connection, table),
          tableRows(each.warehouse.connection, table),
        ]);
        assert.deepEqual(a, b, table);
      }
      const customers = await tableRows(held.warehouse.connection, 'customers');
      assert.equal(customers.length, 40);
      // Customer 0 sighted without an email last (order 0 delivered again), its email from a fuller one.
      const zero = customers.find((c) => c.id === 0)!;
      assert.match(String(zero.email), /^c0-\d+@example\.com$/);
      // Unknown user fields stay in _extra through the hold.
      const extras = await count(held.warehouse.connection, 'customers', "_extra LIKE '%zz_hobby%'");
      assert.ok(extras > 0, 'some customer keeps an unknown field in _extra');
      // The rows reported are those stored, a replaced one again: customers held are replaced once at the
      // commit rather than in every batch that names them.
      const stored = await storedRows(held.warehouse.connection);
      assert.ok(held.summary.rows >= stored, `${held.summary.rows} reported, ${stored} stored`);
      assert.ok(
        held.summary.rows < each.summary.rows,
        `${held.summary.rows} rows held against ${each.summary.rows} batch by batch`,
      );
    } finally {
      await held.warehouse.close();
      await each.warehouse.close();
    }
  });

  it("dates each customer by its winning sighting's batch: the order it came from", async () => {
    const { warehouse } = await ingest('dated', 1_000_000);
    try {
      const mismatched = await warehouse.connection.runAndReadAll(
        'SELECT count(*)::INTEGER FROM customers c JOIN orders o ON o.number = c.seen_in_order ' +
          'WHERE c._synced_at <> o._synced_at OR c._run_id <> o._run_id',
      );
      assert.equal(mismatched.getRowsJS()[0]![0], 0);
      assert.equal(await count(warehouse.connection, 'customers', 'seen_in_order IS NULL'), 0);
    } finally {
      await warehouse.close();
    }
  });
});

describe('the held rows of a transaction', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  before(async () => {
    ({ dir, cleanup } = await tempDir());
    warehouse = await openWarehouse(path.join(dir, 'w.duckdb'));
  });
  after(async () => {
    await warehouse.close();
    await cleanup();
  });

  /** Writes orders of the given users as one batch dated `syncedAtMs`. */
  async function write(
    tx: Transaction,
    syncedAtMs: number,
    orders: { n: number; user: Record<string, unknown>; updatedAt?: string }[],
  ) {
    const batch = warehouse.newBatch({ store: 'shop', runId: `run-${syncedAtMs}`, syncedAtMs });
    for (const { n, user, updatedAt } of orders) {
      const record = { ...orderDoc(n, updatedAt), user };
      const text = JSON.stringify(record);
      loadRecord(batch, batch.land('orders', 'order', KIND.record, null, text), text, record);
    }
    return tx.write(BatchWriter.of(batch));
  }

  /** Customers as stored now, seen on the transaction's connection without merging what is held. */
  const stored = (tx: Transaction) => count(tx.connection, 'customers');

  it('holds rows until the commit, merges them before a read, and past its limit at once', async () => {
    const tx = await warehouse.begin({ holdUnits: { thinRows: 4, maxRows: 8 } });
    try {
      await write(
        tx,
        1_000,
        [1, 2, 3].map((id) => ({ n: id, user: fullUser(id, `a${id}@x`) })),
      );
      assert.equal(await stored(tx), 0, 'held, not yet merged');
      // Ten more customers: past the limit, so merged with this batch, which counts their rows.
      const counts = await write(
        tx,
        2_000,
        Array.from({ length: 10 }, (_, i) => ({ n: 10 + i, user: fullUser(10 + i, `b${i}@x`) })),
      );
      assert.equal(await stored(tx), 13);
      assert.ok(counts.rows >= 13, `the batch counts the merged customers (${counts.rows})`);
      // Customer 30 is sighted twice, once without most fields: merged with its batch, not held.
      await write(tx, 3_000, [
        { n: 30, user: fullUser(30, 'c30@x') },
        { n: 31, user: { id: 30 } },
        { n: 32, user: fullUser(31, 'c31@x') },
      ]);
      assert.equal(await stored(tx), 14);
      const seen = await tx.read((c) => c.runAndReadAll('SELECT count(*)::INTEGER FROM customers'));
      assert.equal(seen.getRowsJS()[0]![0], 15, 'a read sees the held rows');
      // Customer 1 newer, customer 2 older than the stored sightings: held, and only 1 replaced at the commit.
      await write(tx, 4_000, [
        { n: 40, user: fullUser(1, 'newer@x'), updatedAt: '2024-06-01T00:00:00Z' },
        { n: 41, user: fullUser(2, 'older@x'), updatedAt: '2024-04-01T00:00:00Z' },
      ]);
      assert.equal(await stored(tx), 15);
      // The rows stored by the merges of held rows that no batch counted: the read's one, the commit's one.
      assert.equal(await tx.commit(), 2);
    } catch (error) {
      await tx.rollback();
      throw error;
    }
    const dated = await warehouse.connection.runAndReadAll(
      'SELECT id::INTEGER, epoch_ms(_synced_at)::INTEGER, _run_id, email FROM customers ORDER BY id',
    );
    const rows = dated.getRowsJS();
    assert.equal(rows.length, 15);
    assert.deepEqual(rows[0], [1, 4_000, 'run-4000', 'newer@x']);
    assert.deepEqual(rows[1], [2, 1_000, 'run-1000', 'a2@x']);
    assert.deepEqual(rows.at(-1), [31, 3_000, 'run-3000', 'c31@x']);
  });

  it('copies a sighting only when it beats the held one, and drops the beaten rows', async () => {
    const tx = await warehouse.begin({ holdUnits: { thinRows: 2, maxRows: 100 } });
    for (let k = 0; k < 4; k++)
      await write(
        tx,
        10_000 + k,
        [101, 102, 103].map((id) => ({
          n: 1000 + 10 * k + (id - 100),
          user: fullUser(id, `v${k}-${id}@x`),
          // Customer 103's first sighting is its newest: the later ones lose to it.
          updatedAt: `2024-0${id === 103 ? 9 - k : 5 + k}-01T00:00:00Z`,
        })),
      );
    assert.equal(await tx.commit(), 3);
    const rows = await warehouse.connection.runAndReadAll(
      'SELECT id::INTEGER, email, epoch_ms(_synced_at)::INTEGER FROM customers WHERE id > 100 ORDER BY id',
    );
    assert.deepEqual(rows.getRowsJS(), [
      [101, 'v3-101@x', 10_003],
      [102, 'v3-102@x', 10_003],
      [103, 'v0-103@x', 10_000],
    ]);
  });

  it('merges at once the sightings of a customer whose stored row lacks a field', async () => {
    const first = await warehouse.begin({ holdUnits: true });
    await write(first, 8_000, [{ n: 80, user: { id: 80 }, updatedAt: '2024-05-10T00:00:00Z' }]);
    await first.commit();
    const tx = await warehouse.begin({ holdUnits: true });
    // Older than the stored sighting, but carrying the email it lacks: folded into it, batch by batch.
    await write(tx, 9_000, [{ n: 81, user: fullUser(80, 'first@x'), updatedAt: '2024-05-01T00:00:00Z' }]);
    await write(tx, 9_500, [{ n: 82, user: fullUser(80, 'second@x'), updatedAt: '2024-05-02T00:00:00Z' }]);
    const folded = await tx.connection.runAndReadAll(
      'SELECT email, seen_in_order FROM customers WHERE id = 80',
    );
    assert.deepEqual(folded.getRowsJS(), [['first@x', 'T-80']], 'folded when its batch was written');
    assert.equal(await tx.commit(), 0);
  });

  it('folds a sighting lacking fields with a fuller one held before it, dated by the winner', async () => {
    const tx = await warehouse.begin({ holdUnits: true });
    await write(tx, 5_000, [
      { n: 50, user: fullUser(50, 'full@x', { first_name: 'Ada' }), updatedAt: '2024-05-01T00:00:00Z' },
    ]);
    await write(tx, 6_000, [{ n: 51, user: { id: 50 }, updatedAt: '2024-05-02T00:00:00Z' }]);
    await tx.commit();
    const folded = await warehouse.connection.runAndReadAll(
      'SELECT email, first_name, seen_in_order, epoch_ms(_synced_at)::INTEGER, _run_id FROM customers WHERE id = 50',
    );
    assert.deepEqual(folded.getRowsJS(), [['full@x', 'Ada', 'T-51', 6_000, 'run-6000']]);
  });

  it('forgets what it held when the transaction rolls back', async () => {
    const before = await count(warehouse.connection, 'customers');
    const tx = await warehouse.begin({ holdUnits: true });
    await write(tx, 7_000, [{ n: 70, user: fullUser(70, 'gone@x') }]);
    await tx.rollback();
    const next = await warehouse.begin({ holdUnits: true });
    assert.equal(await next.commit(), 0);
    assert.equal(await count(warehouse.connection, 'customers'), before);
    assert.equal(await count(warehouse.connection, 'customers', 'id = 70'), 0);
  });
});
