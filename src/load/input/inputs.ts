import { readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../../errors.js';

/** What `store-sync ingest` was pointed at, expanded: files as given, folders recursively, '-' for stdin. */

export interface InputFile {
  /** Absolute path, or '-' for stdin. */
  path: string;
  size: number;
  mtimeMs: number;
}

/** Files a folder contributes (explicitly named files are read whatever their name). */
export const DOCUMENT_FILE = /\.(json|ndjson|jsonl)(\.gz)?$/i;

async function walk(folder: string, out: InputFile[]): Promise<void> {
  const entries = await readdir(folder, { withFileTypes: true });
  for (const entry of entries) {
    const full = path.join(folder, entry.name);
    if (entry.isDirectory()) await walk(full, out);
    else if (entry.isFile() && DOCUMENT_FILE.test(entry.name)) {
      const info = await stat(full);
      out.push({ path: full, size: info.size, mtimeMs: info.mtimeMs });
    }
  }
}

/** In a stable order (sorted paths per argument) so that arrival order, and thus newest-wins ties, repeat. */
export async function expandInputs(inputs: string[]): Promise<InputFile[]> {
  if (inputs.length === 0)
    throw new StoreSyncError(ERROR_CODES.USAGE, 'ingest needs at least one file, folder or - (stdin)');
  const out: InputFile[] = [];
  for (const input of inputs) {
    if (input === '-') {
      out.push({ path: '-', size: 0, mtimeMs: 0 });
      continue;
    }
    const absolute = path.resolve(input);
    const info = await stat(absolute).catch(() => null);
    if (!info)
      throw new StoreSyncError(ERROR_CODES.USAGE, `ingest input ${absolute} does not exist`, {
        details: { field: 'inputs' },
      });
    if (info.isDirectory()) {
      const found: InputFile[] = [];
      await walk(absolute, found);
      found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      out.push(...found);
    } else out.push({ path: absolute, size: info.size, mtimeMs: info.mtimeMs });
  }
  const seen = new Set<string>();
  return out.filter((f) => f.path === '-' || (!seen.has(f.path) && seen.add(f.path)));
}
