// Worker threads do not inherit the main thread's TypeScript loader: register tsx here, then load the
// worker's TypeScript entry (given by the main thread, resolved next to this file).
import { workerData } from 'node:worker_threads';
import { register } from 'tsx/esm/api';

register();
await import(workerData.entry);
