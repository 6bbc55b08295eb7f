import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { it } from 'node:test';
import { renderWarehouseDoc, WAREHOUSE_DOC } from '../../src/model/docs.js';
import { tableDefinitions } from '../../src/model/index.js';

it('docs/warehouse.md is what the table registry renders (run npm run docs:warehouse)', async () => {
  const current = await readFile(WAREHOUSE_DOC, 'utf8');
  assert.ok(current === renderWarehouseDoc(), 'docs/warehouse.md is stale: run `npm run docs:warehouse`');
  for (const table of tableDefinitions)
    assert.ok(current.includes(`### \`${table.name}\``), `${table.name} is documented`);
});
