// First, as the command does: DuckDB's allocator reads its settings when DuckDB is loaded.
import '../src/load/allocator.js';
import { createReadStream } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { exportParquet } from '../pipelines/export.js';
import { ingestPaths } from '../pipelines/ingest.js';
import { rebuildWarehouse } from '../pipelines/rebuild.js';
import { LineSplitter } from '../src/ingest/splitters.js';
import { openWarehouse, type Warehouse } from '../src/load/index.js';
import { silentLogger } from '../src/log.js';
import { dataTables, ident } from '../src/model/index.js';
import { UNKNOWN_FIELDS } from './warehouse-data.js';

/**
 * One measured step of the warehouse benchmarks, run in its own process so that its peak RSS (VmHWM) is
 * its own. Prints one JSON line: the step's wall time and what it did.
 *   bound <dir>                  read + JSON.parse every document, nothing else
 *   ingest <dir> <warehouse>     store-sync ingest of the folder
 *   rebuild <warehouse>          store-sync rebuild
 *   export <warehouse> <out>     store-sync export
 *   copy <warehouse> <out>       plain COPY of the largest table to one Parquet file
 *   extra <warehouse>            rows whose `_extra` holds the unknown field of the `unknown-fields` variant, by table
 */

async function peakRssMb(): Promise<number> {
  const status = await readFile('/proc/self/status', 'utf8').catch(() => '');
  const kb = /VmHWM:\s+(\d+)/.exec(status)?.[1];
  return kb ? Number(kb) / 1024 : process.memoryUsage().rss / 2 ** 20;
}

async function bound(dir: string) {
  let documents = 0;
  for (const name of (await readdir(dir)).sort()) {
    const splitter = new LineSplitter();
    for await (const chunk of createReadStream(path.join(dir, name), { highWaterMark: 1 << 20 })) {
      for (const piece of splitter.push(chunk as Buffer)) {
        JSON.parse(piece.text);
        documents++;
      }
    }
    for (const piece of splitter.finish()) {
      JSON.parse(piece.text);
      documents++;
    }
  }
  return { documents };
}

/** The data table with the most rows (the copy step's subject). */
async function largestTable(warehouse: Warehouse): Promise<string> {
  let largest = { table: '', rows: -1 };
  for (const { name } of dataTables()) {
    const rows = await warehouse.countRows(name);
    if (rows > largest.rows) largest = { table: name, rows };
  }
  return largest.table;
}

// As bin/store-sync.js runs the CLI, so that the step holds what the command would.
process.setSourceMapsEnabled(true);
const [step, a, b] = process.argv.slice(2) as [string, string, string];
const memoryLimit = process.env.BENCH_DUCKDB_MEMORY;
const started = performance.now();
let result: Record<string, unknown>;
if (step === 'bound') {
  result = await bound(a);
} else {
  const warehouse = await openWarehouse(step === 'ingest' ? b : a, memoryLimit ? { memoryLimit } : {});
  const t0 = performance.now();
  if (step === 'ingest') {
    const summary = await ingestPaths(warehouse, [a], {
      store: 'bench',
      runId: 'bench',
      logger: silentLogger,
    });
    result = { documents: summary.documents, rows: summary.rows, rejections: summary.rejections };
  } else if (step === 'rebuild') {
    const summary = await rebuildWarehouse(warehouse, { logger: silentLogger });
    result = { rows: summary.rows, records: summary.records };
  } else if (step === 'extra') {
    result = {};
    for (const [table, field] of Object.entries(UNKNOWN_FIELDS)) {
      const { rows } = await warehouse.selectJson(
        `SELECT count(*) FROM ${ident(table)} WHERE _extra->>'${field}' IS NOT NULL`,
      );
      result[table] = Number(rows[0]?.[0] ?? 0);
    }
  } else if (step === 'export') {
    const summary = await exportParquet(warehouse, b);
    result = { tables: summary.tables.length, rows: summary.tables.reduce((n, t) => n + t.rows, 0) };
  } else {
    const table = await largestTable(warehouse);
    const rows = await warehouse.copyToParquet(
      `SELECT * FROM ${ident(table)}`,
      path.join(b, `${table}.parquet`),
    );
    result = { table, rows };
  }
  // Closing checkpoints what the load left in the WAL: part of the load's cost, so it is measured.
  await warehouse.close();
  result.work = (performance.now() - t0) / 1000;
}
process.stdout.write(
  `${JSON.stringify({ ...result, seconds: (performance.now() - started) / 1000, peakRssMb: await peakRssMb() })}\n`,
);
