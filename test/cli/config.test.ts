import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describe, it } from 'node:test';
import { CONFIG_SCHEMA_FILE, renderConfigSchema } from '../../schemas/generate.js';
import { loadConfig, parseConfig, readToken } from '../../src/config.js';
import { isStoreSyncError } from '../../src/errors.js';
import { findJsonSyntaxError } from '../../src/json-syntax.js';

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
        maxRefreshPerRun: 40,
        refreshAgeFraction: 0.25,
        schemaContract: 'evolve',
      },
    );
    assert.equal(config.stores[0]!.streams.products.fullRefreshDays, 7);
    assert.equal(config.stores[0]!.streams.locations.fullRefreshDays, null);
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

  it('refuses one readCopy.path for several stores that each have their own warehouse file', () => {
    const two = [valid.stores[0], { ...valid.stores[0], name: 'eu' }];
    assert.match(
      configError({ ...valid, warehouseLayout: 'per-store', readCopy: { path: 'r.duckdb' }, stores: two }),
      /readCopy\.path: with warehouseLayout "per-store" each store's read copy is published beside its own warehouse file/,
    );
    // One store, or one warehouse file: one copy, so a path is fine.
    assert.doesNotThrow(() =>
      parseConfig({ ...valid, readCopy: { path: 'r.duckdb' }, stores: two }, 'test', '/tmp'),
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

  it('points at a JSON syntax error by line and column, saying what was expected there', async () => {
    const cases: [string, RegExp][] = [
      [
        '{\n  "warehouse": "w.duckdb",\n  "stores": [],\n}\n',
        /^3:15: a trailing comma: JSON allows no comma after the last property$/,
      ],
      [
        '{\n  "stores": [\n    1,\n  ]\n}',
        /^3:6: a trailing comma: JSON allows no comma after the last item$/,
      ],
      [
        '{\n  "a": 1\n  "b": 2\n}',
        /^3:3: expected ',' or '}' after a property's value, found '"' \(a missing comma\?\)$/,
      ],
      ['{\n  // note\n}', /^2:3: JSON allows no comments$/],
      ["{\n  'a': 1\n}", /^2:3: property names need double quotes/],
      ['{"a": tru}', /^1:7: a word that is not true, false or null/],
      ['{"a": "x\ny"}', /^1:9: a line break inside a string/],
      ['{"a": 1', /^1:8: the file ends inside an object: a closing } is missing$/],
      ['', /^1:1: the file is empty/],
      ['{"a": 1}}', /^1:9: unexpected '}' after the end of the JSON value$/],
      ['{"a": "\\q"}', /^1:8: \\q is not an escape JSON knows/],
    ];
    for (const [text, expected] of cases) {
      assert.throws(() => JSON.parse(text), `${JSON.stringify(text)} is not JSON`);
      const found = findJsonSyntaxError(text);
      assert.ok(found, `an error is found in ${JSON.stringify(text)}`);
      assert.match(`${found.line}:${found.column}: ${found.message}`, expected, JSON.stringify(text));
    }
    for (const good of ['{}', '[]', '{"a": [1, -2.5e3, true, null, "\\u00e9\\n"], "b": {}}', ' 0 ']) {
      assert.doesNotThrow(() => JSON.parse(good));
      assert.equal(findJsonSyntaxError(good), null, good);
    }
    const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-config-'));
    try {
      const file = path.join(dir, 'sync.config.json');
      await writeFile(file, '\uFEFF{\n  "warehouse": "w.duckdb",\n  "stores": [],\n}\n');
      await assert.rejects(loadConfig(file), (error: unknown) => {
        assert.ok(isStoreSyncError(error, 'config_invalid'));
        assert.equal(
          error.message,
          `${file}:3:15: a trailing comma: JSON allows no comma after the last property (the config file is not valid JSON)`,
        );
        return true;
      });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('publishes a current JSON Schema, and the example config validates', async () => {
    assert.equal(await readFile(CONFIG_SCHEMA_FILE, 'utf8'), renderConfigSchema(), 'run npm run schemas');
    const example = await loadConfig(new URL('../../sync.config.json', import.meta.url).pathname);
    assert.equal(example.stores[0]!.tokenEnv, 'STORE_SYNC_TOKEN');
  });
});
