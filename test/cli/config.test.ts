import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { CONFIG_SCHEMA_FILE, renderConfigSchema } from '../../schemas/generate.js';
import { loadConfig, parseConfig, readToken } from '../../src/config.js';
import { isStoreSyncError } from '../../src/errors.js';

const valid = {
  warehouse: 'data/w.duckdb',
  stores: [{ name: 'main', baseUrl: 'https://shop.example.com/api', tokenEnv: 'SHOP_TOKEN' }],
};

function configError(raw: unknown): string {
  try {
    parseConfig(raw, 'sync.config.json', '/srv');
  } catch (error) {
    assert.ok(isStoreSyncError(error, 'config_invalid'), String(error));
    return error.message;
  }
  assert.fail('expected the config to be refused');
}

describe('sync.config.json', () => {
  it('fills defaults, resolves paths and merges stream options (store over top level over defaults)', () => {
    const config = parseConfig(
      {
        ...valid,
        streams: { subscriptions: { lookbackDays: 5 } },
        stores: [{ ...valid.stores[0], streams: { subscriptions: { concurrency: 4 } } }],
      },
      'x',
      '/srv',
    );
    assert.equal(config.warehouse, '/srv/data/w.duckdb');
    assert.equal(config.stores[0]!.baseUrl, 'https://shop.example.com/api/');
    assert.equal(config.stores[0]!.rateLimit, 4);
    assert.deepEqual(
      { ...config.stores[0]!.streams.subscriptions },
      {
        enabled: true,
        startDate: null,
        lookbackDays: 5,
        windowDays: 30,
        fullRefreshDays: 7,
        concurrency: 4,
        maxRefreshPerRun: 200,
      },
    );
    assert.equal(config.stores[0]!.streams.products.fullRefreshDays, null);
  });

  it('names the field and what was expected', () => {
    assert.match(
      configError({ ...valid, stores: [{ ...valid.stores[0], baseUrl: 'shop' }] }),
      /stores\[0\]\.baseUrl: expected an absolute URL/,
    );
    assert.match(configError({ ...valid, rateLimit: 'fast' }), /rateLimit: .*number/);
    assert.match(configError({ ...valid, stores: [] }), /stores: expected at least one store/);
    assert.match(configError({ ...valid, streams: { orders: {} } }), /streams: .*orders/);
    assert.match(
      configError({ ...valid, stores: [{ ...valid.stores[0], streams: { products: { windowDays: 0 } } }] }),
      /stores\[0\]\.streams\.products\.windowDays/,
    );
    assert.match(configError({ stores: valid.stores }), /warehouse: /);
  });

  it('refuses a literal token and a token pasted where the variable name goes', () => {
    assert.match(
      configError({ ...valid, stores: [{ ...valid.stores[0], token: 'secret' }] }),
      /literal token.*tokenEnv/,
    );
    assert.match(
      configError({ ...valid, stores: [{ ...valid.stores[0], tokenEnv: 'shpat_12-34' }] }),
      /tokenEnv: expected the NAME of an environment variable/,
    );
  });

  it('refuses duplicate store names', () => {
    assert.match(
      configError({ ...valid, stores: [valid.stores[0], valid.stores[0]] }),
      /two stores are named "main"/,
    );
  });

  it('explains a missing file, bad JSON and a missing token variable', async () => {
    await assert.rejects(loadConfig('/nonexistent/sync.config.json'), /does not exist/);
    assert.throws(
      () => readToken({ name: 'main', tokenEnv: 'NOPE_TOKEN' }, {}),
      (error) => isStoreSyncError(error, 'token_missing') && /NOPE_TOKEN/.test(error.message),
    );
    assert.equal(readToken({ name: 'main', tokenEnv: 'T' }, { T: 'abc' }), 'abc');
  });

  it('publishes a current JSON Schema, and the example config validates', async () => {
    assert.equal(await readFile(CONFIG_SCHEMA_FILE, 'utf8'), renderConfigSchema(), 'run npm run schemas');
    const example = await loadConfig(new URL('../../sync.config.json', import.meta.url).pathname);
    assert.equal(example.stores[0]!.tokenEnv, 'STORE_SYNC_TOKEN');
  });
});
