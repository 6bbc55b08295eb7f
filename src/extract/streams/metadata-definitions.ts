import { fullScanStream } from './full-scan.js';

/** Metadata definitions (spec 2.9, 4.7): a short list, read whole every run. */
export const metadataDefinitionsStream = fullScanStream({
  name: 'metadata_definitions',
  entity: 'metadata_definition',
  operation: 'listMetadata',
});
