import { fullScanStream } from './full-scan.js';

/** Fulfillment locations (spec 2.1, 4.6): a short list, read whole every run. */
export const locationsStream = fullScanStream({
  name: 'locations',
  entity: 'location',
  operation: 'listLocations',
});
