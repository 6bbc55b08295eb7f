import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { API_VERSION_2023, API_VERSION_2024, OPERATIONS, SCOPES } from '../../schemas/index.js';
import { isStoreSyncError } from '../../src/errors.js';
import { parseTokenSpec, type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { ALL_OPERATIONS, assertError, call, callOp, DUMMY_PARAMS, fieldNames } from './http-helpers.js';

/** Auth (spec part 5) and versions (part 9) for every one of the 20 operations, over real HTTP. */

describe('sandbox auth and versions', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await startSandbox({
      rateLimit: 0,
      tokens: [
        'ALL',
        'NONE:tickets:write',
        'FS:fulfillment_service:read,fulfillment_service:write',
        'SPLIT:fulfillment_orders:read,fulfillment_orders:write,locations:read,locations:write',
      ],
    });
  });
  after(() => sandbox.close());

  it('counts 20 operations in the table (19 endpoints plus the 2023-02-10 order create)', () => {
    assert.equal(ALL_OPERATIONS.length, 20);
  });

  for (const op of ALL_OPERATIONS) {
    describe(`${op.method} ${op.path} (${op.id})`, () => {
      it('answers 401 to a missing, a malformed and an unknown bearer token', async () => {
        const missing = await callOp(sandbox, op, DUMMY_PARAMS, { token: null });
        assertError(missing, 401, 'unauthorized');
        assert.match(String(missing.headers['www-authenticate']), /^Bearer/);
        const malformed = await callOp(sandbox, op, DUMMY_PARAMS, {
          token: null,
          headers: { authorization: 'Basic QUxMOg==' },
        });
        assertError(malformed, 401, 'unauthorized');
        const unknown = await callOp(sandbox, op, DUMMY_PARAMS, { token: 'not-a-token' });
        const error = assertError(unknown, 401, 'unauthorized');
        assert.doesNotMatch(error.message, /not-a-token/, 'the presented token is never echoed');
      });

      it('answers 403 naming the required scope to a token without it', async () => {
        const token = op.scopes.includes('tickets:write') ? 'FS' : 'NONE';
        const error = assertError(await callOp(sandbox, op, DUMMY_PARAMS, { token }), 403, 'forbidden');
        for (const scope of op.scopes) assert.ok(error.message.includes(scope), error.message);
      });

      it('answers 400 naming the accepted version when the header is missing or wrong', async () => {
        const accepted = ALL_OPERATIONS.filter((o) => o.method === op.method && o.path === op.path).map(
          (o) => o.version,
        );
        const missing = assertError(
          await callOp(sandbox, op, DUMMY_PARAMS, { token: 'ALL', version: null }),
          400,
          'version_required',
        );
        for (const v of accepted) assert.ok(missing.message.includes(v), missing.message);
        assert.deepEqual(fieldNames(missing), ['X-Platform-API-Version']);
        const other = op.version === API_VERSION_2024 ? API_VERSION_2023 : API_VERSION_2024;
        const wrongValue = accepted.includes(other) ? '2099-01-01' : other;
        const wrong = assertError(
          await callOp(sandbox, op, DUMMY_PARAMS, { token: 'ALL', version: wrongValue }),
          400,
          'version_unsupported',
        );
        for (const v of accepted) assert.ok(wrong.message.includes(v), wrong.message);
      });
    });
  }

  describe('operations listing two scopes accept a token holding either one', () => {
    const twoScoped = ALL_OPERATIONS.filter((op) => op.scopes.length === 2);

    it('covers the five two-scope operations of part 5', () => {
      assert.deepEqual(twoScoped.map((op) => op.id).sort(), [
        'closeFulfillmentOrder',
        'createLocation',
        'fulfillFulfillmentOrder',
        'getFulfillmentOrder',
        'listLocations',
      ]);
    });

    for (const token of ['FS', 'SPLIT']) {
      it(`token ${token} passes auth on each and succeeds where the record exists`, async () => {
        const fo = sandbox.store.snapshot('fulfillment_orders')[0]!;
        for (const op of twoScoped) {
          const result = await callOp(sandbox, op, { id: fo.id }, { token, json: bodyFor(op.id) });
          assert.ok(![401, 403].includes(result.status), `${op.id}: ${result.status} ${result.text}`);
        }
        const list = await callOp(sandbox, OPERATIONS.listLocations, {}, { token });
        assert.equal(list.status, 200);
        const get = await callOp(sandbox, OPERATIONS.getFulfillmentOrder, { id: fo.id }, { token });
        assert.equal(get.status, 200);
        assert.equal(get.body.id, fo.id);
        const created = await callOp(
          sandbox,
          OPERATIONS.createLocation,
          {},
          {
            token,
            json: { address: { country: 'DE', line1: 'Hauptstr. 1', line4: 'Berlin' }, name: `by ${token}` },
          },
        );
        assert.equal(created.status, 201, created.text);
      });
    }
  });

  it('serves the /__sandbox/ routes without any token', async () => {
    const stats = await call(sandbox, 'GET', `${sandbox.origin}/__sandbox/stats`, { token: null });
    assert.equal(stats.status, 200);
    assert.equal(typeof stats.body.requests, 'number');
  });
});

function bodyFor(id: string): unknown {
  if (id === 'createLocation')
    return { address: { country: 'US', line1: '1 Main St', line4: 'Springfield' } };
  return id.startsWith('list') || id.startsWith('get') ? undefined : {};
}

describe('--token parsing', () => {
  it('splits at the FIRST colon, because scopes contain colons', () => {
    assert.deepEqual(parseTokenSpec('T2:catalogue:read,orders:read'), {
      token: 'T2',
      scopes: ['catalogue:read', 'orders:read'],
    });
  });

  it('gives a token without scopes every scope', () => {
    assert.deepEqual(parseTokenSpec('T1'), { token: 'T1', scopes: SCOPES });
  });

  it('refuses unknown scopes and empty tokens as usage errors', () => {
    for (const bad of ['T3:catalogue:reed', 'T3:', ':orders:read', 'has space']) {
      assert.throws(
        () => parseTokenSpec(bad),
        (error) => isStoreSyncError(error, 'usage'),
        bad,
      );
    }
  });

  it('refuses an unknown scope at startup', async () => {
    await assert.rejects(
      startSandbox({ tokens: ['T:orders:read,orders:delete'] }),
      (error) => isStoreSyncError(error, 'usage') && /orders:delete/.test(error.message),
    );
  });
});
