import { fullScanStream } from './full-scan.js';

/** Products with their variants, images, categories, prices and stockrecords (spec 2.7, 4.3). */
export const productsStream = fullScanStream({
  name: 'products',
  entity: 'product',
  operation: 'listProducts',
});
