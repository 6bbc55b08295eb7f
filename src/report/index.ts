import { randomBytes } from 'node:crypto';
import { mkdir, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { ERROR_CODES, StoreSyncError } from '../errors.js';
import type { Warehouse } from '../load/warehouse.js';
import { gatherReport, type ReportData, type ReportOptions } from './data.js';
import { renderReport } from './html.js';

/** The HTML report of a warehouse (`store-sync report`, and the demo's last step). */

export { gatherReport, type ReportData, type ReportOptions } from './data.js';
export { renderReport } from './html.js';

/**
 * Gathers the report from `warehouse` and writes it to `file`, whole or not at all: a browser that has the
 * previous report open, or a cron job copying it, never sees half a file.
 */
export async function writeReport(
  warehouse: Warehouse,
  file: string,
  options: ReportOptions,
): Promise<{ file: string; data: ReportData; bytes: number }> {
  const data = await gatherReport(warehouse, options);
  const html = renderReport(data);
  const temporary = path.join(
    path.dirname(file),
    `.${path.basename(file)}.${randomBytes(4).toString('hex')}.tmp`,
  );
  try {
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(temporary, html);
    await rename(temporary, file);
  } catch (error) {
    await rm(temporary, { force: true });
    const { code } = error as NodeJS.ErrnoException;
    throw new StoreSyncError(
      ERROR_CODES.USAGE,
      `cannot write the report to ${file}: ${code === 'EISDIR' ? 'it is a folder' : (code ?? (error as Error).message)}; pass --out with a writable file path`,
      { cause: error },
    );
  }
  return { file, data, bytes: Buffer.byteLength(html) };
}
