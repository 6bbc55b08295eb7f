import assert from 'node:assert/strict';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ingestPaths } from '../../pipelines/ingest.js';
import { rebuildWarehouse } from '../../pipelines/rebuild.js';
import { emptyStreamState, type PageCommit } from '../../src/contracts.js';
import { BatchBuilder } from '../../src/load/batch-builder.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { newFieldsText, SCHEMA_EXAMPLE_CHARS } from '../../src/load/schema-changes.js';
import { NEW_FIELDS_DAYS, newFieldsOfRun, recentNewFields } from '../../src/load/status.js';
import { silentLogger } from '../../src/log.js';
import { Normalizer, type SchemaChange, type SchemaContract } from '../../src/normalize/index.js';
import { ndjson, orderDoc, type Row, tableRows, tempDir, tempWarehouse } from './helpers.js';

/**
 * `_schema_changes` (src/load/schema-changes.ts): each batch's new field paths merged in the batch's own
 * transaction, keyed by store, table and path: the first sighting keeps its run and example, later ones move
 * `last_seen_at` and add to `count`. Here the batches carry hand-made changes, as a worker's prepared batch
 * does, so the writer is tested apart from the normalizer that finds them.
 */

const DAY = 86_400_000;
const T0 = Date.parse('2026-03-01T12:00:00.000Z');

/** Writes an otherwise empty batch carrying `changes`, in a transaction of its own (rolled back if asked). */
async function writeChanges(
  warehouse: Warehouse,
  meta: { store: string; runId: string; syncedAtMs: number },
  changes: SchemaChange[],
  { rollBack = false } = {},
): Promise<void> {
  const prepared = await new BatchBuilder(new Normalizer(), meta, warehouse.nextSeq()).prepare();
  prepared.schemaChanges = changes;
  const tx = await warehouse.begin();
  try {
    await tx.write(warehouse.adopt(prepared));
  } catch (error) {
    await tx.rollback();
    throw error;
  }
  if (rollBack) await tx.rollback();
  else await tx.commit();
}

const change = (table: string, fieldPath: string, example: string, count: number): SchemaChange => ({
  table,
  fieldPath,
  example,
  count,
});

describe('_schema_changes: the writer', () => {
  let warehouse: Warehouse;
  let cleanup: () => Promise<void>;
  const rows = () => tableRows(warehouse.connection, '_schema_changes', { exclude: [] });

  before(async () => {
    ({ warehouse, cleanup } = await tempWarehouse());
  });
  after(() => cleanup());

  it('adds up counts across batches and runs; first and last seen move; run and example stay the first', async () => {
    await writeChanges(warehouse, { store: 'shop', runId: 'r1', syncedAtMs: T0 }, [
      change('orders', 'zz_a', '"first"', 2),
      change('order_lines', 'zz_line', '1', 3),
    ]);
    // The same run's next batch: one path again, one new.
    await writeChanges(warehouse, { store: 'shop', runId: 'r1', syncedAtMs: T0 + 1000 }, [
      change('orders', 'zz_a', '"second"', 1),
      change('orders', 'zz_b', '{"x":1}', 1),
    ]);
    // A later run, and one whose batch carries an earlier time (a rebuild of older blocks, a clock moved back).
    await writeChanges(warehouse, { store: 'shop', runId: 'r2', syncedAtMs: T0 + DAY }, [
      change('orders', 'zz_a', '"third"', 4),
    ]);
    await writeChanges(warehouse, { store: 'shop', runId: 'r3', syncedAtMs: T0 - DAY }, [
      change('order_lines', 'zz_line', '2', 1),
    ]);
    assert.deepEqual(await rows(), [
      {
        _store: 'shop',
        table: 'order_lines',
        field_path: 'zz_line',
        first_seen_at: '2026-02-28 12:00:00+00',
        last_seen_at: '2026-03-01 12:00:00+00',
        run_id: 'r1',
        example: '1',
        count: 4,
      },
      {
        _store: 'shop',
        table: 'orders',
        field_path: 'zz_a',
        first_seen_at: '2026-03-01 12:00:00+00',
        last_seen_at: '2026-03-02 12:00:00+00',
        run_id: 'r1',
        example: '"first"',
        count: 7,
      },
      {
        _store: 'shop',
        table: 'orders',
        field_path: 'zz_b',
        first_seen_at: '2026-03-01 12:00:01+00',
        last_seen_at: '2026-03-01 12:00:01+00',
        run_id: 'r1',
        example: '{"x":1}',
        count: 1,
      },
    ]);
  });

  it('keeps stores apart, and a path named twice in one batch is one row', async () => {
    await writeChanges(warehouse, { store: 'other', runId: 'o1', syncedAtMs: T0 }, [
      change('orders', 'zz_a', '"a"', 1),
      change('orders', 'zz_a', '"b"', 2),
    ]);
    const other = (await rows()).filter((r) => r._store === 'other');
    assert.deepEqual(
      other.map((r) => [r.table, r.field_path, r.example, r.count, r.run_id]),
      [['orders', 'zz_a', '"a"', 3, 'o1']],
    );
    assert.equal((await rows()).filter((r) => r._store === 'shop' && r.field_path === 'zz_a')[0]!.count, 7);
  });

  it('cuts the example to 200 characters, never inside a character, and takes any field name', async () => {
    // An emoji is two UTF-16 units: cut by units, the 200th would be half of one.
    const long = `"${'x'.repeat(198)}😀😀tail"`;
    const odd = `it's "quoted"\u0000and NUL`;
    await writeChanges(warehouse, { store: 'cut', runId: 'c1', syncedAtMs: T0 }, [
      change('orders', 'long', long, 1),
      change('orders', odd, '"v"', 1),
    ]);
    const stored = (await rows()).filter((r) => r._store === 'cut');
    const example = stored.find((r) => r.field_path === 'long')!.example as string;
    assert.equal(Array.from(example).length, SCHEMA_EXAMPLE_CHARS);
    assert.equal(example, `"${'x'.repeat(198)}😀`);
    assert.ok(
      stored.some((r) => r.field_path === odd),
      'a field name with quotes and a NUL is stored as sent',
    );
  });

  it('is written in the batch’s transaction: a rollback leaves no row', async () => {
    await writeChanges(
      warehouse,
      { store: 'gone', runId: 'g1', syncedAtMs: T0 },
      [change('orders', 'zz', '1', 1)],
      {
        rollBack: true,
      },
    );
    assert.deepEqual(
      (await rows()).filter((r) => r._store === 'gone'),
      [],
    );
  });

  it('names what a run saw first, and what was first seen in the last days', async () => {
    assert.deepEqual(await newFieldsOfRun(warehouse, 'shop', 'r1'), [
      { store: 'shop', table: 'order_lines', fields: ['zz_line'], firstSeenAt: '2026-02-28T12:00:00.000Z' },
      { store: 'shop', table: 'orders', fields: ['zz_a', 'zz_b'], firstSeenAt: '2026-03-01T12:00:00.000Z' },
    ]);
    // r2 and r3 only saw paths r1 had seen first.
    assert.deepEqual(await newFieldsOfRun(warehouse, 'shop', 'r2'), []);
    // Less what an earlier call for the same run reported (a drain, file by file).
    const earlier = [{ store: 'shop', table: 'orders', fields: ['zz_a'], firstSeenAt: '' }];
    assert.deepEqual(await newFieldsOfRun(warehouse, 'shop', 'r1', earlier), [
      { store: 'shop', table: 'order_lines', fields: ['zz_line'], firstSeenAt: '2026-02-28T12:00:00.000Z' },
      { store: 'shop', table: 'orders', fields: ['zz_b'], firstSeenAt: '2026-03-01T12:00:01.000Z' },
    ]);

    // A path first seen more than NEW_FIELDS_DAYS ago is no longer new, even when seen since.
    await writeChanges(
      warehouse,
      { store: 'old', runId: 'o-old', syncedAtMs: T0 - (NEW_FIELDS_DAYS + 3) * DAY },
      [change('products', 'zz_old', '1', 1)],
    );
    await writeChanges(warehouse, { store: 'old', runId: 'o-new', syncedAtMs: T0 }, [
      change('products', 'zz_old', '1', 1),
      change('products', 'zz_new', '1', 1),
    ]);
    const recent = await recentNewFields(warehouse, T0 + DAY);
    assert.deepEqual(
      recent.filter((r) => r.store === 'old'),
      [{ store: 'old', table: 'products', fields: ['zz_new'], firstSeenAt: '2026-03-01T12:00:00.000Z' }],
    );
    assert.deepEqual(
      recent.filter((r) => r.store === 'shop').map((r) => [r.table, r.fields]),
      [
        ['order_lines', ['zz_line']],
        ['orders', ['zz_a', 'zz_b']],
      ],
    );
    // Seen from further on, nothing is new any more.
    assert.deepEqual(await recentNewFields(warehouse, T0 + (NEW_FIELDS_DAYS + 2) * DAY), []);
  });

  it('says it in one line per table', () => {
    assert.equal(
      newFieldsText({ table: 'orders', fields: ['zz_a', 'zz_b'] }),
      'orders: 2 new fields: `zz_a`, `zz_b` → see _schema_changes',
    );
    assert.equal(
      newFieldsText({ table: 'order_lines', fields: ['zz'] }),
      'order_lines: 1 new field: `zz` → see _schema_changes',
    );
    const many = Array.from({ length: 12 }, (_, i) => `f${String(i).padStart(2, '0')}`);
    assert.match(
      newFieldsText({ table: 'carts', fields: many }),
      /^carts: 12 new fields: `f00`, .*`f09`, and 2 more → see _schema_changes$/,
    );
  });
});

/** An order whose root, every line and every line's tax line carry fields the model does not map. */
function orderWithUnknowns(n: number): Record<string, unknown> {
  const order = orderDoc(n);
  const lines = (order.lines as Record<string, unknown>[]).map((line, k) => ({
    ...line,
    zz_line: { n, k },
    tax_lines: (line.tax_lines as Record<string, unknown>[]).map((t) => ({ ...t, zz_tax: k })),
  }));
  return {
    ...order,
    lines,
    zz_root: `${'r'.repeat(250)}${n}`,
    ...(n % 3 === 0 ? { zz_every_third: n } : {}),
  };
}

describe('_schema_changes: from the normalizer, through ingest, sync and rebuild', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  const docs = Array.from({ length: 90 }, (_, i) => orderWithUnknowns(i + 1));

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    await mkdir(path.join(dir, 'in'));
    // Several files and small batches: the changes of many batches (and, with workers, many threads) add up.
    for (let f = 0; f < 3; f++)
      await writeFile(path.join(dir, 'in', `${f}.ndjson`), ndjson(docs.slice(f * 30, f * 30 + 30)));
  });
  after(() => cleanup());

  async function ingestWith(workers: number): Promise<{ changes: Row[]; rebuilt: Row[] }> {
    const warehouse = await openWarehouse(path.join(dir, `w${workers}.duckdb`));
    try {
      const summary = await ingestPaths(warehouse, [path.join(dir, 'in')], {
        store: 'shop',
        runId: 'ingest',
        logger: silentLogger,
        workers,
        batchDocuments: 7,
        commitDocuments: 40,
      });
      assert.equal(summary.workers, workers);
      assert.deepEqual(
        summary.newFields.map((n) => [n.table, n.fields]),
        [
          ['order_line_tax_lines', ['zz_tax']],
          ['order_lines', ['zz_line']],
          ['orders', ['zz_every_third', 'zz_root']],
        ],
      );
      const changes = await tableRows(warehouse.connection, '_schema_changes', { exclude: [] });
      await rebuildWarehouse(warehouse, { logger: silentLogger, workers });
      const rebuilt = await tableRows(warehouse.connection, '_schema_changes', { exclude: [] });
      return { changes, rebuilt };
    } finally {
      await warehouse.close();
    }
  }

  it('counts every row that carried a path, keeps the first example cut to 200 characters; rebuild re-derives it', async () => {
    const { changes, rebuilt } = await ingestWith(0);
    assert.deepEqual(
      changes.map((r) => [r.table, r.field_path, r.count, r.run_id]),
      [
        ['order_line_tax_lines', 'zz_tax', 180, 'ingest'],
        ['order_lines', 'zz_line', 180, 'ingest'],
        ['orders', 'zz_every_third', 30, 'ingest'],
        ['orders', 'zz_root', 90, 'ingest'],
      ],
    );
    const root = changes.find((r) => r.field_path === 'zz_root')!;
    assert.equal(root.example, `"${'r'.repeat(SCHEMA_EXAMPLE_CHARS - 1)}`, 'the first order’s, cut');
    assert.equal(changes.find((r) => r.field_path === 'zz_every_third')!.example, '3');
    for (const r of changes) assert.ok(String(r.first_seen_at) <= String(r.last_seen_at));
    // Deleted and derived again from the raw landing, block by block with each block's time and run.
    assert.deepEqual(rebuilt, changes);
  });

  it('comes out the same with 1 or 4 worker threads', async () => {
    const times = ['first_seen_at', 'last_seen_at'];
    const without = (rows: Row[]) =>
      rows.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !times.includes(k))));
    const one = await ingestWith(1);
    const four = await ingestWith(4);
    assert.deepEqual(without(four.changes), without(one.changes));
    assert.deepEqual(without(four.rebuilt), without(one.changes));
  });

  it('rebuild in worker threads applies the contracts it is given, by store and stream', async () => {
    const warehouse = await openWarehouse(path.join(dir, 'contracts.duckdb'));
    try {
      await ingestPaths(warehouse, [path.join(dir, 'in')], {
        store: 'shop',
        runId: 'ingest',
        logger: silentLogger,
        workers: 0,
        batchDocuments: 7,
      });
      const orders = async () =>
        (
          await warehouse.connection.runAndReadAll(
            'SELECT count(*)::INTEGER, count(_extra)::INTEGER FROM orders',
          )
        ).getRows()[0];
      const counts = async () =>
        (await tableRows(warehouse.connection, '_schema_changes')).map((r) => [r.field_path, r.count]);
      const before = await counts();
      assert.deepEqual(await orders(), [90, 90]);

      const contracts = (contract: SchemaContract) => new Map([['shop', new Map([['documents', contract]])]]);
      // Another store's contract, or another stream's, changes nothing here.
      const elsewhere = new Map([
        ['other', new Map<string, SchemaContract>([['documents', 'freeze']])],
        ['shop', new Map<string, SchemaContract>([['products', 'freeze']])],
      ]);
      await rebuildWarehouse(warehouse, { logger: silentLogger, workers: 2, contracts: elsewhere });
      assert.deepEqual(await orders(), [90, 90]);

      await rebuildWarehouse(warehouse, {
        logger: silentLogger,
        workers: 2,
        contracts: contracts('discard'),
      });
      assert.deepEqual(await orders(), [90, 0], 'discard: every order loads, none keeps its unknown fields');
      assert.deepEqual(await counts(), before, 'and the paths are still counted');

      const frozen = await rebuildWarehouse(warehouse, {
        logger: silentLogger,
        workers: 2,
        contracts: contracts('freeze'),
      });
      assert.deepEqual(await orders(), [0, 0]);
      assert.equal(frozen.rejections, 90);
      assert.deepEqual(await counts(), []);
    } finally {
      await warehouse.close();
    }
  });

  it('a sync page names the paths of its records (the builder’s normalizer, taken as it is written)', async () => {
    const { warehouse, cleanup: done } = await tempWarehouse();
    try {
      const page = (records: Record<string, unknown>[]): PageCommit => ({
        store: 'shop',
        stream: 'locations',
        entity: 'location',
        runId: 'sync-1',
        records,
        rejections: [],
        state: emptyStreamState(),
      });
      await warehouse.commitPage(
        page([
          { id: 1, name: 'A', zz_dock: 3 },
          { id: 2, name: 'B', zz_dock: 4 },
        ]),
      );
      await warehouse.commitPage(page([{ id: 3, name: 'C' }]));
      await warehouse.commitPage({ ...page([{ id: 4, name: 'D', zz_dock: 5 }]), contract: 'discard' });
      assert.deepEqual(
        (await tableRows(warehouse.connection, '_schema_changes')).map((r) => [
          r.table,
          r.field_path,
          r.example,
          r.count,
        ]),
        [['locations', 'zz_dock', '3', 3]],
      );
      const found = await newFieldsOfRun(warehouse, 'shop', 'sync-1');
      assert.deepEqual(
        found.map(({ firstSeenAt: _, ...entry }) => entry),
        [{ store: 'shop', table: 'locations', fields: ['zz_dock'] }],
      );
      const extras = await warehouse.connection.runAndReadAll(
        'SELECT id::INTEGER, _extra::VARCHAR FROM locations ORDER BY id',
      );
      assert.deepEqual(extras.getRowsJson(), [
        [1, '{"zz_dock":3}'],
        [2, '{"zz_dock":4}'],
        [3, null],
        [4, null],
      ]);
    } finally {
      await done();
    }
  });
});
