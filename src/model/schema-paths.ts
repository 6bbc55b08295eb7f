import type { z } from 'zod';

/**
 * Reading a zod (v4) schema the way the normalizer reads a record: one object key at a time. Wrappers
 * (optional, nullable, default, pipe, lazy …) are seen through and every branch of a union or an
 * intersection is followed, so a path resolves when any form the schema allows has it. A free-form value
 * (`unknown`, or a record's values) has every path; an array has none, since the normalizer refuses to
 * read a key of an array.
 */

type Schema = z.core.$ZodType;
type Def = { type: string } & Record<string, unknown>;

const defOf = (schema: Schema): Def => schema._zod.def as unknown as Def;

const WRAPPERS = new Set(['optional', 'nullable', 'default', 'prefault', 'nonoptional', 'catch', 'readonly']);

/** The schemas a value of `schema` can be, wrappers removed and unions spread. */
export function forms(schema: Schema): Schema[] {
  const def = defOf(schema);
  if (WRAPPERS.has(def.type)) return forms(def.innerType as Schema);
  if (def.type === 'pipe') return forms(def.in as Schema);
  if (def.type === 'lazy') return forms((def.getter as () => Schema)());
  if (def.type === 'union') return (def.options as Schema[]).flatMap(forms);
  if (def.type === 'intersection') return [...forms(def.left as Schema), ...forms(def.right as Schema)];
  return [schema];
}

const isFree = (schema: Schema) => ['unknown', 'any'].includes(defOf(schema).type);

/** Schemas of field `key` of a value of `schema` (empty when no form of it has the field). */
export function fieldOf(schemas: readonly Schema[], key: string): Schema[] {
  const out: Schema[] = [];
  for (const form of schemas.flatMap(forms)) {
    const def = defOf(form);
    if (isFree(form)) out.push(form);
    else if (def.type === 'record') out.push(def.valueType as Schema);
    else if (def.type === 'object') {
      const field = (def.shape as Record<string, Schema>)[key];
      if (field !== undefined) out.push(field);
    }
  }
  return out;
}

/** Schemas at a dotted path below `schemas` (empty when it names no field). */
export const pathOf = (schemas: readonly Schema[], path: string): Schema[] =>
  path.split('.').reduce<Schema[]>((at, key) => (at.length ? fieldOf(at, key) : at), [...schemas]);

/** The element schemas of the arrays among `schemas` (a free-form value may be an array of anything). */
export const elementsOf = (schemas: readonly Schema[]): Schema[] =>
  schemas
    .flatMap(forms)
    .flatMap((form) =>
      isFree(form) ? [form] : defOf(form).type === 'array' ? [defOf(form).element as Schema] : [],
    );

/** The object forms among `schemas` (objects, records, free-form values). */
export const objectsOf = (schemas: readonly Schema[]): Schema[] =>
  schemas.flatMap(forms).filter((form) => isFree(form) || ['object', 'record'].includes(defOf(form).type));
