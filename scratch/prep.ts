import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { prepareFiles } from '../src/load/input/prepare.js';
const dir = process.argv[2]!;
const files = readdirSync(dir).sort().map((n, index) => {
  const p = path.join(dir, n); const st = statSync(p);
  return { index, path: p, status: 'loaded' as const, entry: { size: st.size, mtimeMs: st.mtimeMs, sha256: null, status: 'partial' as const, byteOffset: 0, line: 0, documents: 0, rejected: 0 } };
});
const t = performance.now(); let batches = 0;
await prepareFiles({ store: 's', runId: 'r', firstSeq: 1, files, batchDocuments: 5000, batchBytes: 32 << 20 }, async () => { batches++; });
console.log(JSON.stringify({ seconds: (performance.now() - t) / 1000, batches }));
