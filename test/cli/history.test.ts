import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertExit, readWarehouse, runCli, sandboxJob } from './helpers.js';

/**
 * Issue 27, "History", through the CLI against the embedded sandbox as a moving target: the store changes
 * between syncs (a subscription created, one cancelled, one failing; a location removed, one added), and
 * `subscriptions_history` / `locations_history` gain exactly the versions those changes make; a repeated sync
 * adds none, and `rebuild` re-derives the same history from the raw landing.
 */

interface Version {
  id: number;
  change: string;
  current: boolean;
  status: string | null;
  run: string;
}

describe('store-sync sync: observed-version history', () => {
  let sandbox: Sandbox;
  let close: () => Promise<void>;
  let warehouse: string;
  let config: string;

  const read = <T = Record<string, unknown>>(sql: string) => readWarehouse<T>(warehouse, sql);
  // Every record re-read each time: an unchanged one must still add no version.
  const sync = async () => assertExit(await runCli(['sync', '--full-refresh', '--config', config]), 0);
  const versions = (table: 'subscriptions' | 'locations') =>
    read<Version>(
      `SELECT id::DOUBLE AS id, _change AS change, _valid_to IS NULL AS current, ` +
        `${table === 'subscriptions' ? 'status' : 'NULL::VARCHAR'} AS status, _observed_run_id AS run ` +
        `FROM ${table}_history ORDER BY id, _version`,
    );
  const everything = (table: string) => read(`SELECT * FROM ${table}_history ORDER BY ALL`);
  const lastRun = async () =>
    (
      await read<{ run: string }>(
        "SELECT _run_id AS run FROM _sync_runs WHERE command = 'sync' ORDER BY started_at DESC LIMIT 1",
      )
    )[0]!.run;

  before(async () => {
    ({ sandbox, warehouse, config, close } = await sandboxJob({ scale: 40, pageSize: 20 }));
  });
  after(() => close?.());

  it('a first sync opens one `created` version per record; a repeated sync adds none', async () => {
    await sync();
    for (const table of ['subscriptions', 'locations'] as const) {
      const stored = await read<{ id: number }>(`SELECT id::DOUBLE AS id FROM ${table} ORDER BY id`);
      assert.ok(stored.length > 0, `${table}: the sandbox has records`);
      const history = await versions(table);
      assert.deepEqual(
        history.map((v) => [v.id, v.change, v.current]),
        stored.map((r) => [r.id, 'created', true]),
        table,
      );
    }
    const before = await everything('subscriptions');
    await sync();
    assert.deepEqual(await everything('subscriptions'), before);
    assert.equal((await versions('locations')).length, (await read('SELECT id FROM locations')).length);
  });

  it('changes between syncs add exactly their versions, and closing the previous one; again, none', async () => {
    const before = {
      subscriptions: await versions('subscriptions'),
      locations: await versions('locations'),
    };
    const summary = sandbox.store.mutate({
      createSubscriptions: 1,
      cancelSubscriptions: 1,
      failSubscriptions: 1,
      createLocations: 1,
      removeLocations: 1,
      seed: 3,
    });
    const created = summary.created['subscriptions']!;
    const changed = summary.changed['subscriptions']!.filter((id) => !created.includes(id));
    assert.equal(created.length, 1);
    assert.equal(changed.length, 2, JSON.stringify(summary));
    await sync();
    const run = await lastRun();
    const truth = new Map(
      (sandbox.store.snapshot('subscriptions') as { id: number; status: string }[]).map((s) => [s.id, s]),
    );

    const after = await versions('subscriptions');
    const added = after.filter((v) => v.run === run);
    assert.deepEqual(
      added.map((v) => [v.id, v.change, v.current, v.status]).sort(),
      [
        [created[0]!, 'created', true, truth.get(created[0]!)!.status],
        ...changed.map((id) => [id, 'changed', true, truth.get(id)!.status]),
      ].sort(),
    );
    assert.ok(added.some((v) => v.status === 'canceled'));
    // The versions before are all still there; those of the changed records are now closed.
    const kept = after.filter((v) => v.run !== run);
    assert.deepEqual(
      kept.map((v) => [v.id, v.change, v.current]),
      before.subscriptions.map((v) => [v.id, v.change, !changed.includes(v.id)]),
    );
    // A closed version ends where the next begins.
    const gaps = await read<{ n: number }>(
      'SELECT count(*)::INTEGER AS n FROM subscriptions_history h JOIN subscriptions_history n ' +
        'ON n.id = h.id AND n._valid_from = h._valid_to WHERE h._valid_to IS NOT NULL',
    );
    assert.equal(gaps[0]!.n, changed.length);

    const locations = await versions('locations');
    const removed = summary.removed['locations']!;
    const newLocation = summary.created['locations']!;
    assert.deepEqual(
      locations
        .filter((v) => v.run === run)
        .map((v) => [v.id, v.change])
        .sort(),
      [
        [removed[0]!, 'deleted'],
        [newLocation[0]!, 'created'],
      ].sort(),
    );
    const [deleted] = await read<{ from_ms: number; deleted_ms: number }>(
      `SELECT epoch_ms(h._valid_from)::DOUBLE AS from_ms, epoch_ms(l._deleted_at)::DOUBLE AS deleted_ms ` +
        `FROM locations_history h JOIN locations l USING (_store, id) WHERE h.id = ${removed[0]} AND h._change = 'deleted'`,
    );
    assert.equal(deleted!.from_ms, deleted!.deleted_ms, 'a deleted version begins at the soft delete');
    assert.equal(locations.length, before.locations.length + 2);

    const settled = await everything('subscriptions');
    const settledLocations = await everything('locations');
    await sync();
    assert.deepEqual(await everything('subscriptions'), settled);
    assert.deepEqual(await everything('locations'), settledLocations);
  });

  it("a product's variants, prices and stock keep their versions: changed prices, a product removed, one added", async () => {
    const tables = ['products', 'variants', 'variant_prices', 'variant_stockrecords'] as const;
    const count = async (table: string, where = 'true') =>
      (await read<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM ${table}_history WHERE ${where}`))[0]!.n;
    // Each row of the tables has its created version (the first syncs of this file wrote them).
    for (const table of tables)
      assert.equal(
        await count(table, "_change = 'created'"),
        (await read<{ n: number }>(`SELECT count(*)::INTEGER AS n FROM ${table}`))[0]!.n,
        `${table}: one created version per row`,
      );
    const before = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await everything(t)])));
    const summary = sandbox.store.mutate({
      updateProducts: 2,
      removeProducts: 1,
      createProducts: 1,
      seed: 11,
    });
    const updated = summary.changed['products']!;
    const removed = summary.removed['products']!;
    const created = summary.created['products']!;
    assert.equal(updated.length, 2);
    await sync();
    const run = await lastRun();
    const truth = sandbox.store.snapshot('products') as {
      id: number;
      variants: { id: number; prices: { price: string }[]; stockrecords: unknown[] }[];
    }[];
    const byId = new Map(truth.map((p) => [p.id, p]));
    const added = (table: string) =>
      read<{ product_id: number; change: string; n: number }>(
        `SELECT ${table === 'products' ? 'id' : 'product_id'}::INTEGER AS product_id, _change AS change, count(*)::INTEGER AS n ` +
          `FROM ${table}_history WHERE _observed_run_id = '${run}' GROUP BY ALL ORDER BY ALL`,
      );
    const variantsOf = (id: number) => byId.get(id)!.variants;
    // The edited products changed (their date_updated), and each of their prices changed; their variants too
    // (date_updated); their stock did not.
    const expect = (rows: [number, string, number][]) =>
      rows.filter(([, , n]) => n > 0).sort((a, b) => a[0] - b[0] || a[1].localeCompare(b[1]));
    const beforeRows = (table: string, id: number) =>
      (before[table] as Record<string, unknown>[]).filter(
        (r) => Number(table === 'products' ? r.id : r.product_id) === id && r._valid_to === null,
      ).length;
    assert.deepEqual(
      (await added('products')).map((r) => [r.product_id, r.change, r.n]),
      expect([
        ...updated.map((id): [number, string, number] => [id, 'changed', 1]),
        [removed[0]!, 'deleted', 1],
        [created[0]!, 'created', 1],
      ]),
    );
    assert.deepEqual(
      (await added('variant_prices')).map((r) => [r.product_id, r.change, r.n]),
      expect([
        ...updated.map((id): [number, string, number] => [
          id,
          'changed',
          variantsOf(id).reduce((n, v) => n + v.prices.length, 0),
        ]),
        [removed[0]!, 'deleted', beforeRows('variant_prices', removed[0]!)],
        [created[0]!, 'created', variantsOf(created[0]!).reduce((n, v) => n + v.prices.length, 0)],
      ]),
    );
    assert.deepEqual(
      (await added('variant_stockrecords')).map((r) => [r.product_id, r.change, r.n]),
      expect([
        [removed[0]!, 'deleted', beforeRows('variant_stockrecords', removed[0]!)],
        [created[0]!, 'created', variantsOf(created[0]!).reduce((n, v) => n + v.stockrecords.length, 0)],
      ]),
    );
    // The new price of a changed one is the store's, and its previous version ends where it begins.
    const [price] = await read<{ price: string; previous: string; joined: boolean }>(
      `SELECT h.price::VARCHAR AS price, p.price::VARCHAR AS previous, p._valid_to = h._valid_from AS joined ` +
        `FROM variant_prices_history h JOIN variant_prices_history p ON p.product_id = h.product_id ` +
        `AND p.variant_id = h.variant_id AND p."index" = h."index" AND p._version = h._version - 1 ` +
        `WHERE h._observed_run_id = '${run}' AND h.product_id = ${updated[0]} AND h.variant_id = ${variantsOf(updated[0]!)[0]!.id} AND h."index" = 0`,
    );
    assert.equal(Number(price!.price), Number(variantsOf(updated[0]!)[0]!.prices[0]!.price));
    assert.notEqual(price!.price, price!.previous);
    assert.equal(price!.joined, true);
    // Again: nothing changed, nothing added.
    const settled = Object.fromEntries(await Promise.all(tables.map(async (t) => [t, await everything(t)])));
    await sync();
    for (const table of tables) assert.deepEqual(await everything(table), settled[table], table);
  });

  it('rebuild re-derives the same history from the raw landing', async () => {
    const tables = [
      'subscriptions',
      'locations',
      'products',
      'variants',
      'variant_prices',
      'variant_stockrecords',
    ];
    const before = await Promise.all(tables.map((t) => everything(t)));
    assertExit(await runCli(['rebuild', '--warehouse', warehouse]), 0);
    for (const [i, table] of tables.entries()) assert.deepEqual(await everything(table), before[i], table);
  });
});
