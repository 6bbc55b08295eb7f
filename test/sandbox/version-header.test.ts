import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Order2023, Order2024 } from '../../schemas/index.js';
import { isStoreSyncError } from '../../src/errors.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { assertError, assertShape, call, fieldNames } from './http-helpers.js';

/**
 * A sandbox started with `versionHeader` reads the API version under that name only, as a deployment that
 * names the header differently does: POST /orders/ answers the 2023-02-10 shape only when it is asked for under
 * that name, and a version sent as X-Platform-API-Version is not seen.
 */

const CUSTOM = 'X-Api-Version';

describe('sandbox versionHeader', () => {
  let custom: Sandbox;
  let standard: Sandbox;

  before(async () => {
    custom = await startSandbox({ seed: 3, scale: 10, rateLimit: 0, versionHeader: CUSTOM });
    standard = await startSandbox({ seed: 3, scale: 10, rateLimit: 0 });
  });
  after(async () => {
    await custom?.close();
    await standard?.close();
  });

  /** A body both shapes accept: the 2024-04-01 create needs a product id, the 2023-02-10 one ignores it. */
  const createOrder = (sandbox: Sandbox, headers: Record<string, string>) => {
    const productId = sandbox.store.snapshot('products')[0]!.id;
    const json = { lines: [{ product_id: productId, quantity: 1 }] };
    return call(sandbox, 'POST', 'orders/', { version: null, headers, json });
  };

  it('picks the order shape from the version under its own header name', async () => {
    assert.equal(custom.versionHeader, CUSTOM);
    const old = assertShape(await createOrder(custom, { 'x-api-version': '2023-02-10' }), 201, Order2023);
    const line = old.lines?.[0] as Record<string, unknown>;
    assert.equal(typeof line.product, 'object', '2023-02-10 lines embed the product');
    assert.equal('total_outstanding' in old, false);
    const current = assertShape(await createOrder(custom, { 'X-Api-Version': '2024-04-01' }), 201, Order2024);
    assert.equal(typeof current.total_outstanding, 'string', 'total_outstanding exists only in 2024-04-01');
  });

  it('does not see a version sent under another name', async () => {
    const unseen = assertError(
      await createOrder(custom, { 'x-platform-api-version': '2023-02-10' }),
      400,
      'version_required',
    );
    assert.match(unseen.message, /^The X-Api-Version header is required; this operation accepts /);
    assert.deepEqual(fieldNames(unseen), [CUSTOM]);
    // Nor does a sandbox with the default name see X-Api-Version.
    assert.equal(standard.versionHeader, 'X-Platform-API-Version');
    const standardUnseen = assertError(
      await createOrder(standard, { 'x-api-version': '2023-02-10' }),
      400,
      'version_required',
    );
    assert.deepEqual(fieldNames(standardUnseen), ['X-Platform-API-Version']);
  });

  it('refuses a name that is not an HTTP header name', async () => {
    await assert.rejects(
      startSandbox({ versionHeader: 'X Api Version' }),
      (error) =>
        isStoreSyncError(error, 'usage') && /version-header must be an HTTP header name/.test(error.message),
    );
  });
});
