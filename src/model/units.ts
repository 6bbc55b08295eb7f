import type { TableDef } from './types.js';

/**
 * The columns a unit table's version reads (`unit.version`: a column, or `coalesce(a, b, …)` of columns), in
 * order. The merge compares them (src/load/merge.ts) and normalize rejects a record whole when one of them
 * cannot be read (a unit without a usable version could not be ordered against the stored one). Empty for a
 * table that is not a unit or has no version.
 */
export function unitVersionColumns(def: TableDef): string[] {
  const version = def.unit?.version;
  if (!version) return [];
  const coalesce = /^coalesce\((.*)\)$/i.exec(version);
  return coalesce ? coalesce[1]!.split(',').map((c) => c.trim()) : [version];
}
