import { once } from 'node:events';
import { createReadStream, createWriteStream, existsSync, rmSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import {
  type Benchmark,
  type BenchResult,
  benchRounds,
  CLI,
  fromRepo,
  type ProcessRun,
  quantiles,
  ratioResult,
  rowsDiffer,
  runAloneIfMain,
  runCli,
  tableRows,
  timeProcess,
} from './lib.js';
import { TABLES } from './peers/tables.js';
import { UNKNOWN_FIELDS, writeOrderFiles } from './warehouse-data.js';
import { commandNodeFlags, prepare, step } from './warehouse-lib.js';

/**
 * `store-sync ingest` as users run it: the command as a whole child process, started through
 * bin/store-sync.js's `#!` line with the CLI's default settings, on the benchmark's order documents (seed 42,
 * bench/warehouse-data.ts) as one NDJSON file and as a folder of 8 files. In the same interleaved rounds, on
 * the same file and into the same ten tables, its peers (bench/peers/): DuckDB alone (a typed read_ndjson and
 * SQL with UNNEST) and a plain Node script (readline, JSON.parse, Appender rows); and the floor, a read +
 * JSON.parse of the file and nothing else. Each runs as a process under GNU time (bench/lib.ts, runCli and
 * timeProcess): wall from spawn to exit, CPU-seconds (user + system of the process and the children it waited
 * for) and peak RSS (the largest process's; every command here is one process, its threads included).
 *
 * Sizes: BENCH_DOCS (comma-separated, e.g. `200000,1000000`; the default) or `--docs N`; BENCH_QUICK=1 runs
 * 20,000. Rounds: BENCH_ROUNDS (default 3). BENCH_PEERS=duckdb,node,floor,folder picks what runs beside the
 * CLI on one file (default all). Each round prints store-sync's ratio against each; the results give the
 * medians, with min and max.
 *
 * With `--unknown-fields` (or BENCH_UNKNOWN_FIELDS=1) it also runs the measured step of
 * bench/warehouse-child.ts on the `unknown-fields` variant of the documents (three fields the model does not
 * map in each, kept in `_extra`), against that step on the standard documents: a diagnostic of what a
 * store whose every document carries new fields costs. It fails unless `_extra` holds each unknown field of
 * each document.
 */
export const unknownFieldsSelected = (): boolean =>
  process.env.BENCH_UNKNOWN_FIELDS === '1' || process.argv.includes('--unknown-fields');

const COMPILED_BENCH = fromRepo('dist/bench/');

export { TABLES };

export type Measured = ProcessRun;

/** A command under GNU time (the CLI through its `#!` line, a peer through node). */
const measure = (command: string, args: string[]): Promise<Measured> =>
  command === CLI ? runCli(args) : timeProcess(command, args);

const fmt = (q: { min: number; median: number; max: number }, digits = 2) =>
  `${q.median.toFixed(digits)} (${q.min.toFixed(digits)}–${q.max.toFixed(digits)})`;

export function benchSizes(quick: boolean): number[] {
  const flag = process.argv.indexOf('--docs');
  const asked = flag >= 0 ? process.argv[flag + 1] : process.env.BENCH_DOCS;
  if (asked) {
    const sizes = asked.split(',').map(Number);
    if (sizes.some((n) => !Number.isSafeInteger(n) || n < 1))
      throw new Error(`BENCH_DOCS / --docs: expected document counts like 200000,1000000, got ${asked}`);
    return sizes;
  }
  return quick ? [20_000] : [200_000, 1_000_000];
}

type Contender = 'store-sync' | 'store-sync-folder' | 'duckdb' | 'node' | 'floor';

/** The documents of one size: a folder of 8 files and the same documents, in order, as one file. */
async function documents(count: number, log: (line: string) => void) {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'store-sync-bench-ingest-'));
  // 'exit' handlers cannot wait for promises: the removal has to be synchronous.
  process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  log(`  generating ${count.toLocaleString('en')} order documents …`);
  const eight = path.join(dir, 'eight');
  const { paths, bytes } = await writeOrderFiles(eight, count, 8, 42);
  const one = path.join(dir, 'one');
  await mkdir(one);
  const file = path.join(one, 'orders.ndjson');
  const out = createWriteStream(file);
  for (const part of paths)
    for await (const chunk of createReadStream(part, { highWaterMark: 1 << 20 }))
      if (!out.write(chunk)) await once(out, 'drain');
  await new Promise<void>((resolve, reject) =>
    out.end((error?: Error | null) => (error ? reject(error) : resolve())),
  );
  return { dir, eight, one, file, bytes };
}

async function runOne(
  contender: Contender,
  docs: Awaited<ReturnType<typeof documents>>,
  database: string,
): Promise<Measured> {
  await rm(database, { force: true });
  await rm(`${database}.wal`, { force: true });
  switch (contender) {
    case 'store-sync':
      return measure(CLI, ['ingest', docs.file, '--warehouse', database]);
    case 'store-sync-folder':
      return measure(CLI, ['ingest', docs.eight, '--warehouse', database]);
    case 'duckdb':
      return measure(process.execPath, [
        path.join(COMPILED_BENCH, 'peers/duckdb-alone.js'),
        docs.file,
        database,
      ]);
    case 'node':
      return measure(process.execPath, [
        path.join(COMPILED_BENCH, 'peers/node-appender.js'),
        docs.file,
        database,
      ]);
    case 'floor':
      return measure(process.execPath, [
        ...commandNodeFlags(),
        path.join(COMPILED_BENCH, 'warehouse-child.js'),
        'bound',
        docs.one,
      ]);
  }
}

function selectedPeers(): Contender[] {
  const all: Contender[] = ['floor', 'duckdb', 'node', 'store-sync-folder'];
  const asked = process.env.BENCH_PEERS;
  if (!asked) return all;
  const names: Record<string, Contender> = {
    floor: 'floor',
    duckdb: 'duckdb',
    node: 'node',
    folder: 'store-sync-folder',
  };
  return asked.split(',').map((name) => {
    const contender = names[name.trim()];
    if (!contender) throw new Error(`BENCH_PEERS: expected some of floor,duckdb,node,folder, got ${name}`);
    return contender;
  });
}

async function benchSize(count: number, rounds: number, log: (line: string) => void): Promise<BenchResult[]> {
  const docs = await documents(count, log);
  log(
    `  ${(docs.bytes / 2 ** 20).toFixed(0)} MB of NDJSON; ${rounds} rounds, taken in turn; load ${os
      .loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')}`,
  );
  const peers = selectedPeers();
  const order: Contender[] = ['store-sync', ...peers];
  const runs = new Map<Contender, Measured[]>(order.map((c) => [c, []]));
  const ratios = new Map<Contender, number[]>(peers.map((c) => [c, []]));
  let expected: Record<string, number> | undefined;
  for (let round = 1; round <= rounds; round++) {
    // Rotated each round, so that no contender always follows the same one (the page cache, the machine's mood).
    const turn = order.map((_, i) => order[(i + round - 1) % order.length]!);
    const line: string[] = [];
    for (const contender of turn) {
      const database = path.join(docs.dir, `${contender}.duckdb`);
      const measured = await runOne(contender, docs, database);
      runs.get(contender)!.push(measured);
      if (contender !== 'floor') {
        // The same rows in the same ten tables, or the comparison means nothing.
        const rows = await tableRows(database, TABLES);
        expected ??= rows;
        const differs = rowsDiffer(expected, rows, TABLES);
        if (differs) throw new Error(`${contender} loaded other rows than another contender: ${differs}`);
      }
      await rm(database, { force: true });
      line.push(
        `${contender} ${measured.wall.toFixed(1)} s ${measured.cpu.toFixed(1)} CPU-s ${measured.peakRssMb.toFixed(0)} MB`,
      );
    }
    const cli = runs.get('store-sync')!.at(-1)!.wall;
    const against = peers.map((peer) => {
      const ratio = cli / runs.get(peer)!.at(-1)!.wall;
      ratios.get(peer)!.push(ratio);
      return `/${peer} ${ratio.toFixed(2)}`;
    });
    log(`  round ${round}: ${line.join('; ')}`);
    log(`    store-sync ${against.join(', ')}; load ${os.loadavg()[0]!.toFixed(2)}`);
  }
  await rm(docs.dir, { recursive: true, force: true });

  const label = count >= 1e6 ? `${count / 1e6}M` : `${count / 1e3}k`;
  const stats = (c: Contender) => {
    const r = runs.get(c)!;
    return {
      wall: quantiles(r.map((m) => m.wall)),
      cpu: quantiles(r.map((m) => m.cpu)),
      rss: quantiles(r.map((m) => m.peakRssMb)),
    };
  };
  for (const c of order) {
    const s = stats(c);
    log(
      `  ${label} ${c}: wall ${fmt(s.wall, 1)} s, CPU ${fmt(s.cpu, 1)} s, peak ${fmt(s.rss, 0)} MB (median, min–max)`,
    );
  }
  const cli = stats('store-sync');
  const results: BenchResult[] = [];
  const targets: Partial<Record<Contender, { name: string; figure: string; target: string; ratio: number }>> =
    {
      floor: {
        name: 'ingest',
        figure: 'store-sync ingest FILE wall / read + JSON.parse of the file',
        target: '≤ 2.0',
        ratio: 2.0,
      },
      duckdb: {
        name: 'ingest-vs-duckdb',
        figure: 'store-sync ingest FILE wall / DuckDB alone (read_ndjson + SQL)',
        target: '≤ 1.0',
        ratio: 1.0,
      },
      node: {
        name: 'ingest-vs-node',
        figure: 'store-sync ingest FILE wall / Node script (JSON.parse + Appender)',
        target: 'reported',
        ratio: Number.POSITIVE_INFINITY,
      },
      'store-sync-folder': {
        name: 'ingest-folder',
        figure: 'store-sync ingest FILE wall / store-sync ingest FOLDER (8 files) wall',
        target: 'reported',
        ratio: Number.POSITIVE_INFINITY,
      },
    };
  for (const peer of peers) {
    const t = targets[peer]!;
    const q = quantiles(ratios.get(peer)!);
    const s = stats(peer);
    // The ratio is the median of the rounds' ratios (each taken between runs minutes apart), not the ratio of
    // the medians, which may come from different rounds.
    results.push({
      name: `${t.name}-${label}`,
      figure: `${t.figure}, median of ${rounds} rounds' ratios`,
      measured: cli.wall.median,
      bound: s.wall.median,
      ratio: q.median,
      target: t.target,
      pass: q.median <= t.ratio,
      extra: {
        ratioMin: q.min.toFixed(2),
        ratioMax: q.max.toFixed(2),
        cpuRatio: (cli.cpu.median / s.cpu.median).toFixed(2),
        [`${peer}CpuSeconds`]: s.cpu.median.toFixed(1),
        [`${peer}PeakRssMb`]: Math.round(s.rss.median),
      },
    });
  }
  results.push(
    ratioResult(
      {
        name: `ingest-peak-rss-${label}`,
        figure: 'peak RSS of store-sync ingest FILE (MB, largest of the rounds) / 512 MB',
        measured: cli.rss.max,
        bound: 512,
        target: '≤ 1.0',
        extra: { documents: count, megabytes: Math.round(docs.bytes / 2 ** 20) },
      },
      'max',
      1.0,
    ),
    {
      name: `ingest-cpu-${label}`,
      figure: 'CPU-seconds of store-sync ingest FILE per million documents (median)',
      measured: (cli.cpu.median / count) * 1e6,
      bound: 1,
      ratio: (cli.cpu.median / count) * 1e6,
      target: 'reported',
      pass: true,
      extra: {
        wallSeconds: cli.wall.median.toFixed(1),
        cpuSeconds: cli.cpu.median.toFixed(1),
        load: os.loadavg()[0]!.toFixed(2),
      },
    },
  );
  return results;
}

const bench: Benchmark = async ({ quick, log }) => {
  if (!existsSync(path.join(COMPILED_BENCH, 'peers/duckdb-alone.js')))
    throw new Error(`${COMPILED_BENCH}peers/ is missing: run \`npm run build\` first`);
  const rounds = benchRounds(3);
  const results: BenchResult[] = [];
  for (const count of benchSizes(quick)) results.push(...(await benchSize(count, rounds, log)));
  if (unknownFieldsSelected()) results.push(await unknownFields(quick ? 20_000 : 200_000, log));
  return results;
};

/**
 * Fails unless `_extra` held each unknown field of each document: bench/warehouse-data.ts puts one in each
 * order, in its first line and in that line's first tax line, so each of the three tables has exactly as many
 * rows holding its field as there are documents. `kept` is bench/warehouse-child.ts's `extra` step.
 */
export function assertUnknownFieldsKept(kept: Record<string, unknown>, documents: number): void {
  const short = Object.entries(UNKNOWN_FIELDS)
    .filter(([table]) => Number(kept[table]) !== documents)
    .map(([table, field]) => `${table} ${String(kept[table])} rows with _extra.${field}`);
  if (short.length)
    throw new Error(
      `the unknown fields were not each kept in _extra: expected ${documents} rows in each table, found ${short.join(', ')}`,
    );
}

/**
 * The `unknown-fields` variant, through bench/warehouse-child.ts's measured step (a diagnostic): its time
 * against the standard documents', and proof that `_extra` holds each unknown field of each document.
 */
async function unknownFields(documents: number, log: (line: string) => void): Promise<BenchResult> {
  const s = await prepare(documents, log);
  const v = await prepare(documents, log, 'unknown-fields');
  const seconds = v.ingest.work ?? v.ingest.seconds;
  const rows = Number(v.ingest.rows);
  // The same documents but for the unknown fields: the same rows, none rejected.
  if (rows !== Number(s.ingest.rows) || Number(v.ingest.rejections) !== 0)
    throw new Error(
      `the unknown-fields variant loaded ${rows} rows with ${v.ingest.rejections} rejections; the standard documents ${s.ingest.rows} rows`,
    );
  const kept = await step(['extra', v.warehouse]);
  const keptIn = Object.keys(UNKNOWN_FIELDS).map((table) => `${table} ${kept[table]}`);
  log(
    `  unknown-fields variant: ${seconds.toFixed(1)} s against ${(s.ingest.work ?? s.ingest.seconds).toFixed(1)} s; rows with the unknown field in _extra: ${keptIn.join(', ')} (of ${documents.toLocaleString('en')} documents)`,
  );
  assertUnknownFieldsKept(kept, documents);
  return ratioResult(
    {
      name: 'ingest-unknown-fields',
      figure: 'ingest step time, each document with 3 unknown fields / the standard documents',
      measured: seconds,
      bound: s.ingest.work ?? s.ingest.seconds,
      target: 'reported',
      extra: {
        peakRssMb: Math.round(v.ingest.peakRssMb),
        ...Object.fromEntries(
          Object.keys(UNKNOWN_FIELDS).map((table) => [`extra:${table}`, Number(kept[table])]),
        ),
      },
    },
    'max',
    Number.POSITIVE_INFINITY,
  );
}

export default bench;

await runAloneIfMain(import.meta.url, bench);
