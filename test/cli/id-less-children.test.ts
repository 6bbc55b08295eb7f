import assert from 'node:assert/strict';
import { copyFile, mkdir, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import {
  assertExit,
  assertNoSecretsOrEscapes,
  killChildren,
  REPO_ROOT,
  readWarehouse,
  runCli,
  tempDir,
} from './helpers.js';

/**
 * Documents whose array items carry no `id` (the lines of a storefront checkout event, refund lines,
 * ticket attachments), through `store-sync ingest` over real files: each such item is keyed by its parent's
 * key and its position, as a negative id (-1 = first), instead of its document being rejected; a newer
 * document of the same order with ids replaces those rows, an older one changes nothing. What is truly
 * wrong (an id that is not an integer, an order without its number) is still rejected, naming the field.
 */

const FIXTURES = path.join(REPO_ROOT, 'test', 'fixtures', 'documents', 'id-less');

interface IngestJson {
  files: { path: string; status: string; documents: number }[];
  documents: number;
  rejections: number;
}

describe('store-sync ingest: children without their own id', () => {
  let dir: string;
  let cleanup: () => Promise<void>;
  let warehouse: string;
  const read = <T = Record<string, unknown>>(sql: string) => readWarehouse<T>(warehouse, sql);
  const ingest = async (files: string[], code = 0) => {
    const result = await runCli(['ingest', '--json', ...files, '--warehouse', warehouse]);
    assertExit(result, code);
    return JSON.parse(result.stdout) as IngestJson;
  };
  /** A fixture copied to a path of its own, optionally changed: a new file for the ingest ledger. */
  const variant = async (fixture: string, name: string, change: (doc: Record<string, unknown>) => void) => {
    const doc = JSON.parse(await readFile(path.join(FIXTURES, fixture), 'utf8')) as Record<string, unknown>;
    change(doc);
    const file = path.join(dir, name);
    await writeFile(file, JSON.stringify(doc));
    return file;
  };
  const lineIds = (order: string) =>
    read<{ id: string; product_id: string }>(
      `SELECT id::VARCHAR AS id, product_id::VARCHAR AS product_id FROM order_lines
       WHERE order_number = '${order}' ORDER BY product_id`,
    );

  before(async () => {
    ({ dir, cleanup } = await tempDir());
    warehouse = path.join(dir, 'warehouse.duckdb');
  });

  after(async () => {
    killChildren();
    assertNoSecretsOrEscapes();
    await cleanup?.();
  });

  it('loads orders of both shapes, refunds and a ticket whose items carry no id, keyed by position', async () => {
    const inbox = path.join(dir, 'inbox');
    await mkdir(inbox);
    for (const name of [
      'checkout-order-2024.json',
      'checkout-order-2023.json',
      'refunded-order.json',
      'ticket.json',
    ])
      await copyFile(path.join(FIXTURES, name), path.join(inbox, name));
    const summary = await ingest([inbox]);
    assert.equal(summary.documents, 4);
    assert.equal(summary.rejections, 0);
    assert.ok(summary.files.every((f) => f.status === 'loaded'));

    // A 2024-04-01 checkout order: the first line has no id, the second a null one.
    assert.deepEqual(await lineIds('CK-2024'), [
      { id: '-1', product_id: '401' },
      { id: '-2', product_id: '402' },
    ]);
    assert.deepEqual(
      await read(
        `SELECT line_id::VARCHAR AS line_id, "index"::VARCHAR AS "index", amount::VARCHAR AS amount
         FROM order_line_tax_lines t WHERE order_number = 'CK-2024' ORDER BY t.line_id DESC`,
      ),
      [
        { line_id: '-1', index: '0', amount: '3.190' },
        { line_id: '-2', index: '0', amount: '1.600' },
      ],
      "a tax line of an id-less line is keyed by that line's position",
    );
    assert.deepEqual(
      await read("SELECT id::VARCHAR AS id FROM order_tax_lines WHERE order_number = 'CK-2024'"),
      [{ id: '-1' }],
    );
    assert.deepEqual(
      await read("SELECT id::VARCHAR AS id, type FROM order_transactions WHERE order_number = 'CK-2024'"),
      [{ id: '-1', type: 'sale' }],
    );
    assert.deepEqual(
      await read("SELECT number, api_version FROM orders WHERE number LIKE 'CK-%' ORDER BY 1"),
      [
        { number: 'CK-2023', api_version: '2023-02-10' },
        { number: 'CK-2024', api_version: '2024-04-01' },
      ],
    );

    // A 2023-02-10 line with embedded product and stockrecord, and no id.
    assert.deepEqual(
      await read(
        "SELECT id::VARCHAR AS id, product_id::VARCHAR AS p, stockrecord_id::VARCHAR AS s FROM order_lines WHERE order_number = 'CK-2023'",
      ),
      [{ id: '-1', p: '510', s: '5101' }],
    );

    // Refund lines, adjustments and transactions without ids, under a refund with an id and one without.
    assert.deepEqual(
      await read(
        "SELECT id::VARCHAR AS id, note FROM order_refunds r WHERE order_number = 'RF-2024' ORDER BY r.id",
      ),
      [
        { id: '-2', note: 'goodwill' },
        { id: '701', note: 'one tin dented' },
      ],
    );
    assert.deepEqual(
      await read(
        `SELECT refund_id::VARCHAR AS refund, id::VARCHAR AS id, line_item_id::VARCHAR AS line
         FROM order_refund_lines WHERE order_number = 'RF-2024'`,
      ),
      [{ refund: '701', id: '-1', line: '61' }],
    );
    assert.deepEqual(
      await read(
        `SELECT refund_id::VARCHAR AS refund, id::VARCHAR AS id, type
         FROM order_refund_adjustments WHERE order_number = 'RF-2024' ORDER BY refund_id`,
      ),
      [
        { refund: '-2', id: '-1', type: 'goodwill' },
        { refund: '701', id: '-1', type: 'shipping' },
      ],
    );
    assert.deepEqual(
      await read(
        `SELECT refund_id::VARCHAR AS refund, id::VARCHAR AS id, parent_id::VARCHAR AS parent
         FROM order_refund_transactions WHERE order_number = 'RF-2024'`,
      ),
      [{ refund: '701', id: '-1', parent: '9901' }],
    );

    // Ticket attachments without ids, under a comment with an id and under one without.
    assert.deepEqual(
      await read(
        `SELECT comment_id::VARCHAR AS comment, id::VARCHAR AS id, file_name
         FROM ticket_attachments a WHERE ticket_id = 3301 ORDER BY a.comment_id DESC, a.id DESC`,
      ),
      [
        { comment: '91', id: '-1', file_name: 'a.jpg' },
        { comment: '91', id: '-2', file_name: 'b.jpg' },
        { comment: '-2', id: '-1', file_name: 'label.pdf' },
      ],
    );
    assert.deepEqual(await read('SELECT count(*)::INT AS n FROM _rejected_records'), [{ n: 0 }]);
  });

  it('a newer document of the order with ids replaces the positional rows; an older one changes nothing', async () => {
    const summary = await ingest([path.join(FIXTURES, 'checkout-order-2024-with-ids.json')]);
    assert.equal(summary.rejections, 0);
    assert.deepEqual(await lineIds('CK-2024'), [
      { id: '88001', product_id: '401' },
      { id: '88002', product_id: '402' },
    ]);
    const children = `SELECT
        (SELECT list(line_id ORDER BY line_id)::VARCHAR FROM order_line_tax_lines WHERE order_number = 'CK-2024') AS tax,
        (SELECT list(id)::VARCHAR FROM order_tax_lines WHERE order_number = 'CK-2024') AS order_tax,
        (SELECT list(id)::VARCHAR FROM order_transactions WHERE order_number = 'CK-2024') AS transactions`;
    const withIds = { tax: '[88001, 88002]', order_tax: '[5501]', transactions: '[9901]' };
    assert.deepEqual(await read(children), [withIds]);

    // The older id-less document again, under another path: newest wins, nothing changes.
    const older = await variant('checkout-order-2024.json', 'older-again.json', () => {});
    assert.equal((await ingest([older])).documents, 1);
    assert.deepEqual(await lineIds('CK-2024'), [
      { id: '88001', product_id: '401' },
      { id: '88002', product_id: '402' },
    ]);
    assert.deepEqual(await read(children), [withIds]);
  });

  it('the reverse: a newer id-less document replaces the rows with ids, by the same newest-wins rule', async () => {
    const withIds = await variant('checkout-order-2024-with-ids.json', 'ck-r-ids.json', (doc) => {
      doc.number = 'CK-R';
      doc.updated_at = '2024-06-02T08:00:00Z';
    });
    const idLess = await variant('checkout-order-2024.json', 'ck-r-id-less.json', (doc) => {
      doc.number = 'CK-R';
      doc.updated_at = '2024-06-02T09:00:00Z';
      (doc.lines as unknown[]).pop();
    });
    await ingest([withIds]);
    assert.deepEqual(await lineIds('CK-R'), [
      { id: '88001', product_id: '401' },
      { id: '88002', product_id: '402' },
    ]);
    await ingest([idLess]);
    assert.deepEqual(await lineIds('CK-R'), [{ id: '-1', product_id: '401' }]);
    assert.deepEqual(
      await read("SELECT line_id::VARCHAR AS line_id FROM order_line_tax_lines WHERE order_number = 'CK-R'"),
      [{ line_id: '-1' }],
    );
    // And the older document with ids, read again, does not bring its lines back.
    await ingest([
      await variant('checkout-order-2024-with-ids.json', 'ck-r-ids-again.json', (doc) => {
        doc.number = 'CK-R';
        doc.updated_at = '2024-06-02T08:00:00Z';
      }),
    ]);
    assert.deepEqual(await lineIds('CK-R'), [{ id: '-1', product_id: '401' }]);
  });

  it('an id that is not an integer, and an order without its number, are still rejected naming the field', async () => {
    const order = JSON.parse(await readFile(path.join(FIXTURES, 'checkout-order-2024.json'), 'utf8')) as {
      lines: Record<string, unknown>[];
    } & Record<string, unknown>;
    const badLine = { ...order, number: 'BAD-1', lines: [{ ...order.lines[0], id: 'L-1' }, order.lines[1]] };
    const { number: _, ...noNumber } = order;
    const ticket = JSON.parse(await readFile(path.join(FIXTURES, 'ticket.json'), 'utf8')) as {
      comments: { attachments: Record<string, unknown>[] }[];
    } & Record<string, unknown>;
    ticket.id = 3302;
    ticket.comments[0]!.attachments[1]!.id = 2.5;
    const good = { ...order, number: 'GOOD-1' };
    const file = path.join(dir, 'mixed.ndjson');
    await writeFile(file, [badLine, noNumber, ticket, good].map((d) => JSON.stringify(d)).join('\n'));
    const summary = await ingest([file], 3);
    assert.equal(summary.documents, 4);
    assert.equal(summary.rejections, 3);
    assert.deepEqual(
      await read(
        `SELECT source, key, reason FROM _rejected_records WHERE source LIKE '%mixed.ndjson%' ORDER BY source`,
      ),
      [
        { source: `${file}:1`, key: 'BAD-1', reason: 'lines[0].id: got "L-1", expected an integer' },
        { source: `${file}:2`, key: null, reason: 'number: missing, expected a string' },
        {
          source: `${file}:3`,
          key: '3302',
          reason: 'comments[0].attachments[1].id: got 2.5, expected an integer',
        },
      ],
    );
    assert.deepEqual(
      await read("SELECT number FROM orders WHERE number IN ('BAD-1', 'GOOD-1') ORDER BY 1"),
      [{ number: 'GOOD-1' }],
      'the rejected documents load nothing; the good one beside them loads',
    );
    assert.deepEqual(await lineIds('BAD-1'), []);
    assert.deepEqual(await read('SELECT count(*)::INT AS n FROM tickets WHERE id = 3302'), [{ n: 0 }]);
  });
});
