import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Sandbox } from '../../src/sandbox/index.js';
import { assertExit, readWarehouse, runCli, sandboxJob } from './helpers.js';

/**
 * Issue 27: a backfill of a range fills `subscriptions_history` for that range without rewriting later
 * versions. The nightly job reads subscriptions created from its `startDate` on; a backfill of the days before
 * it brings the older ones, each with its `created` version, and leaves every version the nightly runs wrote
 * (a cancellation among them) as it was.
 */

interface Version {
  id: number;
  version: number;
  change: string;
  status: string;
  valid_from: string;
  valid_to: string | null;
  run: string;
}

describe('store-sync backfill: history for the range, later versions untouched', () => {
  let sandbox: Sandbox;
  let close: () => Promise<void>;
  let warehouse: string;
  let config: string;

  const versions = () =>
    readWarehouse<Version>(
      warehouse,
      `SELECT id::INTEGER AS id, _version::INTEGER AS version, _change AS change, status,
              _valid_from::VARCHAR AS valid_from, _valid_to::VARCHAR AS valid_to, _observed_run_id AS run
       FROM subscriptions_history ORDER BY id, _version`,
    );

  before(async () => {
    // The nightly job starts at the median creation day: half the store is before it.
    const startDate = (store: Sandbox) => {
      const created = (store.store.snapshot('subscriptions') as unknown as { date_created: string }[])
        .map((s) => s.date_created.slice(0, 10))
        .sort();
      return created[created.length >> 1]!;
    };
    ({ sandbox, warehouse, config, close } = await sandboxJob({ scale: 40, pageSize: 20 }, (store) => ({
      streams: { subscriptions: { startDate: startDate(store) } },
    })));
  });

  after(() => close?.());

  it('adds the created versions of the range and rewrites none of the nightly runs’', async () => {
    const truth = () =>
      sandbox.store.snapshot('subscriptions') as unknown as {
        id: number;
        status: string;
        date_created: string;
      }[];
    assertExit(await runCli(['sync', '--config', config]), 0);
    const [{ start }] = (await readWarehouse<{ start: string }>(
      warehouse,
      'SELECT min(date_created)::DATE::VARCHAR AS start FROM subscriptions',
    )) as [{ start: string }];
    const older = truth().filter((s) => s.date_created.slice(0, 10) < start);
    const newer = truth().filter((s) => s.date_created.slice(0, 10) >= start);
    assert.ok(older.length > 0 && newer.length > 0, 'the start date splits the store');
    // A cancellation among the nightly job's subscriptions: its second version.
    const summary = sandbox.store.mutate({ cancelSubscriptions: 1, seed: 4 });
    const cancelled = summary.changed['subscriptions']![0]!;
    assert.ok(newer.some((s) => s.id === cancelled) || older.some((s) => s.id === cancelled));
    assertExit(await runCli(['sync', '--full-refresh', '--config', config]), 0);
    const nightly = await versions();
    assert.deepEqual(
      [...new Set(nightly.map((v) => v.id))].sort((a, b) => a - b),
      newer.map((s) => s.id).sort((a, b) => a - b),
      'the nightly runs read the subscriptions from the start date only',
    );

    const first = older.map((s) => s.date_created.slice(0, 10)).sort()[0]!;
    const day = new Date(Date.parse(`${start}T00:00:00Z`) - 86_400_000).toISOString().slice(0, 10);
    const backfill = async () =>
      assertExit(
        await runCli([
          'backfill',
          '--config',
          config,
          '--from',
          first,
          '--to',
          day,
          '--streams',
          'subscriptions',
        ]),
        0,
      );
    await backfill();
    const after = await versions();
    const nightlyIds = new Set(nightly.map((v) => v.id));
    // Every version the nightly runs wrote is as it was.
    assert.deepEqual(
      after.filter((v) => nightlyIds.has(v.id)),
      nightly,
    );
    // The range's subscriptions each have their created version, as the store has them now.
    const status = new Map(truth().map((s) => [s.id, s.status]));
    const added = after.filter((v) => !nightlyIds.has(v.id));
    assert.deepEqual(
      added.map((v) => [v.id, v.version, v.change, v.status, v.valid_to]),
      older
        .map((s) => s.id)
        .sort((a, b) => a - b)
        .map((id) => [id, 1, 'created', status.get(id), null]),
    );
    // Again: nothing new.
    await backfill();
    assert.deepEqual(await versions(), after);
  });
});
