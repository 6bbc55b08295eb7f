/**
 * Request counters for API routes, in the shape `GET /__sandbox/stats` answers (docs/sandbox.md, "Test-only
 * routes"). Tests and benchmarks read them to prove, e.g., that an incremental sync costs requests in
 * proportion to change.
 */

export interface SandboxStats {
  requests: number;
  /** By HTTP status sent; a connection reset without an answer counts as "reset", a client gone before the answer as "aborted". */
  byStatus: Record<string, number>;
  /** By `METHOD /path-template/` of the operation (unknown paths count as `METHOD (no route)`). */
  byRoute: Record<string, number>;
}

export class StatsRecorder {
  private requests = 0;
  private byStatus = new Map<string, number>();
  private byRoute = new Map<string, number>();

  /** Counts a request as soon as it is routed, so a stalled or reset one is still seen. */
  begin(route: string): void {
    this.requests++;
    this.byRoute.set(route, (this.byRoute.get(route) ?? 0) + 1);
  }

  /** Counts the outcome once: a status code, "reset" or "aborted". */
  finish(outcome: number | 'reset' | 'aborted'): void {
    const key = String(outcome);
    this.byStatus.set(key, (this.byStatus.get(key) ?? 0) + 1);
  }

  snapshot(): SandboxStats {
    return {
      requests: this.requests,
      byStatus: Object.fromEntries([...this.byStatus].sort(([a], [b]) => a.localeCompare(b))),
      byRoute: Object.fromEntries([...this.byRoute].sort(([a], [b]) => a.localeCompare(b))),
    };
  }

  reset(): void {
    this.requests = 0;
    this.byStatus.clear();
    this.byRoute.clear();
  }
}
