import { readdir, realpath, stat } from 'node:fs/promises';
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

/**
 * Symbolic links are followed, to files and to folders alike (captures are often linked in from where another
 * system writes them); `visited` holds the real paths of the folders read, so a link back up the tree is read
 * once, not forever. A link to nothing is not a file, and is passed over like one that is not a document.
 */
async function walk(folder: string, out: InputFile[], visited: Set<string>): Promise<void> {
  const real = await realpath(folder);
  if (visited.has(real)) return;
  visited.add(real);
  // By name: which of two links to one folder is read (the first) must not depend on the file system.
  const entries = (await readdir(folder, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  for (const entry of entries) {
    const full = path.join(folder, entry.name);
    const info = entry.isSymbolicLink() ? await stat(full).catch(() => null) : entry;
    if (info?.isDirectory()) await walk(full, out, visited);
    else if (info?.isFile() && DOCUMENT_FILE.test(entry.name)) {
      const file = await stat(full);
      out.push({ path: full, size: file.size, mtimeMs: file.mtimeMs });
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
      await walk(absolute, found, new Set());
      found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      out.push(...found);
    } else out.push({ path: absolute, size: info.size, mtimeMs: info.mtimeMs });
  }
  const seen = new Set<string>();
  return out.filter((f) => f.path === '-' || (!seen.has(f.path) && seen.add(f.path)));
}
