/** Zod schemas for every resource, request and operation of the Store Administration API. */
export * from './headers.js';
export * from './operations.js';
export * from './orders.js';
export * from './primitives.js';
export * from './requests.js';
export * from './resources.js';
export * from './shared.js';
