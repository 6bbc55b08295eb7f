import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, it } from 'node:test';
import { CONFIG_SCHEMA_FILE, renderConfigSchema } from '../../schemas/generate.js';
import { STREAM_NAMES } from '../../src/streams.js';

/**
 * schemas/sync.config.schema.json is what editors validate sync.config.json against; it is generated from
 * the zod config schema (src/config.ts), whose stream options come from src/streams.ts. A change to either
 * that was not followed by `npm run schemas` fails here.
 */

interface JsonSchemaObject {
  properties: Record<string, { properties?: Record<string, unknown> }>;
}

describe('the published config JSON Schema', () => {
  it('is the one the config and stream declarations generate', async () => {
    const committed = await readFile(CONFIG_SCHEMA_FILE, 'utf8');
    assert.ok(
      committed === renderConfigSchema(),
      'schemas/sync.config.schema.json differs from what src/config.ts and src/streams.ts generate: run `npm run schemas` and commit the result',
    );
  });

  it('offers options for every declared stream and for documents, at the top level and per store', async () => {
    const schema = JSON.parse(await readFile(CONFIG_SCHEMA_FILE, 'utf8')) as JsonSchemaObject & {
      properties: { stores: { items: JsonSchemaObject } };
    };
    const topLevel = Object.keys(schema.properties['streams']?.properties ?? {});
    const perStore = Object.keys(schema.properties.stores.items.properties['streams']?.properties ?? {});
    // `documents`: ingested documents, whose one option is their schemaContract.
    assert.deepEqual(topLevel, [...STREAM_NAMES, 'documents']);
    assert.deepEqual(perStore, [...STREAM_NAMES, 'documents']);
  });
});
