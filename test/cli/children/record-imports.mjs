import { appendFileSync } from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';
import { isMainThread } from 'node:worker_threads';

/**
 * Loaded with `node --import` (through NODE_OPTIONS) by test/cli/startup.test.ts: appends the URL of every
 * module the command loads, one a line, to the file named by STORE_SYNC_IMPORTS_FILE. Node runs module hooks
 * in a thread of their own: this file registers itself there, and its `load` hook records ES modules as they
 * load. CommonJS modules (what `require` loaded: DuckDB's API) are recorded from the require cache when the
 * command exits.
 */
if (isMainThread) {
  register(import.meta.url);
  const { cache } = createRequire(import.meta.url);
  process.on('exit', () => {
    const required = Object.keys(cache).map((file) => `${pathToFileURL(file).href}\n`);
    appendFileSync(process.env.STORE_SYNC_IMPORTS_FILE, required.join(''));
  });
}

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  appendFileSync(process.env.STORE_SYNC_IMPORTS_FILE, `${url}\n`);
  return loaded;
}
