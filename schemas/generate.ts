/** Writes schemas/sync.config.schema.json from the zod config schema (`npm run schemas`). */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { configJsonSchema } from '../src/config.js';

export const CONFIG_SCHEMA_FILE = fileURLToPath(new URL('./sync.config.schema.json', import.meta.url));

export function renderConfigSchema(): string {
  const schema = configJsonSchema() as Record<string, unknown>;
  return `${JSON.stringify({ ...schema, title: 'store-sync configuration (sync.config.json)' }, null, 2)}\n`;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  await writeFile(CONFIG_SCHEMA_FILE, renderConfigSchema());
  console.log(`wrote ${CONFIG_SCHEMA_FILE}`);
}
