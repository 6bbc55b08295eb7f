import { ingestPaths } from '../../../pipelines/ingest.js';
import type { StreamState } from '../../../src/contracts.js';
import { openWarehouse } from '../../../src/load/index.js';
import { silentLogger } from '../../../src/log.js';

/**
 * Test helper for the SIGKILL resume test: two full scans of products (the second misses every seventh
 * product) committed page by page with the stream state, then an ingest of a folder in small batches.
 * Every step resumes from what the warehouse says was committed, as the real runner and ingest do.
 */

const [file, docs] = process.argv.slice(2) as [string, string];
const PASSES = [
  Array.from({ length: 100 }, (_, i) => i + 1),
  Array.from({ length: 100 }, (_, i) => i + 1).filter((id) => id % 7 !== 0),
];
const PAGE = 5;
const product = (id: number) => ({
  id,
  title: `Product ${id}`,
  date_updated: '2024-01-01T00:00:00Z',
  variants: [
    { id: id * 10, sku: `S-${id}`, unit_cost: `${id}.25`, prices: [{ currency: 'EUR', price: `${id}.99` }] },
  ],
});

const warehouse = await openWarehouse(file);
process.stdout.write('started\n');
let state = await warehouse.readState('shop', 'products');
let passNo = Number(state.extra.passNo ?? 0);
while (passNo < PASSES.length) {
  await new Promise((resolve) => setTimeout(resolve, 2));
  const pass = state.pass ?? {
    id: `pass-${passNo + 1}`,
    mode: 'full_refresh' as const,
    startedAt: new Date().toISOString(),
    slices: {},
  };
  const ids = PASSES[passNo]!;
  const pages = Math.ceil(ids.length / PAGE);
  for (let page = state.pass ? Number(state.extra.page ?? 0) : 0; page < pages; page++) {
    const last = page === pages - 1;
    const next: StreamState = last
      ? { watermark: null, lastFullScanAt: pass.startedAt, pass: null, extra: { passNo: passNo + 1 } }
      : { watermark: null, lastFullScanAt: state.lastFullScanAt, pass, extra: { passNo, page: page + 1 } };
    await warehouse.commitPage({
      store: 'shop',
      stream: 'products',
      entity: 'product',
      runId: `child-${process.pid}`,
      records: ids.slice(page * PAGE, (page + 1) * PAGE).map(product),
      rejections: [],
      state: next,
      ...(last ? { completedFullScan: { passStartedAt: pass.startedAt } } : {}),
    });
    state = next;
  }
  passNo++;
}
await ingestPaths(warehouse, [docs], {
  store: 'shop',
  runId: `child-${process.pid}`,
  logger: silentLogger,
  batchDocuments: 20,
  commitDocuments: 40,
});
await warehouse.close();
process.stdout.write('done\n');
