/**
 * `npm run bench`: runs every benchmark and prints one table (benchmark, measured, bound, ratio, target,
 * pass/fail), then writes bench/results.json. `npm run bench -- ingest export` runs a subset;
 * BENCH_QUICK=1 runs reduced sizes (a smoke check, not a measurement).
 */
import { writeFile } from 'node:fs/promises';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { DuckDBInstance } from '@duckdb/node-api';
import type { Benchmark, BenchResult } from './lib.js';

const BENCHMARKS = [
  'extract-rate-limited',
  'extract-rate-limited-cli',
  'extract-unlimited',
  'incremental',
  'history-cost',
  'ingest',
  'rebuild',
  'export',
  'receive',
  'query-startup',
  'read-copy',
  'parallel-stores',
] as const;

async function duckdbVersion(): Promise<string> {
  const instance = await DuckDBInstance.create(':memory:');
  const connection = await instance.connect();
  const reader = await connection.runAndReadAll('select version()');
  const version = String(reader.getRows()[0]?.[0]);
  connection.closeSync();
  instance.closeSync();
  return version;
}

function format(value: number): string {
  if (!Number.isFinite(value)) return String(value);
  return Math.abs(value) >= 100 ? value.toFixed(0) : value.toPrecision(3);
}

async function main(): Promise<void> {
  const only = process.argv.slice(2).filter((a) => !a.startsWith('-'));
  const unknown = only.filter((name) => !(BENCHMARKS as readonly string[]).includes(name));
  if (unknown.length)
    throw new Error(`unknown benchmark ${unknown.join(', ')}; known: ${BENCHMARKS.join(', ')}`);
  const quick = process.env.BENCH_QUICK === '1';
  const machine = {
    cores: os.cpus().length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    node: process.version,
    duckdb: await duckdbVersion(),
    quick,
  };
  const log = (line: string) => process.stderr.write(`${line}\n`);
  log(
    `machine: ${machine.cores} cores, ${machine.memoryGiB} GiB, ${machine.cpu}, node ${machine.node}, duckdb ${machine.duckdb}${quick ? ' (QUICK sizes)' : ''}`,
  );
  const results: (BenchResult | { name: string; error: string })[] = [];
  for (const name of only.length ? only : BENCHMARKS) {
    log(`\n== ${name}`);
    try {
      const module = (await import(`./${name}.ts`)) as { default: Benchmark };
      results.push(...(await module.default({ quick, log })));
    } catch (error) {
      results.push({ name, error: error instanceof Error ? error.message : String(error) });
      log(`${name} failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
    }
  }
  const header = ['benchmark', 'figure', 'measured', 'bound', 'ratio', 'target', 'result'];
  const rows = results.map((r) =>
    'error' in r
      ? [r.name, 'did not run', '', '', '', '', `ERROR: ${r.error}`]
      : [
          r.name,
          r.figure,
          format(r.measured),
          format(r.bound),
          format(r.ratio),
          r.target,
          r.pass ? 'pass' : 'FAIL',
        ],
  );
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i]!.length)));
  const line = (cells: string[]) =>
    cells
      .map((c, i) => c.padEnd(widths[i]!))
      .join('  ')
      .trimEnd();
  console.log(
    `\nstore-sync benchmarks on ${machine.cores} cores / ${machine.memoryGiB} GiB, node ${machine.node}, DuckDB ${machine.duckdb}`,
  );
  console.log(line(header));
  console.log(widths.map((w) => '-'.repeat(w)).join('  '));
  for (const row of rows) console.log(line(row));
  for (const r of results) {
    if ('extra' in r && r.extra)
      console.log(
        `  ${r.name}: ${Object.entries(r.extra)
          .map(([k, v]) => `${k}=${v}`)
          .join(', ')}`,
      );
  }
  const file = fileURLToPath(new URL('./results.json', import.meta.url));
  await writeFile(file, `${JSON.stringify({ date: new Date().toISOString(), machine, results }, null, 2)}\n`);
  console.log(`\nwrote ${file}`);
  if (results.some((r) => 'error' in r)) process.exitCode = 1;
}

await main();
