import { readdir, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../errors.js';

/** What `store-sync ingest` was pointed at, expanded: files as given, folders recursively, '-' for stdin. */

export interface InputFile {
  /** Absolute path, or '-' for stdin. */
  path: string;
  size: number;
  mtimeMs: number;
  /**
   * Named on the command line and not a regular file: a named pipe, `<(…)`'s /dev/fd/N, a character device.
   * Its size is 0 whatever it holds and it can be read only once, so it is streamed like stdin.
   */
  stream?: boolean;
}

/** Files a folder contributes (explicitly named files are read whatever their name). */
export const DOCUMENT_FILE = /\.(json|ndjson|jsonl)(\.gz)?$/i;

/**
 * A folder's document files, in two passes. The real tree first, without following links, so its files keep
 * the paths earlier runs knew them by (the ledger's key) whatever links point into it; then the links met, in
 * path order, to files and folders alike (captures are often linked in from where another system writes
 * them). `visited` holds the real paths of the folders and files read: one reached twice, or by a link back
 * up the tree, is read once. A link to nothing is not a file, and is passed over like one that is not a
 * document.
 */
async function walkFolder(folder: string, out: InputFile[]): Promise<void> {
  const visited = new Set<string>();
  const links: string[] = [];
  await walk(folder, out, visited, links);
  // Links found while following links are followed in their turn.
  for (let i = 0; i < links.length; i++) {
    const link = links[i]!;
    const info = await stat(link).catch(() => null);
    if (info?.isDirectory()) await walk(link, out, visited, links);
    else if (info?.isFile() && DOCUMENT_FILE.test(link)) await addFile(link, out, visited);
  }
}

/** `real` is the file's real path when known (a file, not a link, in a folder whose real path is known). */
async function addFile(file: string, out: InputFile[], visited: Set<string>, real?: string): Promise<void> {
  const key = `file:${real ?? (await realpath(file))}`;
  if (visited.has(key)) return;
  visited.add(key);
  const info = await stat(file);
  out.push({ path: file, size: info.size, mtimeMs: info.mtimeMs });
}

async function walk(folder: string, out: InputFile[], visited: Set<string>, links: string[]): Promise<void> {
  const real = await realpath(folder);
  if (visited.has(real)) return;
  visited.add(real);
  // By name, so that which of two links to one place is read (the first) does not depend on the file system.
  const entries = (await readdir(folder, { withFileTypes: true })).sort((a, b) =>
    a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
  );
  // A folder's own files are looked at together (a stat each, no realpath: theirs is the folder's and their
  // name), in their order: one after another, a folder of 50,000 files would take 5 s, twice per run.
  let files: Promise<void>[] = [];
  const found: InputFile[][] = [];
  const flush = async () => {
    await Promise.all(files);
    for (const some of found) out.push(...some);
    files = [];
    found.length = 0;
  };
  for (const entry of entries) {
    const full = path.join(folder, entry.name);
    if (entry.isSymbolicLink()) links.push(full);
    else if (entry.isDirectory()) {
      await flush();
      await walk(full, out, visited, links);
    } else if (entry.isFile() && DOCUMENT_FILE.test(entry.name)) {
      const one: InputFile[] = [];
      found.push(one);
      files.push(addFile(full, one, visited, path.join(real, entry.name)));
      if (files.length >= STATS_AT_ONCE) await flush();
    }
  }
  await flush();
}

/** Files of a folder looked at together. */
const STATS_AT_ONCE = 256;

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
      await walkFolder(absolute, found);
      found.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      out.push(...found);
    } else if (info.isFile()) out.push({ path: absolute, size: info.size, mtimeMs: info.mtimeMs });
    else out.push({ path: absolute, size: 0, mtimeMs: info.mtimeMs, stream: true });
  }
  // A file named twice (or reached through two folders) is read once; so is stdin, which cannot be read twice.
  const seen = new Set<string>();
  return out.filter((f) => !seen.has(f.path) && seen.add(f.path));
}
