import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { emptyStreamState } from '../../src/contracts.js';
import { openWarehouse, type Warehouse } from '../../src/load/index.js';
import { tableRows, tempWarehouse } from './helpers.js';

/**
 * subscriptions.shipping_price is general money: the spec's 2-decimal pattern binds the order-create request
 * field, not the subscription a three-decimal currency (KWD) sends back. Older warehouses are widened.
 */

describe('subscriptions.shipping_price', () => {
  let warehouse: Warehouse;
  let file: string;
  let cleanup: () => Promise<void>;

  before(async () => {
    ({ warehouse, file, cleanup } = await tempWarehouse());
  });
  after(async () => {
    await warehouse.close().catch(() => undefined);
    await cleanup();
  });

  const commit = (id: number, shipping_price: string) =>
    warehouse.commitPage({
      store: 'shop',
      stream: 'subscriptions',
      entity: 'subscription',
      runId: `run-${id}`,
      records: [{ id, currency: 'KWD', total: '12.375', shipping_price }],
      rejections: [],
      state: emptyStreamState(),
    });

  const prices = async () =>
    (await tableRows(warehouse.connection, 'subscriptions')).map((r) => [r.id, r.shipping_price]);

  const columnType = async () =>
    (
      await warehouse.connection.runAndReadAll(
        "SELECT data_type FROM information_schema.columns WHERE table_name = 'subscriptions' AND column_name = 'shipping_price'",
      )
    ).getRows()[0]?.[0];

  it('keeps three decimals exactly', async () => {
    const counts = await commit(1, '4.625');
    assert.equal(counts.rejections, 0);
    assert.equal(await columnType(), 'DECIMAL(18,3)');
    assert.deepEqual(await prices(), [[1, '4.625']]);
  });

  it('an older warehouse with DECIMAL(12,2) is widened when opened, its values kept', async () => {
    await warehouse.connection.run(
      'DELETE FROM subscriptions; ALTER TABLE subscriptions ALTER COLUMN shipping_price SET DATA TYPE DECIMAL(12,2); DELETE FROM _schema',
    );
    await warehouse.connection.run(
      "INSERT INTO subscriptions (_store, id, shipping_price) VALUES ('shop', 2, 4.99)",
    );
    await warehouse.close();
    warehouse = await openWarehouse(file);
    assert.equal(await columnType(), 'DECIMAL(18,3)');
    await commit(3, '0.125');
    assert.deepEqual(await prices(), [
      [2, '4.990'],
      [3, '0.125'],
    ]);
  });
});
