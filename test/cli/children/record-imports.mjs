import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

/**
 * Loaded with `node --import` (through NODE_OPTIONS) by test/cli/startup.test.ts: appends the URL of every
 * module the command loads, one a line, to the file named by STORE_SYNC_IMPORTS_FILE. Node runs module hooks
 * in a thread of their own: this file registers itself there, and its `load` hook does the recording.
 */
if (isMainThread) register(import.meta.url);

export async function load(url, context, nextLoad) {
  const loaded = await nextLoad(url, context);
  appendFileSync(process.env.STORE_SYNC_IMPORTS_FILE, `${url}\n`);
  return loaded;
}
