import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';
import type { Warehouse } from '../../src/load/index.js';
import { ingestDocuments, tableRows, tempWarehouse } from './helpers.js';

/**
 * The merge of units decided in JavaScript (src/load/merge.ts) must order versions exactly as DuckDB
 * does, and write exactly the winners' rows: text compared by its UTF-8 bytes (not as JavaScript compares
 * strings), missing versions lowest, and the kept rows' text intact after the losers' rows are taken out.
 */

const order = (number: string, updated: string | null, email: string, skus: string[]) => ({
  number,
  ...(updated === null ? {} : { updated_at: updated }),
  total_incl_tax: '10.00',
  lines: skus.map((sku, i) => ({ id: i + 1, product_id: 7, sku, quantity: 1 })),
  user: { id: 5, email },
});

describe('merging units in the loader', () => {
  let warehouse: Warehouse;
  let dir: string;
  let cleanup: () => Promise<void>;
  beforeEach(async () => {
    ({ warehouse, dir, cleanup } = await tempWarehouse());
  });
  afterEach(() => cleanup());

  const ingest = (name: string, docs: unknown[]) =>
    ingestDocuments(warehouse, dir, name, docs, { workers: 0 });

  const customer = async () => (await tableRows(warehouse.connection, 'customers'))[0]!;

  it('ties of text are ordered by their UTF-8 bytes, as DuckDB orders VARCHAR', async () => {
    // U+FF5E is greater than U+1F600 as JavaScript compares strings (0xFF5E > 0xD83D) and smaller as
    // UTF-8 bytes (EF < F0): the customer seen in order "😀" must win whichever came first.
    const at = '2024-05-01T10:00:00Z';
    await ingest('a.ndjson', [
      order('😀', at, 'emoji@example.com', ['A']),
      order('～', at, 'tilde@example.com', ['B']),
    ]);
    assert.equal((await customer()).seen_in_order, '😀');
    await ingest('b.ndjson', [order('～', at, 'tilde@example.com', ['C'])]);
    assert.equal(
      (await customer()).email,
      'emoji@example.com',
      'a later equal-time sighting from "～" loses',
    );
  });

  it('a document without a version never replaces one with a version; one with a version replaces it', async () => {
    await ingest('a.ndjson', [order('N-1', null, 'none@example.com', ['A'])]);
    await ingest('b.ndjson', [order('N-1', '2024-05-01T10:00:00Z', 'dated@example.com', ['B'])]);
    const [stored] = await tableRows(warehouse.connection, 'orders');
    assert.equal(stored!.updated_at instanceof Date || stored!.updated_at !== null, true);
    await ingest('c.ndjson', [order('N-1', null, 'none-again@example.com', ['C'])]);
    const lines = await tableRows(warehouse.connection, 'order_lines');
    assert.deepEqual(
      lines.map((l) => l.sku),
      ['B'],
      'the undated document after the dated one changed nothing',
    );
  });

  it("within a batch, only the winner's rows are written, their text intact", async () => {
    // The older document comes first and has more lines, with longer text: its rows are taken out.
    await ingest('a.ndjson', [
      order('N-1', '2024-05-01T10:00:00Z', 'old@example.com', ['OLD-LONG-SKU-1', 'OLD-LONG-SKU-2', 'OLD-3']),
      order('N-2', '2024-05-01T10:00:00Z', 'other@example.com', ['OTHER-ÄÖÜ']),
      order('N-1', '2024-05-02T10:00:00Z', 'new@example.com', ['NEW-é', 'NEW-2']),
      order('N-1', '2024-04-30T10:00:00Z', 'older@example.com', ['OLDER']),
    ]);
    const lines = await tableRows(warehouse.connection, 'order_lines');
    assert.deepEqual(lines.map((l) => `${l.order_number}:${l.sku}`).sort(), [
      'N-1:NEW-2',
      'N-1:NEW-é',
      'N-2:OTHER-ÄÖÜ',
    ]);
    const orders = await tableRows(warehouse.connection, 'orders');
    assert.deepEqual(orders.map((o) => `${o.number}:${o.user_email}`).sort(), [
      'N-1:new@example.com',
      'N-2:other@example.com',
    ]);
  });
});
