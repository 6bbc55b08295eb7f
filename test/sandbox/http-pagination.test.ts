import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { OPERATIONS, type OperationSpec } from '../../schemas/index.js';
import { encodeCursor } from '../../src/sandbox/http/pagination.js';
import { type Sandbox, startSandbox } from '../../src/sandbox/index.js';
import { assertError, type CallOptions, call, callOp } from './http-helpers.js';

/** Cursor pagination over real HTTP: every record exactly once while records are added, previous links, determinism. */

interface Page {
  next: string | null;
  previous: string | null;
  results: { id: number }[];
}

async function getPage(sandbox: Sandbox, op: OperationSpec, url?: string, options: CallOptions = {}) {
  const result = url
    ? await call(sandbox, 'GET', url, { version: op.version, ...options })
    : await callOp(sandbox, op, {}, options);
  assert.equal(result.status, 200, result.text.slice(0, 300));
  return result.body as Page;
}

/** Walks `next` links to the end, running `between(pageIndex)` after each page. */
async function traverse(
  sandbox: Sandbox,
  op: OperationSpec,
  between: (page: number) => Promise<void> = async () => {},
  options: CallOptions = {},
): Promise<Page[]> {
  const pages: Page[] = [];
  let url: string | undefined;
  for (;;) {
    const page = await getPage(sandbox, op, url, options);
    pages.push(page);
    await between(pages.length);
    if (!page.next) return pages;
    assert.ok(pages.length < 2000, 'pagination does not end');
    url = page.next;
  }
}

const ids = (pages: Page[]) => pages.flatMap((p) => p.results.map((r) => r.id));

function assertEachOnce(visited: number[], truth: readonly { id: number }[]) {
  assert.equal(new Set(visited).size, visited.length, 'no record is visited twice');
  assert.deepEqual(
    [...visited].sort((a, b) => a - b),
    truth.map((r) => r.id).sort((a, b) => a - b),
    'every record is visited',
  );
}

describe('sandbox pagination', () => {
  let sandbox: Sandbox;
  before(async () => {
    sandbox = await startSandbox({ seed: 3, pageSize: 7, rateLimit: 0 });
  });
  after(() => sandbox.close());

  it('visits every product exactly once while products are created mid-traversal', async () => {
    const before = sandbox.store.snapshot('products').length;
    const pages = await traverse(sandbox, OPERATIONS.listProducts, async (page) => {
      if (page === 2 || page === 4) {
        const mutated = await call(sandbox, 'POST', `${sandbox.origin}/__sandbox/mutate`, {
          token: null,
          json: { createProducts: 3, seed: page },
        });
        assert.equal(mutated.status, 200, mutated.text);
        assert.equal(mutated.body.created.products.length, 3);
      }
    });
    const truth = sandbox.store.snapshot('products');
    assert.equal(truth.length, before + 6);
    assertEachOnce(ids(pages), truth);
    assert.ok(pages.length > 3, 'the traversal spans several pages');
    for (const page of pages.slice(0, -1)) assert.equal(page.results.length, 7, 'full pages of --page-size');
  });

  it('visits every location exactly once while POST /locations/ adds some mid-traversal', async () => {
    const small = await startSandbox({ seed: 3, pageSize: 2, rateLimit: 0 });
    try {
      const pages = await traverse(small, OPERATIONS.listLocations, async (page) => {
        if (page > 2) return;
        const created = await callOp(
          small,
          OPERATIONS.createLocation,
          {},
          {
            json: {
              address: { country: 'FR', line1: `${page} rue de la Paix`, line4: 'Paris' },
              name: `L${page}`,
            },
          },
        );
        assert.equal(created.status, 201, created.text);
      });
      assertEachOnce(ids(pages), small.store.snapshot('locations'));
    } finally {
      await small.close();
    }
  });

  it('visits every subscription exactly once while subscriptions are created and cancelled', async () => {
    const big = await startSandbox({ seed: 4, pageSize: 100, rateLimit: 0 });
    try {
      const pages = await traverse(big, OPERATIONS.listSubscriptions, async (page) => {
        if (page !== 3) return;
        const plan = { createSubscriptions: 5, cancelSubscriptions: 5, seed: 1 };
        const mutated = await call(big, 'POST', `${big.origin}/__sandbox/mutate`, {
          token: null,
          json: plan,
        });
        assert.equal(mutated.status, 200, mutated.text);
      });
      assertEachOnce(ids(pages), big.store.snapshot('subscriptions'));
    } finally {
      await big.close();
    }
  });

  it('walks back with previous links to the same pages', async () => {
    const forward = await traverse(sandbox, OPERATIONS.listMetadata);
    assert.ok(forward.length >= 3, 'metadata spans at least three pages of 7');
    assert.equal(forward[0]!.previous, null, 'the first page has no previous');
    assert.equal(forward.at(-1)!.next, null, 'the last page has no next');
    let url = forward.at(-1)!.previous;
    for (let i = forward.length - 2; i >= 0; i--) {
      assert.ok(url, `page ${i} is reachable backwards`);
      const page = await getPage(sandbox, OPERATIONS.listMetadata, url);
      assert.deepEqual(
        page.results.map((r) => r.id),
        forward[i]!.results.map((r) => r.id),
      );
      assert.ok(page.next, 'a page reached backwards links forward again');
      url = page.previous;
    }
    assert.equal(url, null, 'walking back ends at the first page');
  });

  it('keeps every query parameter in next and previous links, and the filter on every page', async () => {
    const pages = await traverse(sandbox, OPERATIONS.listProducts, undefined, {
      query: { is_public: 'true', extra: 'kept' },
    });
    for (const page of pages) {
      for (const product of page.results as { is_public?: boolean }[]) assert.equal(product.is_public, true);
      for (const link of [page.next, page.previous]) {
        if (!link) continue;
        const url = new URL(link);
        assert.equal(url.searchParams.get('is_public'), 'true');
        assert.equal(url.searchParams.get('extra'), 'kept');
        assert.ok(url.searchParams.get('cursor'));
      }
    }
    const everyPublic = sandbox.store
      .snapshot('products')
      .filter((p) => (p as { is_public?: boolean }).is_public);
    assertEachOnce(ids(pages), everyPublic);
  });

  it('builds absolute links from the request Host', async () => {
    const port = new URL(sandbox.baseUrl).port;
    const page = await getPage(sandbox, OPERATIONS.listProducts, undefined, {
      headers: { host: `localhost:${port}` },
    });
    assert.ok(page.next?.startsWith(`http://localhost:${port}/api/products/?cursor=`), page.next ?? 'null');
  });

  it('refuses a cursor it did not issue with 400', async () => {
    for (const cursor of ['garbage!', Buffer.from('p=abc').toString('base64url'), 'eA', '']) {
      const result = await callOp(sandbox, OPERATIONS.listProducts, {}, { query: { cursor } });
      if (cursor === '') {
        assert.equal(result.status, 200, 'an empty cursor is the first page');
        continue;
      }
      const error = assertError(result, 400, 'invalid_cursor');
      assert.deepEqual(
        error.fields?.map((f) => f.field),
        ['cursor'],
      );
    }
  });

  it('answers an empty page that links back when the cursor is past the end', async () => {
    const cursor = encodeCursor({ position: 999_999_999, reverse: false });
    const page = await getPage(
      sandbox,
      OPERATIONS.listLocations,
      `${sandbox.baseUrl}locations/?cursor=${cursor}`,
    );
    assert.deepEqual(page.results, []);
    assert.equal(page.next, null);
    assert.ok(page.previous, 'an empty page past the end links back');
    const back = await getPage(sandbox, OPERATIONS.listLocations, page.previous);
    assert.ok(back.results.length > 0, 'and the page before it holds the last locations');
  });
});

describe('sandbox determinism', () => {
  let one: Sandbox;
  let two: Sandbox;
  let other: Sandbox;
  before(async () => {
    [one, two, other] = await Promise.all([
      startSandbox({ seed: 11, rateLimit: 0 }),
      startSandbox({ seed: 11, rateLimit: 0 }),
      startSandbox({ seed: 12, rateLimit: 0 }),
    ]);
  });
  after(() => Promise.all([one.close(), two.close(), other.close()]));

  const lists = [
    OPERATIONS.listProducts,
    OPERATIONS.listSubscriptions,
    OPERATIONS.listAssignedFulfillmentOrders,
    OPERATIONS.listLocations,
    OPERATIONS.listMetadata,
  ];

  it('gives byte-identical results on the first two pages of every list for the same seed', async () => {
    for (const op of lists) {
      let urlOne: string | undefined;
      let urlTwo: string | undefined;
      for (let page = 0; page < 2; page++) {
        const a = urlOne ? await call(one, 'GET', urlOne, { version: op.version }) : await callOp(one, op);
        const b = urlTwo ? await call(two, 'GET', urlTwo, { version: op.version }) : await callOp(two, op);
        assert.equal(a.status, 200);
        const resultsText = (text: string) => text.slice(text.indexOf('"results":'));
        assert.equal(resultsText(a.text), resultsText(b.text), `${op.id} page ${page}`);
        assert.ok(a.body.results.length > 0, `${op.id} has data`);
        if (!a.body.next) break;
        urlOne = a.body.next;
        urlTwo = b.body.next;
      }
    }
  });

  it('gives different data for a different seed', async () => {
    const a = await callOp(one, OPERATIONS.listSubscriptions);
    const b = await callOp(other, OPERATIONS.listSubscriptions);
    assert.notEqual(JSON.stringify(a.body.results), JSON.stringify(b.body.results));
  });
});
