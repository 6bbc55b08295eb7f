import {
  METADATA_OBJECTS,
  METADATA_TYPES,
  type MetadataDefinition,
  type MetadataQuery,
} from '../../../schemas/index.js';
import { allOf, lower, oneOf, type Test } from './filters.js';
import { rngFor } from './random.js';
import { HISTORY_MS, iso, wholeSeconds } from './time.js';
import type { ListView } from './types.js';

const KEY_WORDS: Record<string, readonly string[]> = {
  text: ['note', 'gift_message', 'source_detail', 'po_number'],
  integer: ['loyalty_points', 'box_count', 'age_years'],
  decimal: ['weight_kg', 'margin_rate', 'score'],
  rich_text: ['description', 'care_instructions'],
  multi_text: ['allergens', 'labels'],
  file: ['invoice_pdf', 'manual', 'photo'],
  boolean: ['is_vip', 'gift_wrap', 'fragile'],
};

const VALIDATIONS: Record<string, { type: string; value: string }[]> = {
  text: [{ type: 'max_length', value: '255' }],
  integer: [
    { type: 'min', value: '0' },
    { type: 'max', value: '100000' },
  ],
  decimal: [
    { type: 'min', value: '0.00' },
    { type: 'max_precision', value: '3' },
  ],
  rich_text: [{ type: 'max_length', value: '5000' }],
  multi_text: [{ type: 'choices', value: 'nuts,gluten,dairy,soy' }],
  file: [
    { type: 'file_types', value: 'pdf,png,jpg' },
    { type: 'max_size_mb', value: '10' },
  ],
  boolean: [],
};

const title = (key: string) =>
  key
    .split('_')
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join(' ');

/**
 * Metadata definitions: object and type cycle independently (9 objects, 7 types), so any store of 16 or
 * more definitions has every object and every type, and 63 or more has every pair.
 */
export function seedMetadata(seed: number, count: number, anchorMs: number): MetadataDefinition[] {
  const rng = rngFor(seed, 'metadata');
  const used = new Set<string>();
  const out: MetadataDefinition[] = [];
  for (let i = 0; i < count; i++) {
    const object = METADATA_OBJECTS[i % METADATA_OBJECTS.length]!;
    const type = METADATA_TYPES[i % METADATA_TYPES.length]!;
    let key = `${object}_${rng.pick(KEY_WORDS[type]!)}`;
    if (used.has(key)) key = `${key}_${i + 1}`;
    used.add(key);
    const createdMs = wholeSeconds(anchorMs - HISTORY_MS + ((i + rng.next()) / count) * HISTORY_MS * 0.9);
    const updatedMs = rng.chance(0.3)
      ? wholeSeconds(createdMs + rng.next() * (anchorMs - createdMs))
      : createdMs;
    const validations = VALIDATIONS[type]!.map((v) => ({ ...v }));
    if (type === 'text' && rng.chance(0.3)) validations.push({ type: 'regex', value: '^[A-Za-z0-9 -]+$' });
    out.push({
      created_at: iso(createdMs),
      enable_export: rng.chance(0.6),
      enable_filter: rng.chance(0.4),
      id: i + 1,
      key,
      name: title(key.replace(`${object}_`, '')),
      object,
      type,
      updated_at: iso(updatedMs),
      validations,
    });
  }
  return out;
}

/** GET /metadata/ filters: name contains (case-insensitive), key exact, object/type any of, flags equal. */
export function listMetadata(items: MetadataDefinition[], q: MetadataQuery): ListView<MetadataDefinition> {
  const name = q.name ? lower(q.name) : null;
  const test: Test<MetadataDefinition> = allOf<MetadataDefinition>([
    name === null ? null : (d) => lower(d.name ?? '').includes(name),
    q.metadata_key ? (d) => d.key === q.metadata_key : null,
    oneOf(q.object, (d) => d.object),
    oneOf(q.type, (d) => d.type),
    q.enable_export === undefined ? null : (d) => d.enable_export === q.enable_export,
    q.enable_filter === undefined ? null : (d) => d.enable_filter === q.enable_filter,
  ]);
  return { items, matches: test };
}
