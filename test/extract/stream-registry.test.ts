import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { OPERATIONS } from '../../schemas/index.js';
import { STREAMS as RUNNABLE } from '../../src/extract/index.js';
import { plans } from '../../src/model/index.js';
import { planResources } from '../../src/model/resources.js';
import { STREAM_NAMES, STREAMS } from '../../src/streams.js';
import { runCli } from '../cli/helpers.js';

/** Each stream is declared once (src/streams.ts); what lists streams elsewhere is derived from it. */

describe('the stream declarations', () => {
  it('are the runnable streams, in the same order, with what each declares', () => {
    assert.deepEqual(Object.keys(RUNNABLE), [...STREAM_NAMES]);
    for (const declared of STREAMS) {
      const stream = RUNNABLE[declared.name];
      assert.equal(stream.entity, declared.entity, declared.name);
      assert.equal(stream.table, declared.table, declared.name);
      assert.equal(stream.operation, OPERATIONS[declared.operation], declared.name);
      if (declared.strategy === 'full_scan') assert.equal(stream.softDeletes, true, declared.name);
    }
  });

  it('name as main table the root of their entity plan', () => {
    for (const declared of STREAMS) assert.equal(declared.table, plans[declared.entity].table, declared.name);
  });

  it("give their entity's plan the record schema of their operation's items, named as schemas/ exports it", () => {
    for (const declared of STREAMS) {
      const response = OPERATIONS[declared.operation].response;
      const schemas = planResources[declared.entity] ?? [];
      assert.deepEqual(
        schemas.map(({ shape, schema }) => ({ shape, schema })),
        [{ shape: null, schema: response }],
        declared.name,
      );
      assert.ok(
        schemas.every(({ name }) => /^[A-Z]\w+$/.test(name)),
        `${declared.name}: ${schemas[0]?.name}`,
      );
    }
    assert.deepEqual(
      planResources.product?.map(({ name }) => name),
      ['Product'],
    );
  });

  it('are the streams the sync and backfill help lists', async () => {
    for (const command of ['sync', 'backfill']) {
      const help = await runCli([command, '--help'], { withToken: false });
      assert.equal(help.code, 0, help.stderr);
      assert.match(help.stdout.replace(/\s+/g, ' '), new RegExp(`streams: ${STREAM_NAMES.join(', ')}`));
    }
  });
});
