import { burstOf } from '../../src/extract/pacing.js';

/**
 * What the pacing tests measure a paced run by (test/extract/pacing.test.ts, test/cli/no-probe.test.ts): the
 * scheduling delay the run met, the busiest second of its arrivals, and the documented bound that second keeps.
 */

/**
 * The longest any timer of this process waited past its due time while `run` ran: how late the scheduler
 * (a busy event loop, or a process the OS did not run) delivered timers and sockets. Measured with a timer of
 * its own every 5 ms, since a request's paced send and its arrival at a loopback server are delayed alike.
 */
export async function withSchedulingDelay<T>(run: () => Promise<T>): Promise<{ result: T; lateMs: number }> {
  const periodMs = 5;
  let lateMs = 0;
  let due = performance.now() + periodMs;
  let timer: NodeJS.Timeout;
  const tick = () => {
    const now = performance.now();
    lateMs = Math.max(lateMs, now - due);
    due = now + periodMs;
    timer = setTimeout(tick, periodMs);
  };
  timer = setTimeout(tick, periodMs);
  try {
    const result = await run();
    return { result, lateMs: Math.max(lateMs, performance.now() - due) };
  } finally {
    clearTimeout(timer);
  }
}

/** The most arrivals any window of one second holds. */
export function busiestSecond(arrivals: readonly number[]): number {
  const sorted = [...arrivals].sort((a, b) => a - b);
  let most = 0;
  for (let i = 0, j = 0; i < sorted.length; i++) {
    while (sorted[i]! - sorted[j]! >= 1000) j++;
    most = Math.max(most, i - j + 1);
  }
  return most;
}

/**
 * The documented bound: no second holds more than rate + burst requests. Arrivals delayed by up to `lateMs`
 * bring the sends of 1 s + lateMs into one second of arrivals: lateMs × rate more, rounded up.
 */
export function busiestSecondBound(rate: number, lateMs: number): number {
  return rate + burstOf(rate) + Math.ceil((lateMs * rate) / 1000);
}
