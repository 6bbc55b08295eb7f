/**
 * Loaded with `node --import` into a measured process (bench/extract-unlimited.ts): when the process exits it
 * writes its own resource usage (CPU seconds of every thread, DuckDB's included, and peak RSS) as JSON to the
 * file named by BENCH_USAGE_FILE.
 */
import { writeFileSync } from 'node:fs';

const target = process.env.BENCH_USAGE_FILE;
if (target)
  process.on('exit', () => {
    const usage = process.resourceUsage();
    writeFileSync(
      target,
      JSON.stringify({
        cpuSeconds: (usage.userCPUTime + usage.systemCPUTime) / 1e6,
        peakRssMb: usage.maxRSS / 1024,
      }),
    );
  });
