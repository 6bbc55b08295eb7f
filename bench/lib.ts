/**
 * The shape every benchmark reports in. A ratio is always measured against a bound taken in the same
 * run on the same machine, never against a constant, because these machines are noisy.
 */
export interface BenchResult {
  /** e.g. "extract-rate-limited" */
  name: string;
  /** What was measured, in words: "wall time / (pages ÷ 4 rps)". */
  figure: string;
  /** The measured value and the bound, in the same unit (seconds, requests …). */
  measured: number;
  bound: number;
  /** measured / bound */
  ratio: number;
  /** Human-readable target, e.g. "≤ 1.10". */
  target: string;
  pass: boolean;
  /** Anything else worth printing: records/s, peak RSS, 429 count … */
  extra?: Record<string, string | number>;
}

/** A benchmark module's default export. `quick` runs a reduced size for smoke checks (BENCH_QUICK=1). */
export type Benchmark = (options: { quick: boolean; log: (line: string) => void }) => Promise<BenchResult[]>;

export function ratioResult(
  base: Omit<BenchResult, 'ratio' | 'pass'>,
  compare: 'max' | 'min' = 'max',
  targetRatio: number,
): BenchResult {
  const ratio = base.measured / base.bound;
  return { ...base, ratio, pass: compare === 'max' ? ratio <= targetRatio : ratio >= targetRatio };
}

/**
 * Lets a benchmark file run on its own (`node --import tsx bench/<name>.ts`, BENCH_QUICK=1 for reduced
 * sizes), printing its results as JSON; imported by bench/run.ts it does nothing.
 */
export async function runAloneIfMain(moduleUrl: string, bench: Benchmark): Promise<void> {
  const { pathToFileURL } = await import('node:url');
  if (moduleUrl !== pathToFileURL(process.argv[1] ?? '').href) return;
  const quick = process.env.BENCH_QUICK === '1';
  console.log(JSON.stringify(await bench({ quick, log: (line) => console.error(line) }), null, 2));
}
